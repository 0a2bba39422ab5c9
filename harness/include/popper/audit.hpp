// `popper audit`: joins contracts, the binding registry of the test binary and
// test results (GoogleTest JSON) into a coverage report. Every figure is
// computed from results and carries its denominator; covered means bound,
// ran and passed; nothing can exceed 100%.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "popper/loader.hpp"

namespace popper {

// Outcome of one contract id as recorded in the test results.
struct IdResult {
  std::string outcome;  // passed | failed | skipped | unbound | not_run
  std::string reason;
};

struct AuditInputs {
  ContractSet contracts;
  std::vector<std::string> bound_ids;                    // from --popper-list-bindings
  std::map<std::string, IdResult> results;               // id -> outcome (from GoogleTest JSON)
  std::map<std::string, IdResult> bench_claims;          // claim id -> met | not_met | not_measured
  bool have_bench_claims = false;
};

// Reads GoogleTest JSON (the properties run_bound records) into id outcomes.
// Throws popper::Error on unreadable or malformed files.
void read_gtest_results(const std::string& path, std::map<std::string, IdResult>& out);
// Reads `--popper-list-bindings` JSON.
std::vector<std::string> read_bindings(const std::string& path);
// Reads reports/bench-claims.json ({"claims":[{"id","verdict","detail"}]}).
void read_bench_claims(const std::string& path, std::map<std::string, IdResult>& out);

struct Fraction {
  std::size_t num = 0, den = 0;
  double percent() const { return den == 0 ? 0.0 : 100.0 * static_cast<double>(num) / static_cast<double>(den); }
};

struct AuditReport {
  nlohmann::json json;   // the whole report (coverage.json)
  std::string markdown;  // coverage.md
  Fraction obligations;  // total covered obligations / obligations
  std::vector<std::string> orphans;
};

AuditReport audit(const AuditInputs& in);

}  // namespace popper
