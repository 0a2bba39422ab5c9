#include "common/text.hpp"

#include <cctype>

namespace popper {

std::vector<std::string> split_nonempty(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch != sep) {
      cur.push_back(ch);
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

std::string slug(std::string_view s, std::string_view keep) {
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c)) out.push_back(static_cast<char>(std::tolower(c)));
    else if (keep.find(ch) != std::string_view::npos) out.push_back(ch);
    else if (!out.empty() && out.back() != '-') out.push_back('-');
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "unknown" : out;
}

std::uint32_t fnv1a(std::string_view s) {
  std::uint32_t h = 2166136261u;
  for (char ch : s) {
    h ^= static_cast<unsigned char>(ch);
    h *= 16777619u;
  }
  return h;
}

std::string regex_escape(std::string_view s) {
  static constexpr std::string_view kMeta = ".^$|()[]{}*+?\\";
  std::string out;
  for (char ch : s) {
    if (kMeta.find(ch) != std::string_view::npos) out.push_back('\\');
    out.push_back(ch);
  }
  return out;
}

std::string markup_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += "&#10;"; break;
      case '\t': out += "&#9;"; break;
      default: out += static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f ? '?' : ch;
    }
  }
  return out;
}

}  // namespace popper
