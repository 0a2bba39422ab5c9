// `popper audit`: joins contracts, the binding registry of the test binary,
// test results (GoogleTest JSON, one file per run or CPU-matrix leg), mutant
// runs, bench claims and waivers into a coverage report whose exit code
// matches what it says.
//
//   covered obligation = a backing test or harness bound, ran and passed, with
//                        passing evidence on every backend in its `backends:`
//   power of a test    = mutants killed / mutants declared
//   exit 1             = any failed, UNBOUND or not-run test or harness,
//                        qa_gate FAIL, orphan binding, surviving mutant
//                        (of a test, or a bench mutant of a family),
//                        not_met claim, or expired waiver — unless waived;
//                        claims not measured / inconclusive only with
//                        require_claims
// Every figure is computed from results and carries its denominator; nothing
// can exceed 100%.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "popper/bench_protocol.hpp"
#include "popper/loader.hpp"

namespace popper {

// Where one backend tag passed: the execution site ("native",
// "emulated:Haswell") and how the path was chosen ("auto" or "forced").
struct EvidenceSite {
  std::string site;
  std::string how;
  bool operator==(const EvidenceSite&) const = default;
};

// Outcome of one contract id, merged over every results file given.
struct IdResult {
  IdResult() = default;
  IdResult(std::string o, std::string r) : outcome(std::move(o)), reason(std::move(r)) {}
  std::string outcome;  // passed | failed | skipped | unbound | not_run
  std::string reason;
  std::map<std::string, std::vector<EvidenceSite>> backends;  // from passing runs only
  std::vector<std::string> declines;                          // "cuda: <reason>"
  std::vector<std::string> sites;                             // where the id ran
};

// Several runs of one id: failed > unbound > passed > skipped > not_run (a
// pass in one leg is not undone by a skip in another; a failure anywhere
// stands), and the evidence of every passing run is kept.
void merge_result(IdResult& into, const IdResult& from);

// One (test, mutant) pair, possibly merged over several sites.
struct MutantResult {
  std::string contract, test_id, mutant_id, path;
  std::string outcome;  // killed | survived | not_reached | not_run
  std::string detail;
  std::map<std::string, std::string> by_site;  // site -> outcome there
};
// killed anywhere > survived anywhere > not_reached > not_run.
void merge_mutant(MutantResult& into, const MutantResult& from);

// An explicit, dated excuse for one failing id (a test, harness, claim,
// qa_gate id, orphan, or "<test id>/<mutant id>").
struct Waiver {
  std::string id, reason, expires;  // expires: YYYY-MM-DD
  SourcePos pos;
};

struct AuditInputs {
  ContractSet contracts;
  std::vector<std::string> bound_ids;       // from --popper-list-bindings
  std::map<std::string, IdResult> results;  // id -> merged outcome
  std::map<std::string, IdResult>
      bench_claims;  // claim id -> met | not_met | inconclusive | partially_measured | not_measured
  bool have_bench_claims = false;
  std::vector<MutantResult> mutants;  // merged per (test, mutant)
  bool have_mutants = false;
  std::vector<bench::BenchMutantResult> bench_mutants;
  bool have_bench_mutants = false;
  std::vector<Waiver> waivers;
  std::string today;  // YYYY-MM-DD, for waiver expiry
  bool require_claims = false;
};

// Reads GoogleTest JSON (the properties run_bound records) and merges each
// id into `out`. Throws popper::Error on unreadable or malformed files.
void read_gtest_results(const std::string& path, std::map<std::string, IdResult>& out);
// Reads `--popper-list-bindings` JSON.
std::vector<std::string> read_bindings(const std::string& path);
// Reads reports/bench-claims.json ({"claims":[{"id","verdict","detail"}]}).
void read_bench_claims(const std::string& path, std::map<std::string, IdResult>& out);
// Reads a mutants.json written by `popper audit --mutants` / `popper mutants`
// and merges it into `out`.
void read_mutant_results(const std::string& path, std::vector<MutantResult>& out);
nlohmann::json mutant_results_json(const std::vector<MutantResult>& results);
// A bench-mutant results file ({"bench_mutants": [...], "popper": ...}),
// as `popper bench mutants -o` writes it and the audit reads it.
nlohmann::json bench_mutant_results_json(const std::vector<bench::BenchMutantResult>& results);
void read_bench_mutant_results(const std::string& path, std::vector<bench::BenchMutantResult>& out);
// Reads a waivers file: `waivers: [{id, reason, expires: YYYY-MM-DD}]`.
std::vector<Waiver> read_waivers(const std::string& path);

struct Fraction {
  std::size_t num = 0, den = 0;
  double percent() const { return den == 0 ? 0.0 : 100.0 * static_cast<double>(num) / static_cast<double>(den); }
};

// bugprone-exception-escape is a false positive here: the implicit noexcept
// default constructor runs nlohmann::json's noexcept one, which delegates to
// basic_json(value_t), whose throw is for other value types, never null
// (nlohmann/json.hpp suppresses the same check on its own constructor).
struct AuditReport {     // NOLINT(bugprone-exception-escape): json's default constructor, above
  nlohmann::json json;   // the whole report (coverage.json)
  std::string markdown;  // coverage.md
  Fraction obligations;  // total covered obligations / obligations
  std::vector<std::string> orphans;
  std::vector<std::string> failures;  // every reason for exit 1, not waived
  std::vector<std::string> waived;    // what a live waiver excused
  std::vector<std::string> warnings;  // e.g. a waiver that matched nothing
  int exit_code() const { return failures.empty() ? 0 : 1; }
};

AuditReport audit(const AuditInputs& in);

// The report as JUnit XML (one testcase per id and per declared mutant) for
// CI test views; see audit_junit.cpp for how outcomes map.
std::string audit_junit(const nlohmann::json& report);

// Today's date in UTC, YYYY-MM-DD.
std::string today_utc();

}  // namespace popper
