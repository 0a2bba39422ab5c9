// The contract schema as data: every key, its type and whether it is
// required. contracts/SCHEMA.md documents the same table for people.
#pragma once
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "popper/diagnostics.hpp"

namespace popper::schema {

enum class Kind {
  String,          // a scalar
  Number,          // a plain scalar that parses as a double
  Integer,         // a plain scalar that parses as an integer
  Bool,            // true / false
  Enum,            // a scalar from `values`
  StringList,      // a sequence of scalars
  StringOrList,    // one scalar or a sequence of scalars (benchmarks.shapes)
  Map,             // a mapping with the keys in `fields`
  List,            // a sequence of `element`
  NamedMap,        // a mapping from free names to `element`
  Any,             // anything (popper `params`): only depth-checked
};

struct NodeSpec;
struct Field {
  std::string key;
  bool required;
  const NodeSpec* spec;
  bool popper_extension = false;
};

struct NodeSpec {
  Kind kind;
  std::vector<Field> fields;        // Map
  const NodeSpec* element = nullptr;  // List, NamedMap
  std::vector<std::string> values;  // Enum
  std::string what;                 // human name, e.g. "a proof obligation"
};

const NodeSpec& contract_root();

// Walks `node` against `spec`, reporting unknown keys (with a did-you-mean),
// missing required keys, wrong types, empty required strings and bad enum
// values. Bounded in depth and in the number of nodes visited (aliases can
// make a small file expand exponentially).
struct WalkLimits {
  int max_depth;
  long max_nodes;
};
// Returns false when a limit stopped the walk (the node must not be walked again).
bool check(const YAML::Node& node, const NodeSpec& spec, const std::string& file, const WalkLimits& limits,
           Diagnostics& diags);

SourcePos pos_of(const YAML::Node& node, const std::string& file);
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace popper::schema
