// The non-empty fields of s between separators: "a;;b;" -> {"a", "b"}. For
// lists where an empty field means nothing (declines, git's line and NUL
// output); the bench CSV reader keeps empty fields and has its own.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace popper {

inline std::vector<std::string> split_nonempty(const std::string& s, char sep) {
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

}  // namespace popper
