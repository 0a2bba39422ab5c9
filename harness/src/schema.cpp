#include "schema.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include "popper/mutant.hpp"

namespace popper::schema {

namespace {

const NodeSpec kString{Kind::String, {}, nullptr, {}, "a string"};
const NodeSpec kNumber{Kind::Number, {}, nullptr, {}, "a number"};
const NodeSpec kInteger{Kind::Integer, {}, nullptr, {}, "an integer"};
const NodeSpec kBool{Kind::Bool, {}, nullptr, {}, "true or false"};
const NodeSpec kStringList{Kind::StringList, {}, nullptr, {}, "a list of strings"};
const NodeSpec kStringOrList{Kind::StringOrList, {}, nullptr, {}, "a string or a list of strings"};
const NodeSpec kAny{Kind::Any, {}, nullptr, {}, "any value"};

const NodeSpec kObligationType{Kind::Enum, {}, nullptr,
    {"invariant", "equivalence", "bound", "monotonicity", "idempotency", "linearity", "symmetry",
     "associativity", "conservation", "ordering", "completeness", "soundness", "involution", "determinism",
     "roundtrip", "state_machine", "classification", "independence", "termination", "precondition",
     "postcondition", "frame", "loop_invariant", "loop_variant", "old_state", "subcontract"},
    "an obligation type"};
const NodeSpec kStrategy{Kind::Enum, {}, nullptr, {"exhaustive", "stub_float", "compositional", "bounded_int"},
                         "a harness strategy"};
const NodeSpec kEnforcementLevel{Kind::Enum, {}, nullptr, {"basic", "standard", "strict", "proven"},
                                 "an enforcement level"};
const NodeSpec kLeanStatus{Kind::Enum, {}, nullptr, {"proved", "sorry", "wip", "not-applicable"}, "a Lean status"};
const NodeSpec kMetric{Kind::Enum, {}, nullptr, {"time_ratio", "throughput_ratio", "peak_fraction"},
                       "a benchmark metric"};
const NodeSpec kTier{Kind::Enum, {}, nullptr, {"ceiling", "wrapped", "hand", "reference"}, "a bench tier"};
const NodeSpec kOp{Kind::Enum, {}, nullptr, {"<", "<=", ">", ">="}, "a comparison"};

const NodeSpec kMetadata{Kind::Map,
    {{"version", true, &kString},
     {"created", false, &kString},
     {"author", false, &kString},
     {"description", true, &kString},
     {"references", false, &kStringList},
     {"depends_on", false, &kStringList},
     {"registry", false, &kBool},
     {"enforcement_level", false, &kEnforcementLevel},
     {"locked_level", false, &kString}},
    nullptr, {}, "the metadata block"};

const NodeSpec kEquation{Kind::Map,
    {{"formula", true, &kString},
     {"domain", false, &kString},
     {"codomain", false, &kString},
     {"invariants", false, &kStringList},
     {"preconditions", false, &kStringList},
     {"postconditions", false, &kStringList},
     {"lean_theorem", false, &kString}},
    nullptr, {}, "an equation"};
const NodeSpec kEquations{Kind::NamedMap, {}, &kEquation, {}, "the equations mapping"};

const NodeSpec kLean{Kind::Map,
    {{"theorem", true, &kString},
     {"module", false, &kString},
     {"status", false, &kLeanStatus},
     {"depends_on", false, &kStringList},
     {"mathlib_imports", false, &kStringList},
     {"notes", false, &kString}},
    nullptr, {}, "a Lean proof"};

const NodeSpec kObligation{Kind::Map,
    {{"id", true, &kString, true},
     {"type", true, &kObligationType},
     {"property", true, &kString},
     {"formal", false, &kString},
     {"tolerance", false, &kNumber},
     {"applies_to", false, &kString},
     {"lean", false, &kLean},
     {"requires", false, &kString},
     {"applies_to_phase", false, &kString},
     {"parent_contract", false, &kString},
     {"backends", false, &kStringList, true}},
    nullptr, {}, "a proof obligation"};
const NodeSpec kObligations{Kind::List, {}, &kObligation, {}, "the proof_obligations list"};

const NodeSpec kPhase{Kind::Map,
    {{"name", true, &kString}, {"description", true, &kString}, {"invariant", false, &kString}},
    nullptr, {}, "a kernel phase"};
const NodeSpec kPhases{Kind::List, {}, &kPhase, {}, "a list of kernel phases"};
const NodeSpec kKernelStructure{Kind::Map, {{"phases", true, &kPhases}}, nullptr, {}, "the kernel_structure block"};

const NodeSpec kStringMap{Kind::NamedMap, {}, &kString, {}, "a mapping of strings"};
const NodeSpec kSimdDispatch{Kind::NamedMap, {}, &kStringMap, {}, "the simd_dispatch mapping"};

const NodeSpec kEnforcementRule{Kind::Map,
    {{"description", true, &kString},
     {"check", false, &kString},
     {"severity", false, &kString},
     {"reference", false, &kString}},
    nullptr, {}, "an enforcement rule"};
const NodeSpec kEnforcement{Kind::NamedMap, {}, &kEnforcementRule, {}, "the enforcement mapping"};

// popper: a named, deliberately broken variant of the kernel or its input
// that the test must detect (`popper audit --mutants`).
const NodeSpec kMutant{Kind::Map,
    {{"id", true, &kString},
     {"description", true, &kString},
     {"path", false, &kString}},
    nullptr, {}, "a mutant"};
const NodeSpec kMutants{Kind::List, {}, &kMutant, {}, "a list of mutants"};

const NodeSpec kFalsificationTest{Kind::Map,
    {{"id", true, &kString},
     {"rule", true, &kString},
     {"prediction", true, &kString},
     {"test", false, &kString},
     {"if_fails", true, &kString},
     {"covers", false, &kStringList, true},
     {"params", false, &kAny, true},
     {"requires", false, &kStringList, true},
     {"mutants", false, &kMutants, true}},
    nullptr, {}, "a falsification test"};
const NodeSpec kFalsificationTests{Kind::List, {}, &kFalsificationTest, {}, "the falsification_tests list"};

const NodeSpec kKaniHarness{Kind::Map,
    {{"id", true, &kString},
     {"obligation", true, &kString},
     {"property", false, &kString},
     {"bound", false, &kInteger},
     {"strategy", false, &kStrategy},
     {"solver", false, &kString},
     {"harness", false, &kString},
     {"params", false, &kAny, true},
     {"requires", false, &kStringList, true},
     {"mutants", false, &kMutants, true}},
    nullptr, {}, "a kani harness"};
const NodeSpec kKaniHarnesses{Kind::List, {}, &kKaniHarness, {}, "the kani_harnesses list"};

const NodeSpec kQaGate{Kind::Map,
    {{"id", true, &kString},
     {"name", true, &kString},
     {"description", false, &kString},
     {"checks", false, &kStringList},
     {"pass_criteria", false, &kString},
     {"falsification", false, &kString}},
    nullptr, {}, "the qa_gate block"};

const NodeSpec kVerificationSummary{Kind::Map,
    {{"total_obligations", true, &kInteger},
     {"l2_property_tested", false, &kInteger},
     {"l3_kani_proved", false, &kInteger},
     {"l4_lean_proved", false, &kInteger},
     {"l4_sorry_count", false, &kInteger},
     {"l4_not_applicable", false, &kInteger}},
    nullptr, {}, "the verification_summary block"};

const NodeSpec kTypeInvariant{Kind::Map,
    {{"name", true, &kString},
     {"type", true, &kString},
     {"predicate", true, &kString},
     {"description", false, &kString}},
    nullptr, {}, "a type invariant"};
const NodeSpec kTypeInvariants{Kind::List, {}, &kTypeInvariant, {}, "the type_invariants list"};

const NodeSpec kCoqDefinition{Kind::Map, {{"name", true, &kString}, {"statement", true, &kString}}, nullptr, {},
                              "a Coq definition"};
const NodeSpec kCoqDefinitions{Kind::List, {}, &kCoqDefinition, {}, "a list of Coq definitions"};
const NodeSpec kCoqObligation{Kind::Map,
    {{"links_to", true, &kString}, {"coq_lemma", true, &kString}, {"status", false, &kString}},
    nullptr, {}, "a Coq obligation link"};
const NodeSpec kCoqObligations{Kind::List, {}, &kCoqObligation, {}, "a list of Coq obligation links"};
const NodeSpec kCoqSpec{Kind::Map,
    {{"module", true, &kString},
     {"imports", false, &kStringList},
     {"definitions", false, &kCoqDefinitions},
     {"obligations", false, &kCoqObligations}},
    nullptr, {}, "the coq_spec block"};

const NodeSpec kBenchmark{Kind::Map,
    {{"id", true, &kString},
     {"claim", true, &kString},
     {"family", true, &kString},
     {"metric", true, &kMetric},
     {"numerator", true, &kTier},
     {"denominator", false, &kTier},
     {"op", true, &kOp},
     {"threshold", true, &kNumber},
     {"shapes", false, &kStringOrList},
     {"precision", false, &kString},
     {"threads", false, &kInteger},
     {"applies_to", false, &kString}},
    nullptr, {}, "a benchmark claim"};
const NodeSpec kBenchmarks{Kind::List, {}, &kBenchmark, {}, "the benchmarks list"};

const NodeSpec kRoot{Kind::Map,
    {{"metadata", true, &kMetadata},
     {"equations", false, &kEquations},
     {"proof_obligations", false, &kObligations},
     {"kernel_structure", false, &kKernelStructure},
     {"simd_dispatch", false, &kSimdDispatch},
     {"enforcement", false, &kEnforcement},
     {"falsification_tests", false, &kFalsificationTests},
     {"kani_harnesses", false, &kKaniHarnesses},
     {"qa_gate", false, &kQaGate},
     {"verification_summary", false, &kVerificationSummary},
     {"type_invariants", false, &kTypeInvariants},
     {"coq_spec", false, &kCoqSpec},
     {"benchmarks", false, &kBenchmarks, true}},
    nullptr, {}, "a contract"};

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

bool is_plain(const YAML::Node& n) { return n.Tag() == "?" || n.Tag().empty(); }

bool parses_double(const std::string& s) {
  if (s.empty()) return false;
  std::size_t used = 0;
  try {
    const double v = std::stod(s, &used);
    return used == s.size() && std::isfinite(v);
  } catch (...) {
    return false;
  }
}

bool parses_integer(const std::string& s) {
  long long v = 0;
  const char* b = s.data();
  const char* e = b + s.size();
  if (b != e && *b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, v);
  return ec == std::errc() && p == e && b != e;
}

std::string kind_of(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return fmt::format("the scalar '{}'", n.Scalar().substr(0, 40));
    case YAML::NodeType::Null: return "nothing (null)";
    default: return "an undefined node";
  }
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out;
}

struct Walker {
  const std::string& file;
  const WalkLimits& limits;
  Diagnostics& diags;
  long visited = 0;
  bool stopped = false;

  bool budget(const YAML::Node& n, int depth) {
    if (stopped) return false;
    if (++visited > limits.max_nodes) {
      diags.error("POP-V006", pos_of(n, file),
                  fmt::format("the contract expands to more than {} nodes (aliases?); write it out plainly and keep "
                              "it small",
                              limits.max_nodes));
      stopped = true;
      return false;
    }
    if (depth > limits.max_depth) {
      diags.error("POP-V006", pos_of(n, file),
                  fmt::format("nesting deeper than {} levels; a contract needs at most 6, so flatten this value",
                              limits.max_depth));
      stopped = true;
      return false;
    }
    return true;
  }

  void wrong_type(const YAML::Node& n, const std::string& path, const NodeSpec& spec) {
    diags.error("POP-V012", pos_of(n, file),
                fmt::format("'{}' must be {}, but is {}; see contracts/SCHEMA.md for its form", path, spec.what,
                            kind_of(n)));
  }

  void scalar_string(const YAML::Node& n, const std::string& path, bool required) {
    if (required && n.IsScalar() && n.Scalar().find_first_not_of(" \t\r\n") == std::string::npos)
      diags.error("POP-V013", pos_of(n, file), fmt::format("'{}' is empty; write what it means", path));
  }

  void walk(const YAML::Node& n, const NodeSpec& spec, const std::string& path, int depth, bool required) {
    if (!budget(n, depth)) return;
    switch (spec.kind) {
      case Kind::String:
        if (!n.IsScalar()) return wrong_type(n, path, spec);
        scalar_string(n, path, required);
        return;
      case Kind::Number:
        if (!n.IsScalar() || !is_plain(n) || !parses_double(n.Scalar())) return wrong_type(n, path, spec);
        return;
      case Kind::Integer:
        if (!n.IsScalar() || !is_plain(n) || !parses_integer(n.Scalar())) return wrong_type(n, path, spec);
        return;
      case Kind::Bool:
        if (!n.IsScalar() || (n.Scalar() != "true" && n.Scalar() != "false")) return wrong_type(n, path, spec);
        return;
      case Kind::Enum:
        if (!n.IsScalar()) return wrong_type(n, path, spec);
        if (std::find(spec.values.begin(), spec.values.end(), n.Scalar()) == spec.values.end()) {
          const std::string hint = did_you_mean(n.Scalar(), spec.values);
          diags.error("POP-V014", pos_of(n, file),
                      fmt::format("'{}' is '{}', which is not {}; {}", path, n.Scalar(), spec.what,
                                  hint.empty() ? "use one of: " + join(spec.values) : "did you mean '" + hint + "'?"));
        }
        return;
      case Kind::StringOrList:
        if (n.IsScalar()) return scalar_string(n, path, true);
        [[fallthrough]];
      case Kind::StringList:
        if (!n.IsSequence()) return wrong_type(n, path, spec);
        for (std::size_t i = 0; i < n.size(); ++i) {
          if (!budget(n[i], depth + 1)) return;
          if (!n[i].IsScalar()) {
            diags.error("POP-V012", pos_of(n[i], file),
                        fmt::format("'{}[{}]' must be a string, but is {}", path, i, kind_of(n[i])));
          } else {
            scalar_string(n[i], fmt::format("{}[{}]", path, i), true);
          }
        }
        return;
      case Kind::Any: walk_any(n, depth); return;
      case Kind::List:
        if (!n.IsSequence()) return wrong_type(n, path, spec);
        for (std::size_t i = 0; i < n.size(); ++i) walk(n[i], *spec.element, fmt::format("{}[{}]", path, i), depth + 1, true);
        return;
      case Kind::NamedMap:
        if (!n.IsMap()) return wrong_type(n, path, spec);
        check_duplicates(n, path);
        for (auto it = n.begin(); it != n.end(); ++it) {
          if (!it->first.IsScalar()) {
            diags.error("POP-V012", pos_of(it->first, file), fmt::format("keys of '{}' must be names", path));
            continue;
          }
          walk(it->second, *spec.element, path + "." + it->first.Scalar(), depth + 1, true);
        }
        return;
      case Kind::Map: walk_map(n, spec, path, depth); return;
    }
  }

  void walk_any(const YAML::Node& n, int depth) {
    if (!budget(n, depth)) return;
    if (n.IsSequence())
      for (std::size_t i = 0; i < n.size(); ++i) walk_any(n[i], depth + 1);
    else if (n.IsMap())
      for (auto it = n.begin(); it != n.end(); ++it) walk_any(it->second, depth + 1);
  }

  void check_duplicates(const YAML::Node& n, const std::string& path) {
    std::set<std::string> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!it->first.IsScalar()) continue;
      if (!seen.insert(it->first.Scalar()).second)
        diags.error("POP-V015", pos_of(it->first, file),
                    fmt::format("key '{}' appears twice in '{}'; YAML keeps only one of them, so remove or rename "
                                "the duplicate",
                                it->first.Scalar(), path.empty() ? "the contract" : path));
    }
  }

  void walk_map(const YAML::Node& n, const NodeSpec& spec, const std::string& path, int depth) {
    if (!n.IsMap()) return wrong_type(n, path.empty() ? "<root>" : path, spec);
    check_duplicates(n, path);
    std::vector<std::string> known;
    for (const auto& f : spec.fields) known.push_back(f.key);
    std::set<std::string> present;
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!it->first.IsScalar()) {
        diags.error("POP-V012", pos_of(it->first, file), "mapping keys must be plain names");
        continue;
      }
      const std::string key = it->first.Scalar();
      const std::string sub = path.empty() ? key : path + "." + key;
      auto f = std::find_if(spec.fields.begin(), spec.fields.end(), [&](const Field& x) { return x.key == key; });
      if (f == spec.fields.end()) {
        if (POPPER_MUTANT("schema-metadata-free-keys") && spec.what == "the metadata block") continue;
        const std::string hint = POPPER_MUTANT("schema-no-did-you-mean") ? std::string() : did_you_mean(key, known);
        diags.error("POP-V010", pos_of(it->first, file),
                    fmt::format("unknown key '{}' in {}; {}", sub, spec.what,
                                hint.empty() ? "known keys are: " + join(known) : "did you mean '" + hint + "'?"));
        continue;
      }
      present.insert(key);
      if (it->second.IsNull() && f->required) {
        diags.error("POP-V011", pos_of(it->first, file),
                    fmt::format("'{}' is required but has no value; give it {}", sub, f->spec->what));
        continue;
      }
      if (it->second.IsNull()) continue;  // an optional key left empty
      walk(it->second, *f->spec, sub, depth + 1, f->required);
    }
    for (const auto& f : spec.fields)
      if (f.required && !present.count(f.key))
        diags.error("POP-V011", pos_of(n, file),
                    fmt::format("{} is missing required key '{}'{}", spec.what, f.key,
                                f.key == "id" && spec.fields[0].popper_extension
                                    ? "; popper needs ids on obligations (pv has none): add e.g. 'id: GEMM-PO-001'"
                                    : "; add it"));
  }
};

}  // namespace

const NodeSpec& contract_root() { return kRoot; }

SourcePos pos_of(const YAML::Node& node, const std::string& file) {
  const YAML::Mark m = node.Mark();
  if (m.line < 0) return {file, 0, 0};
  return {file, m.line + 1, m.column + 1};
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

bool check(const YAML::Node& node, const NodeSpec& spec, const std::string& file, const WalkLimits& limits,
           Diagnostics& diags) {
  Walker w{file, limits, diags};
  w.walk(node, spec, "", 0, true);
  return !w.stopped;
}

}  // namespace popper::schema
