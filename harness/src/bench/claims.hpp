// Evaluating contracts' `benchmarks` claims against a bench table, with
// their uncertainty.
//
// For each (shape, precision, threads) group the claim covers, the value is
//   time_ratio        median time(numerator) / median time(denominator)
//   throughput_ratio  throughput(numerator) / throughput(denominator)
//   peak_fraction     throughput(numerator) / measured peak; for a bandwidth
//                     peak the suite probed in each process (BenchRow::read),
//                     each trial's time against the read of its own process,
//                     paired as a ratio is: the host may place a process's
//                     CPUs where they read at half the speed of another's
//   throughput        throughput(numerator) in work units per second
// from the numerator tier's best *verified* row (a row counts only when its
// verdict starts with "verified") and, for a ratio, each verified row of the
// denominator tier in turn: the numerator's own backend when that tier has
// it, else every one, the group meeting the claim only against all of them
// (of a backend starting with numerator_backend / denominator_backend when
// the claim names one), with a paired two-level bootstrap interval over
// the run's trials (interval.hpp); a ratio's interval also spans the sign
// test's interval of its per-trial ratios (trial_ratio_span), so a trial
// disturbed on one side leaves the group inconclusive, to be measured again,
// rather than not_met. A ratio leaves out the trials in which one side's
// process ran on a slow CPU and the other's did not (pace.hpp: the host took
// the cores' FP throughput for a while), and, where at least kSteadyTrials
// ran steady on both sides, those in which both ran slow; with fewer than 2 trials left on a
// side the group is inconclusive ("disturbed"). A group is met when the whole interval
// satisfies `value op threshold`, not_met when none of it does, inconclusive
// otherwise, and a ratio judged on fewer trials than the sign test needs to
// bound a median (sign_test_trials(0): 6 at alpha 0.05) is inconclusive. A
// claim with a scope (popper/contract.hpp ClaimScope) leaves out, and names
// with their figures, the groups where threshold x the denominator's
// throughput is over the attainable fraction of the measured peak. The claim is
//   not_met             when some group is not_met (the detail names the worst)
//   inconclusive        else when some group is inconclusive
//   partially_measured  else when some covered group has no verified data
//                       ("shapes: all" means the family's whole shape list)
//   met                 when every covered group is met
//   not_measured        when no group has data, or none is in its scope
#pragma once
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "bench/csv.hpp"
#include "bench/peak.hpp"
#include "popper/contract.hpp"

namespace popper::bench {

// A claim's verdict (the rules above); its name is what bench-claims.json
// and the audit read: met, not_met, inconclusive, partially_measured, not_measured.
enum class ClaimVerdict { Met, NotMet, Inconclusive, PartiallyMeasured, NotMeasured };
std::string_view to_string(ClaimVerdict v);
std::ostream& operator<<(std::ostream& o, ClaimVerdict v);

// A claim group's name, "<shape>/<precision>/threads:<n>": how the verdicts,
// figures and replicates name it.
inline std::string claim_group_name(const std::string& shape, const std::string& precision, int threads) {
  return shape + "/" + precision + "/threads:" + std::to_string(threads);
}

struct ClaimResult {
  std::string contract;  // stem, e.g. gemm-v1
  std::string id;
  std::string family;
  ClaimVerdict verdict = ClaimVerdict::NotMeasured;
  std::string detail;
  // The level each group was judged at (its interval covers 1 - alpha):
  // compare's looks are stricter than one judgment (remeasure.hpp), so a
  // reader comparing two outputs needs it.
  double alpha = 0;
  // Groups whose interval straddles the threshold: what measuring them again
  // could decide (a group judged against several rows: all its undecided ones).
  struct Inconclusive {
    std::string shape, precision;
    int threads = 1;
    int trials = 0;               // the trials the interval came from
    double trials_to_decide = 0;  // about as many as would narrow it off the threshold (width ~ 1/sqrt(trials))
    std::vector<BenchKey> rows;   // the rows it was judged on: what to measure again
    int set_aside = 0;            // trials measured but left out (pace.hpp): new ones may be too
    std::string name() const { return claim_group_name(shape, precision, threads); }
  };
  std::vector<Inconclusive> inconclusive_groups;
  // Groups whose whole interval fails the threshold, and whether a row the
  // claim reads failed its own verdict (a wrong answer: no replicate undoes it).
  struct Failing {
    std::string shape, precision;
    int threads = 1;
    std::vector<BenchKey> rows;  // the rows it was judged on
    std::string name() const { return claim_group_name(shape, precision, threads); }
  };
  std::vector<Failing> failing_groups;
  bool failed_rows = false;
  // every judged group's "value [lo, hi]" (or "disturbed (...)"), by claim_group_name
  std::map<std::string, std::string> figures;
};

// peak_kind maps precision -> fp32 | fp64 | bandwidth (family.yaml `peak`).
// family_shapes: every shape of the family (what "all" means). alpha: the
// level of every interval; a run that judges a table more than once, adding
// trials in between, judges each look at a smaller one (remeasure.hpp).
std::vector<ClaimResult> evaluate_claims(const std::vector<Contract>& contracts, const std::string& family,
                                         const BenchTable& table, const PeakResult* peak,
                                         const std::map<std::string, std::string>& peak_kind,
                                         const std::vector<std::string>& family_shapes, double alpha = 0.05);

// Writes {"claims":[...]} to path, keeping entries of other families already there.
void write_claims_json(const std::string& path, const std::string& family, const std::vector<ClaimResult>& results);

}  // namespace popper::bench
