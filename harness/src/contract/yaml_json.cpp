#include "contract/yaml_json.hpp"

#include <charconv>
#include <string>

namespace popper {

namespace {
nlohmann::json scalar_to_json(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted: always a string
  if (s == "true") return true;
  if (s == "false") return false;
  if (s == "~" || s == "null" || s.empty()) return nullptr;
  std::int64_t i = 0;
  if (auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i); ec == std::errc() && p == s.data() + s.size())
    return i;
  try {
    std::size_t used = 0;
    const double d = std::stod(s, &used);
    if (used == s.size()) return d;
  } catch (...) {
  }
  return s;
}
}  // namespace

nlohmann::json yaml_to_json(const YAML::Node& node, int max_depth) {
  if (max_depth <= 0) return nullptr;
  switch (node.Type()) {
    case YAML::NodeType::Scalar: return scalar_to_json(node);
    case YAML::NodeType::Sequence: {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& e : node) arr.push_back(yaml_to_json(e, max_depth - 1));
      return arr;
    }
    case YAML::NodeType::Map: {
      nlohmann::json obj = nlohmann::json::object();
      for (auto it = node.begin(); it != node.end(); ++it)
        if (it->first.IsScalar()) obj[it->first.Scalar()] = yaml_to_json(it->second, max_depth - 1);
      return obj;
    }
    default: return nullptr;
  }
}

}  // namespace popper
