#include "contract/schema.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "common/utf8.hpp"
#include "contract/rules.hpp"
#include "popper/bench_protocol.hpp"
#include "popper/mutant.hpp"

namespace popper::schema {

namespace {

using R = Req;

const NodeSpec kString{Kind::String, {}, nullptr, {}, "a string"};
const NodeSpec kNumber{Kind::Number, {}, nullptr, {}, "a number"};
const NodeSpec kInteger{Kind::Integer, {}, nullptr, {}, "an integer"};
const NodeSpec kCount{Kind::Count, {}, nullptr, {}, "a non-negative integer"};
const NodeSpec kBool{Kind::Bool, {}, nullptr, {}, "true or false"};
const NodeSpec kStringList{Kind::StringList, {}, nullptr, {}, "a list of strings"};
const NodeSpec kStringOrList{Kind::StringOrList, {}, nullptr, {}, "a string or a list of strings"};
const NodeSpec kAny{Kind::Any, {}, nullptr, {}, "any value"};

// pv's 26 types plus its two legacy ones (safety, liveness), kept by pv for back-compat.
const NodeSpec kObligationType{
    Kind::Enum,
    {},
    nullptr,
    {"invariant",     "equivalence",   "bound",          "monotonicity",   "idempotency",  "linearity",  "symmetry",
     "associativity", "conservation",  "ordering",       "completeness",   "soundness",    "involution", "determinism",
     "roundtrip",     "state_machine", "classification", "independence",   "termination",  "safety",     "liveness",
     "precondition",  "postcondition", "frame",          "loop_invariant", "loop_variant", "old_state",  "subcontract"},
    "an obligation type"};
const NodeSpec kContractKind{
    Kind::Enum,
    {},
    nullptr,
    {"kernel", "registry", "model-family", "model-family-variant", "tokenizer", "training-loop", "pretraining-corpus",
     "training-precondition-gate", "corpus-assembly", "pattern", "schema", "beat-benchmark", "competitive-parity"},
    "a contract kind"};
const NodeSpec kStrategy{
    Kind::Enum, {}, nullptr, {"exhaustive", "stub_float", "compositional", "bounded_int"}, "a harness strategy"};
const NodeSpec kEnforcementLevel{
    Kind::Enum, {}, nullptr, {"basic", "standard", "strict", "proven"}, "an enforcement level"};
const NodeSpec kIntakeStatus{
    Kind::Enum, {}, nullptr, {"missing", "partial", "supported", "unclear"}, "an intake status"};
const NodeSpec kLeanStatus{Kind::Enum, {}, nullptr, {"proved", "sorry", "wip", "not-applicable"}, "a Lean status"};
const NodeSpec kMetric{
    Kind::Enum, {}, nullptr, {"time_ratio", "throughput_ratio", "peak_fraction", "throughput"}, "a benchmark metric"};
std::vector<std::string> tier_values() {
  std::vector<std::string> out;
  out.reserve(bench::kTiers.size());
  for (bench::Tier t : bench::kTiers) out.emplace_back(bench::to_string(t));
  return out;
}
// The bench protocol's tiers (popper/bench_protocol.hpp), so a claim can name every tier a suite registers.
const NodeSpec kTier{Kind::Enum, {}, nullptr, tier_values(), "a bench tier"};
const NodeSpec kOp{Kind::Enum, {}, nullptr, {"<", "<=", ">", ">="}, "a comparison"};
const NodeSpec kCacheMode{Kind::Enum, {}, nullptr, {"warm", "cold"}, "a cache mode"};

const NodeSpec kMetadata{Kind::Map,
                         {{"version", R::Always, &kString},
                          {"created", R::Never, &kString},
                          {"author", R::Never, &kString},
                          {"description", R::Always, &kString},
                          {"references", R::Never, &kStringList},
                          {"depends_on", R::Never, &kStringList},
                          {"registry", R::Never, &kBool},
                          {"kind", R::Never, &kContractKind},
                          {"enforcement_level", R::Never, &kEnforcementLevel},
                          {"locked_level", R::Never, &kString},
                          {"competitor", R::Never, &kString},
                          {"demand_score", R::Never, &kInteger},
                          {"intake_status", R::Never, &kIntakeStatus}},
                         nullptr,
                         {},
                         "the metadata block",
                         {},
                         true};

// pv composition: typed shape contracts on equations (assumes / guarantees).
const NodeSpec kShapeExpr{
    Kind::Map, {{"dims", R::Always, &kStringList}, {"dtype", R::Never, &kString}}, nullptr, {}, "a shape expression"};
const NodeSpec kShapes{Kind::NamedMap, {}, &kShapeExpr, {}, "a mapping of shapes"};
const NodeSpec kShapeContract{Kind::Map,
                              {{"shapes", R::Never, &kShapes},
                               {"constraints", R::Never, &kStringList},
                               {"from_contract", R::Never, &kString},
                               {"from_equation", R::Never, &kString}},
                              nullptr,
                              {},
                              "a shape contract"};

const NodeSpec kEquation{Kind::Map,
                         {{"formula", R::Strict, &kString},
                          {"domain", R::Never, &kString},
                          {"codomain", R::Never, &kString},
                          {"invariants", R::Never, &kStringList},
                          {"preconditions", R::Never, &kStringList},
                          {"postconditions", R::Never, &kStringList},
                          {"lean_theorem", R::Never, &kString},
                          {"float_tolerance", R::Never, &kNumber},
                          {"assumes", R::Never, &kShapeContract},
                          {"guarantees", R::Never, &kShapeContract}},
                         nullptr,
                         {},
                         "an equation",
                         {},
                         true};
const NodeSpec kEquations{Kind::NamedMap, {}, &kEquation, {}, "the equations mapping"};

const NodeSpec kLean{Kind::Map,
                     {{"theorem", R::Always, &kString},
                      {"module", R::Never, &kString},
                      {"status", R::Never, &kLeanStatus},
                      {"depends_on", R::Never, &kStringList},
                      {"mathlib_imports", R::Never, &kStringList},
                      {"notes", R::Never, &kString}},
                     nullptr,
                     {},
                     "a Lean proof"};

// `id` is required under strict, but the loader reports it (its hint needs the
// contract's prefix and the obligation's position); pv derives it.
const NodeSpec kObligation{Kind::Map,
                           {{"id", R::Never, &kString, true},
                            {"type", R::Strict, &kObligationType},
                            {"property", R::Strict, &kString},
                            {"formal", R::Never, &kString},
                            {"tolerance", R::Never, &kNumber},
                            {"applies_to", R::Never, &kString},
                            {"lean", R::Never, &kLean},
                            {"requires", R::Never, &kString},
                            {"applies_to_phase", R::Never, &kString},
                            {"parent_contract", R::Never, &kString},
                            {"backends", R::Never, &kStringList, true}},
                           nullptr,
                           {},
                           "a proof obligation",
                           {{"statement", "property"}, {"verification", "formal"}},
                           true};
const NodeSpec kObligations{Kind::List, {}, &kObligation, {}, "the proof_obligations list"};

const NodeSpec kPhase{
    Kind::Map,
    {{"name", R::Always, &kString}, {"description", R::Always, &kString}, {"invariant", R::Never, &kString}},
    nullptr,
    {},
    "a kernel phase"};
const NodeSpec kPhases{Kind::List, {}, &kPhase, {}, "a list of kernel phases"};
const NodeSpec kKernelStructure{
    Kind::Map, {{"phases", R::Always, &kPhases}}, nullptr, {}, "the kernel_structure block"};

const NodeSpec kStringMap{Kind::NamedMap, {}, &kString, {}, "a mapping of strings"};
const NodeSpec kSimdDispatch{Kind::NamedMap, {}, &kStringMap, {}, "the simd_dispatch mapping"};

const NodeSpec kEnforcementRule{Kind::Map,
                                {{"description", R::Always, &kString},
                                 {"check", R::Never, &kString},
                                 {"severity", R::Never, &kString},
                                 {"reference", R::Never, &kString}},
                                nullptr,
                                {},
                                "an enforcement rule"};
const NodeSpec kEnforcement{Kind::NamedMap, {}, &kEnforcementRule, {}, "the enforcement mapping"};

// popper: a named, deliberately broken variant of the kernel or its input
// that the test must detect (`popper audit --mutants`).
const NodeSpec kMutant{
    Kind::Map,  {{"id", R::Always, &kString}, {"description", R::Always, &kString}, {"path", R::Never, &kString}},
    nullptr,    {},
    "a mutant", {},
    true};
const NodeSpec kMutants{Kind::List, {}, &kMutant, {}, "a list of mutants"};

const NodeSpec kFalsificationTest{
    Kind::Map,
    {{"id", R::Always, &kString},
     {"rule", R::Strict, &kString},
     {"prediction", R::Strict, &kString},
     {"test", R::Never, &kString},
     {"test_harness", R::Never, &kString},
     {"name", R::Never, &kString},
     {"if_fails", R::Strict, &kString},
     {"covers", R::Never, &kStringList, true},
     {"params", R::Never, &kAny, true},
     {"requires", R::Never, &kStringList, true},
     {"mutants", R::Never, &kMutants, true}},
    nullptr,
    {},
    "a falsification test",
    {{"description", "rule"}, {"expected", "prediction"}, {"command", "test"}, {"fails_if", "if_fails"}},
    true};
const NodeSpec kFalsificationTests{Kind::List, {}, &kFalsificationTest, {}, "the falsification_tests list"};

const NodeSpec kKaniHarness{Kind::Map,
                            {{"id", R::Always, &kString},
                             {"obligation", R::Always, &kString},
                             {"property", R::Never, &kString},
                             {"bound", R::Never, &kCount},
                             {"strategy", R::Never, &kStrategy},
                             {"solver", R::Never, &kString},
                             {"harness", R::Never, &kString},
                             {"actually_verified", R::Never, &kBool},
                             {"params", R::Never, &kAny, true},
                             {"requires", R::Never, &kStringList, true},
                             {"mutants", R::Never, &kMutants, true}},
                            nullptr,
                            {},
                            "a kani harness",
                            {},
                            true};
const NodeSpec kKaniHarnesses{Kind::List, {}, &kKaniHarness, {}, "the kani_harnesses list"};

const NodeSpec kQaGate{Kind::Map,
                       {{"id", R::Strict, &kString},
                        {"name", R::Strict, &kString},
                        {"description", R::Never, &kString},
                        {"checks", R::Never, &kStringList},
                        {"pass_criteria", R::Never, &kString},
                        {"falsification", R::Never, &kString}},
                       nullptr,
                       {},
                       "the qa_gate block",
                       {},
                       true};

const NodeSpec kVerificationSummary{Kind::Map,
                                    {{"total_obligations", R::Always, &kCount},
                                     {"l2_property_tested", R::Never, &kCount},
                                     {"l3_kani_proved", R::Never, &kCount},
                                     {"l4_lean_proved", R::Never, &kCount},
                                     {"l4_sorry_count", R::Never, &kCount},
                                     {"l4_not_applicable", R::Never, &kCount}},
                                    nullptr,
                                    {},
                                    "the verification_summary block"};

const NodeSpec kTypeInvariant{Kind::Map,
                              {{"name", R::Always, &kString},
                               {"type", R::Always, &kString},
                               {"predicate", R::Always, &kString},
                               {"description", R::Never, &kString}},
                              nullptr,
                              {},
                              "a type invariant"};
const NodeSpec kTypeInvariants{Kind::List, {}, &kTypeInvariant, {}, "the type_invariants list"};

const NodeSpec kCoqDefinition{
    Kind::Map, {{"name", R::Always, &kString}, {"statement", R::Always, &kString}}, nullptr, {}, "a Coq definition"};
const NodeSpec kCoqDefinitions{Kind::List, {}, &kCoqDefinition, {}, "a list of Coq definitions"};
const NodeSpec kCoqObligation{
    Kind::Map,
    {{"links_to", R::Always, &kString}, {"coq_lemma", R::Always, &kString}, {"status", R::Never, &kString}},
    nullptr,
    {},
    "a Coq obligation link"};
const NodeSpec kCoqObligations{Kind::List, {}, &kCoqObligation, {}, "a list of Coq obligation links"};
const NodeSpec kCoqSpec{Kind::Map,
                        {{"module", R::Always, &kString},
                         {"imports", R::Never, &kStringList},
                         {"definitions", R::Never, &kCoqDefinitions},
                         {"obligations", R::Never, &kCoqObligations}},
                        nullptr,
                        {},
                        "the coq_spec block"};

// pv: a head-to-head benchmark against an incumbent (metadata.kind: beat-benchmark).
const NodeSpec kBeat{Kind::Map,
                     {{"pillar", R::Never, &kCount},
                      {"incumbent", R::Never, &kString},
                      {"incumbent_pinned", R::Never, &kString},
                      {"canonical_task", R::Never, &kString},
                      {"metric", R::Never, &kString},
                      {"direction", R::Never, &kString},
                      {"baseline_value", R::Never, &kNumber},
                      {"baseline_floor", R::Never, &kNumber},
                      {"beat_threshold", R::Never, &kNumber},
                      {"baseline_sourced_date", R::Never, &kString},
                      {"approved_compute", R::Never, &kString},
                      {"ci_gate_name", R::Never, &kString}},
                     nullptr,
                     {},
                     "the beat block"};
const NodeSpec kStories{Kind::List, {}, &kAny, {}, "the stories list"};

const NodeSpec kClaimScope{Kind::Map,
                           {{"attainable_peak_fraction", R::Always, &kNumber}, {"reason", R::Always, &kString}},
                           nullptr,
                           {},
                           "a claim's scope",
                           {},
                           true};

const NodeSpec kBenchmark{Kind::Map,
                          {{"id", R::Always, &kString},
                           {"claim", R::Always, &kString},
                           {"family", R::Always, &kString},
                           {"metric", R::Always, &kMetric},
                           {"numerator", R::Always, &kTier},
                           {"numerator_backend", R::Never, &kString},
                           {"denominator", R::Never, &kTier},
                           {"denominator_precision", R::Never, &kString},
                           {"denominator_backend", R::Never, &kString},
                           {"op", R::Always, &kOp},
                           {"threshold", R::Always, &kNumber},
                           {"shapes", R::Never, &kStringOrList},
                           {"precision", R::Never, &kString},
                           {"threads", R::Never, &kCount},
                           {"cache", R::Never, &kCacheMode},
                           {"scope", R::Never, &kClaimScope},
                           {"applies_to", R::Never, &kString}},
                          nullptr,
                          {},
                          "a benchmark claim",
                          {},
                          true};
const NodeSpec kBenchmarks{Kind::List, {}, &kBenchmark, {}, "the benchmarks list"};

const NodeSpec kRoot{Kind::Map,
                     {{"metadata", R::Always, &kMetadata},
                      {"equations", R::Never, &kEquations},
                      {"proof_obligations", R::Never, &kObligations},
                      {"kernel_structure", R::Never, &kKernelStructure},
                      {"simd_dispatch", R::Never, &kSimdDispatch},
                      {"enforcement", R::Never, &kEnforcement},
                      {"falsification_tests", R::Never, &kFalsificationTests},
                      {"kani_harnesses", R::Never, &kKaniHarnesses},
                      {"qa_gate", R::Never, &kQaGate},
                      {"verification_summary", R::Never, &kVerificationSummary},
                      {"type_invariants", R::Never, &kTypeInvariants},
                      {"coq_spec", R::Never, &kCoqSpec},
                      {"beat", R::Never, &kBeat},
                      {"stories", R::Never, &kStories},
                      {"parity", R::Never, &kAny},
                      {"benchmarks", R::Never, &kBenchmarks, true}},
                     nullptr,
                     {},
                     "a contract",
                     {},
                     true};

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

// Optimal string alignment distance: Levenshtein plus adjacent swaps.
std::size_t osa_distance(const std::string& a, const std::string& b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::string folded(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != '_' && c != '-') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
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

std::optional<long long> parse_integer(const std::string& s) {
  long long v = 0;
  const char* b = s.data();
  const char* e = b + s.size();
  if (b != e && *b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e || b == e) return std::nullopt;
  return v;
}

std::string kind_of(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return fmt::format("the scalar '{}'", quoted(n.Scalar()));
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
  Profile profile;
  Diagnostics& diags;
  long visited = 0;
  bool stopped = false;
  std::set<const NodeSpec*> listed{};  // key lists already printed once in this file

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
    diags.error(
        "POP-V012", pos_of(n, file),
        fmt::format("'{}' must be {}, but is {}; see contracts/SCHEMA.md for its form", path, spec.what, kind_of(n)));
  }

  void scalar_string(const YAML::Node& n, const std::string& path, bool required) {
    if (required && n.IsScalar() && n.Scalar().find_first_not_of(" \t\r\n") == std::string::npos)
      rules::report(diags, profile, rules::Rule::RequiredStringEmpty, pos_of(n, file),
                    fmt::format("'{}' is empty; write what it means", path));
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
        if (!n.IsScalar() || !is_plain(n) || !parse_integer(n.Scalar())) return wrong_type(n, path, spec);
        return;
      case Kind::Count: {
        const auto v = n.IsScalar() && is_plain(n) ? parse_integer(n.Scalar()) : std::nullopt;
        if (!v || *v < 0 || *v > 4294967295LL)
          diags.error("POP-V012", pos_of(n, file),
                      fmt::format("'{}' must be a non-negative integer below 2^32 (a count or a bound), but is {}; "
                                  "write the count",
                                  path, kind_of(n)));
        return;
      }
      case Kind::Bool:
        if (!n.IsScalar() || (n.Scalar() != "true" && n.Scalar() != "false")) return wrong_type(n, path, spec);
        return;
      case Kind::Enum:
        if (!n.IsScalar()) return wrong_type(n, path, spec);
        if (std::find(spec.values.begin(), spec.values.end(), n.Scalar()) == spec.values.end()) {
          const std::string hint = did_you_mean(n.Scalar(), spec.values);
          diags.error("POP-V014", pos_of(n, file),
                      fmt::format("'{}' is '{}', which is not {}; {}", path, quoted(n.Scalar()), spec.what,
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
        for (std::size_t i = 0; i < n.size(); ++i)
          walk(n[i], *spec.element, fmt::format("{}[{}]", path, i), depth + 1, true);
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
                                quoted(it->first.Scalar()), path.empty() ? "the contract" : path));
    }
  }

  void unknown_key(const YAML::Node& key_node, const std::string& key, const std::string& sub, const NodeSpec& spec,
                   const std::vector<std::string>& known) {
    const SourcePos pos = pos_of(key_node, file);
    const std::string hint = POPPER_MUTANT("schema-no-did-you-mean") ? std::string() : did_you_mean(key, known);
    bool typo = false;
    if (spec.interpreted)
      for (const auto& k : known) typo = typo || likely_typo(key, k);
    std::string advice;
    if (!hint.empty()) {
      advice = "did you mean '" + hint + "'?";
    } else if (listed.insert(&spec).second) {
      advice = "known keys are: " + join(known);
    } else {
      advice = "see contracts/SCHEMA.md for the keys of " + spec.what;
    }
    if (profile == Profile::Pv && !typo) {
      rules::report(diags, profile, rules::Rule::UnknownKey, pos,
                    fmt::format("key '{}' in {} is not part of pv's schema; pv tolerates it and popper ignores it{}",
                                quoted(sub), spec.what, hint.empty() ? std::string() : " (" + advice + ")"));
      return;
    }
    if (profile == Profile::Pv) {
      diags.error(rules::code(rules::Rule::UnknownKey, Profile::Strict), pos,
                  fmt::format("unknown key '{}' in {} looks like a typo, and a typo here drops a claim silently; {}",
                              quoted(sub), spec.what, advice));
      return;
    }
    rules::report(diags, profile, rules::Rule::UnknownKey, pos,
                  fmt::format("unknown key '{}' in {}; {}", quoted(sub), spec.what, advice));
  }

  void walk_map(const YAML::Node& n, const NodeSpec& spec, const std::string& path, int depth) {
    if (!n.IsMap()) return wrong_type(n, path.empty() ? "<root>" : path, spec);
    check_duplicates(n, path);
    std::vector<std::string> known;
    for (const auto& f : spec.fields) known.push_back(f.key);
    std::set<std::string> present;
    std::vector<std::pair<std::string, YAML::Node>> via_alias;  // key → alias key node
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!it->first.IsScalar()) {
        diags.error("POP-V012", pos_of(it->first, file), "mapping keys must be plain names");
        continue;
      }
      std::string key = it->first.Scalar();
      const std::string written = key;
      if (const std::string target = alias_target(spec, key); !target.empty()) {
        rules::report(diags, profile, rules::Rule::PvAliasKey, pos_of(it->first, file),
                      fmt::format("'{}' is pv's legacy spelling of '{}'; write '{}' (popper migrate renames it)", key,
                                  target, target));
        via_alias.emplace_back(target, it->first);
        key = target;
      }
      const std::string sub = path.empty() ? key : fmt::format("{}.{}", path, key);
      auto f = std::find_if(spec.fields.begin(), spec.fields.end(), [&](const Field& x) { return x.key == key; });
      if (f == spec.fields.end()) {
        if (POPPER_MUTANT("schema-metadata-free-keys") && spec.what == "the metadata block") continue;
        unknown_key(it->first, key, sub, spec, known);
        continue;
      }
      if (!present.insert(key).second) continue;  // key and alias both given: reported below
      const bool required = f->req == Req::Always || (f->req == Req::Strict && profile == Profile::Strict);
      if (it->second.IsNull() && required) {
        diags.error("POP-V011", pos_of(it->first, file),
                    fmt::format("'{}' is required but has no value; give it {}", sub, f->spec->what));
        continue;
      }
      if (it->second.IsNull()) continue;  // an optional key left empty
      walk(it->second, *f->spec, written == key ? sub : (path.empty() ? written : fmt::format("{}.{}", path, written)),
           depth + 1, required);
    }
    for (const auto& [target, alias_node] : via_alias) {
      int count = 0;
      for (auto it = n.begin(); it != n.end(); ++it)
        if (it->first.IsScalar() && (it->first.Scalar() == target || alias_target(spec, it->first.Scalar()) == target))
          ++count;
      if (count > 1)
        rules::report(diags, profile, rules::Rule::AliasWithKey, pos_of(alias_node, file),
                      fmt::format("'{}' and its alias '{}' are both given in {}; pv rejects the duplicate field, so "
                                  "keep one",
                                  target, quoted(alias_node.Scalar()), spec.what));
    }
    for (const auto& f : spec.fields) {
      const bool required = f.req == Req::Always || (f.req == Req::Strict && profile == Profile::Strict);
      if (required && !present.count(f.key))
        diags.error("POP-V011", pos_of(n, file),
                    fmt::format("{} is missing required key '{}'; add it", spec.what, f.key));
    }
  }
};

}  // namespace

const NodeSpec& contract_root() { return kRoot; }
const NodeSpec& obligation_spec() { return kObligation; }
const NodeSpec& falsification_test_spec() { return kFalsificationTest; }

std::string alias_target(const NodeSpec& spec, const std::string& word) {
  for (const auto& [alias, key] : spec.pv_aliases)
    if (alias == word) return key;
  return {};
}

SourcePos pos_of(const YAML::Node& node, const std::string& file) {
  const YAML::Mark m = node.Mark();
  if (m.line < 0) return {file, 0, 0};
  return {file, m.line + 1, m.column + 1};
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    if (c == word) continue;
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

bool likely_typo(const std::string& word, const std::string& known) {
  if (word == known) return false;
  if (folded(word) == folded(known)) return true;
  if (word.size() > 64 || known.size() > 64) return false;
  const std::size_t allowed = std::min(word.size(), known.size()) > 5 ? 2 : 1;
  return osa_distance(word, known) <= allowed;
}

std::string quoted(const std::string& value) { return utf8::cut(value, 40); }

bool check(const YAML::Node& node, const NodeSpec& spec, const std::string& file, const WalkLimits& limits,
           Profile profile, Diagnostics& diags) {
  Walker w{file, limits, profile, diags};
  w.walk(node, spec, "", 0, true);
  return !w.stopped;
}

}  // namespace popper::schema
