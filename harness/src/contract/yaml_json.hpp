// YAML → JSON for `params`: plain scalars become integers, numbers, booleans
// or null when they read as such; quoted scalars stay strings.
#pragma once
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

namespace popper {
nlohmann::json yaml_to_json(const YAML::Node& node, int max_depth);
}
