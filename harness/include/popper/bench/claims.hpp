// Evaluating contracts' `benchmarks` claims against a bench table.
//
// For each (shape, precision, threads) group the claim covers, the value is
//   time_ratio        median time(numerator) / median time(denominator)
//   throughput_ratio  throughput(numerator) / throughput(denominator)
//   peak_fraction     throughput(numerator) / measured peak
// (each tier's best row over backends); the claim is met when `value op
// threshold` holds for every group, not_met when some group fails (the detail
// names the worst), not_measured when a covered group has no data.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "popper/bench/csv.hpp"
#include "popper/bench/peak.hpp"
#include "popper/contract.hpp"

namespace popper::bench {

struct ClaimResult {
  std::string contract;  // stem, e.g. gemm-v1
  std::string id;
  std::string family;
  std::string verdict;   // met | not_met | not_measured
  std::string detail;
};

// peak_kind maps precision -> fp32 | fp64 | bandwidth (family.yaml `peak`).
std::vector<ClaimResult> evaluate_claims(const std::vector<Contract>& contracts, const std::string& family,
                                         const BenchTable& table, const PeakResult* peak,
                                         const std::map<std::string, std::string>& peak_kind);

// Writes {"claims":[...]} to path, keeping entries of other families already there.
void write_claims_json(const std::string& path, const std::string& family, const std::vector<ClaimResult>& results);

}  // namespace popper::bench
