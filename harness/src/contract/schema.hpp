// The contract schema as data: every key, its type, whether it is required
// in each profile, and pv's legacy aliases. contracts/SCHEMA.md documents the
// same table for people.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "popper/diagnostics.hpp"
#include "popper/profile.hpp"

namespace popper::schema {

enum class Kind {
  String,        // a scalar
  Number,        // a plain scalar that parses as a finite double
  Integer,       // a plain scalar that parses as an integer
  Count,         // a plain scalar that parses as an integer in [0, 2^32-1] (pv: u32)
  Bool,          // true / false
  Enum,          // a scalar from `values`
  StringList,    // a sequence of scalars
  StringOrList,  // one scalar or a sequence of scalars (benchmarks.shapes)
  Map,           // a mapping with the keys in `fields`
  List,          // a sequence of `element`
  NamedMap,      // a mapping from free names to `element`
  Any,           // anything (popper `params`): only depth-checked
};

// Required in which profile. Strict: required under strict; under pv the key
// may be absent (pv gives it a default, and pv's own rule, if any, judges it).
enum class Req { Always, Strict, Never };

struct NodeSpec;
struct Field {
  std::string key;
  Req req;
  const NodeSpec* spec;
  bool popper_extension = false;
};

struct NodeSpec {
  Kind kind;
  std::vector<Field> fields;          // Map
  const NodeSpec* element = nullptr;  // List, NamedMap
  std::vector<std::string> values;    // Enum
  std::string what;                   // human name, e.g. "a proof obligation"
  // Map: pv legacy spellings, alias → key. Accepted under pv, POP-V017 under strict.
  std::vector<std::pair<std::string, std::string>> pv_aliases = {};
  // Map: popper reads these items, so under pv an unknown key that looks like
  // a typo of a known key stays an error (a typo would drop a claim silently).
  bool interpreted = false;
};

const NodeSpec& contract_root();
const NodeSpec& obligation_spec();
const NodeSpec& falsification_test_spec();

// The key an alias stands for in `spec`, or "" when `word` is not an alias.
std::string alias_target(const NodeSpec& spec, const std::string& word);

// Walks `node` against `spec`, reporting unknown keys (with a did-you-mean),
// missing required keys, wrong types, empty required strings and bad enum
// values, each as the profile says. Bounded in depth and in the number of
// nodes visited (aliases can make a small file expand exponentially).
struct WalkLimits {
  int max_depth;
  long max_nodes;
};
// Returns false when a limit stopped the walk (the node must not be walked again).
bool check(const YAML::Node& node, const NodeSpec& spec, const std::string& file, const WalkLimits& limits,
           Profile profile, Diagnostics& diags);

SourcePos pos_of(const YAML::Node& node, const std::string& file);

// The closest candidate within edit distance max(2, |word|/4), or "". Never
// `word` itself: a suggestion that repeats the input helps nobody.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

// True when `word` is a likely typo of `known`: equal after case folding and
// dropping '_' and '-', or within one edit (two for words over 5 bytes),
// counting a swap of neighbours as one edit.
bool likely_typo(const std::string& word, const std::string& known);

// A value quoted in a message: at most 40 bytes, cut at a character boundary.
std::string quoted(const std::string& value);

}  // namespace popper::schema
