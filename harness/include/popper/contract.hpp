// The contract model: what `popper validate` checks and every other verb reads.
// Every node keeps the file:line:col it came from, for diagnostics.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace popper {

// How a contract is read (popper/profile.hpp): popper's strict reading or pv's.
enum class Profile { Strict, Pv };

struct SourcePos {
  std::string file;
  int line = 0;  // 1-based; 0 when unknown
  int col = 0;   // 1-based
};

struct Equation {
  std::string name;
  std::string formula;
  std::vector<std::string> invariants;
  SourcePos pos;
};

// popper extension: a broken variant a test must detect. `path` names the one
// backend path it breaks (e.g. "cpu:avx2"), so a run that never takes that
// path reports it "not reached" rather than survived.
struct Mutant {
  std::string id;
  std::string description;
  std::string path;
  SourcePos pos;
};

struct Obligation {
  std::string id;    // <PREFIX>-PO-NNN (popper requires it; pv has none)
  std::string type;  // one of pv's obligation types
  std::string property;
  std::string formal;
  std::optional<double> tolerance;
  std::string applies_to;  // an equation name, or "all"
  SourcePos pos;
  // popper: backends that each need passing evidence before the obligation is
  // covered ("cpu", "cuda", "cpu:avx2", ...; a tag matches itself and its
  // "<tag>:..." refinements). Empty: any passing backer covers it.
  std::vector<std::string> backends;
  // pv: the id was derived (pv obligations have none): <PREFIX>-PO-<position>.
  bool id_derived = false;
  bool type_defaulted = false;  // pv: no `type`, read as invariant
  SourcePos applies_to_pos{};   // the value of applies_to
  std::string requires_ref{};   // pv DbC, postconditions: the precondition it links to
  SourcePos requires_pos{};
  std::string applies_to_phase{};  // pv DbC, loop types: a kernel_structure phase name
  SourcePos applies_to_phase_pos{};
  std::string parent_contract{};  // pv DbC, subcontracts: the contract refined
  SourcePos parent_contract_pos{};
  bool has_formal = false;
};

struct FalsificationTest {
  std::string id;
  std::string rule;
  std::string prediction;
  std::string test;
  std::string if_fails;
  std::vector<std::string> covers;                   // popper: obligation ids this test backs
  nlohmann::json params = nlohmann::json::object();  // popper: handed to the falsifier
  std::vector<std::string> requires_;                // popper: capabilities ("cuda", "avx512", ...)
  std::vector<Mutant> mutants;                       // popper: what the test must detect
  SourcePos pos;
  bool has_prediction = false;  // pv: prediction and if_fails may be absent
  bool has_if_fails = false;
  std::vector<SourcePos> covers_pos{};
};

struct KaniHarness {
  std::string id;
  std::string obligation;  // an obligation id (pv: as resolved, see obligation_written)
  std::string property;
  std::optional<std::int64_t> bound;
  std::string strategy;
  std::string harness;
  nlohmann::json params = nlohmann::json::object();
  std::vector<std::string> requires_;
  std::vector<Mutant> mutants;
  SourcePos pos;
  std::string obligation_written{};  // the text as written (pv may name property text or a position)
  bool has_bound = false;            // `bound` given (valid or not)
  SourcePos obligation_pos{};
};

struct QaGate {
  std::string id;
  std::string name;
  std::vector<std::string> checks;  // equation names or test ids
  std::vector<SourcePos> check_pos;
  std::string pass_criteria;
  SourcePos pos;
};

// A ratio claim's scope: where meeting it would take the numerator above the
// fraction of the measured peak a kernel of its kind can reach, the claim says
// nothing. A claim "at least 1.5x the peer" is out of reach where the peer
// already runs at 64% of peak (it would take 96%); the contract states the
// attainable fraction and why, and the groups outside are reported as such.
struct ClaimScope {
  double attainable_peak_fraction = 1;  // (0, 1]
  std::string reason;
};

// popper extension: a performance claim evaluated against bench CSV rows of
// one family. metric:
//   time_ratio       median_time(numerator) / median_time(denominator)   op threshold
//   throughput_ratio throughput(numerator) / throughput(denominator)     op threshold
//   peak_fraction    throughput(numerator) / measured peak               op threshold
//   throughput       throughput(numerator), work units per second        op threshold
struct BenchmarkClaim {
  std::string id;
  std::string claim;
  std::string family;
  std::string metric;
  std::string numerator;
  std::string numerator_backend;      // empty = any; else the numerator row's backend starts with it
  std::string denominator;            // empty for peak_fraction and throughput
  std::string denominator_precision;  // empty = the numerator row's precision (e.g. q4k vs an f32 SGEMV)
  std::string denominator_backend;    // empty = any; else the denominator row's backend starts with it
  std::string op;                     // "<", "<=", ">", ">="
  double threshold = 0;
  std::vector<std::string> shapes;  // empty = every shape of the family
  std::string precision;            // empty = every precision
  std::optional<int> threads;       // empty = every thread count
  std::string cache = "warm";       // the rows' cache mode: warm | cold (popper/bench_protocol.hpp CacheMode)
  // throughput_ratio >= / > only: judged where threshold x the denominator's
  // peak fraction is at most the scope's attainable fraction
  std::optional<ClaimScope> scope;
  SourcePos pos;
};

// pv: a named enforcement rule; its `check` often names the test that enforces it.
struct EnforcementRule {
  std::string name;
  std::string check;
  SourcePos pos;
};

struct Contract {
  std::string path;  // as given
  std::string stem;  // file name without .yaml: what depends_on names
  std::string version;
  std::string description;
  std::vector<std::string> depends_on;
  std::vector<SourcePos> depends_on_pos;
  std::vector<Equation> equations;
  std::vector<Obligation> obligations;
  std::vector<FalsificationTest> falsification_tests;
  std::vector<KaniHarness> kani_harnesses;
  std::optional<QaGate> qa_gate;
  std::vector<BenchmarkClaim> benchmarks;
  // How it was read, and what pv's rules look at.
  Profile profile = Profile::Strict;
  std::string kind = "kernel";  // metadata.kind; `registry: true` on a kernel makes it registry
  bool has_references = false;  // metadata.references present and non-empty
  bool has_equations_key = false;
  SourcePos metadata_pos{};
  std::vector<std::string> phases{};  // kernel_structure.phases[].name
  std::vector<EnforcementRule> enforcement{};

  const FalsificationTest* find_test(const std::string& id) const;
  const KaniHarness* find_harness(const std::string& id) const;
  const Obligation* find_obligation(const std::string& id) const;
  const Equation* find_equation(const std::string& name) const;
};

}  // namespace popper
