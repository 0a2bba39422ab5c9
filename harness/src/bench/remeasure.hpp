// Measuring rows of a table again, in new trials, and adding the new samples
// to it (through merge_rows): `bench compare` for the groups whose claims came
// out inconclusive, `bench check --rerun` for NOISY and REGRESSION rows.
#pragma once
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/check.hpp"
#include "bench/claims.hpp"
#include "bench/csv.hpp"
#include "bench/family.hpp"
#include "bench/peak.hpp"

namespace popper::bench {

// The first trial id after every trial of `t` (new samples never share one).
int next_trial(const BenchTable& t);

// Adds the samples (and trials) of `extra`'s rows to the rows of `table` with
// the same key; a row `table` does not hold is left out.
void add_samples(BenchTable& table, const BenchTable& extra);

// A claim's groups are judged once, then again after each round of new
// trials: up to kClaimLooks looks, each at kClaimAlpha / kClaimLooks
// (Bonferroni over the looks), so that stopping at whichever look decides a
// group keeps the chance of a wrong met or not met within kClaimAlpha, as one
// judgment of a fixed number of trials at kClaimAlpha has. Six: on a busy
// host, where the pace filter sets aside half a group's trials, a group near
// its threshold needs more than three re-measure rounds, and at 0.05 / 6 the
// fewest trials a look decides on are still 8 (sign_test_trials).
inline constexpr int kClaimLooks = 6;
inline constexpr double kClaimAlpha = 0.05;
inline constexpr double kLookAlpha = kClaimAlpha / kClaimLooks;

struct ClaimRemeasure {
  // Judges the claims on a table, every interval at level alpha.
  std::function<std::vector<ClaimResult>(const BenchTable&, double alpha)> judge;
  // Measures these rows (restrict_to_rows) in `trials` new trials, numbered from first_trial.
  std::function<BenchTable(const std::vector<BenchKey>& rows, int first_trial, int trials)> measure;
  int first_trial = 0;
  // A group is measured again while its estimate (ClaimResult::Inconclusive)
  // says at most this many trials decide it. A gemm group whose ratio sits
  // 1% under a 2% threshold (small_64 f32, wrapped/ceiling ~1.01, an sd of
  // 2-4% between trials) needs 200-300 kept trials to decide at kLookAlpha:
  // 2-3 minutes for its two rows.
  int max_trials = 384;
  double budget_seconds = 0;  // of the whole run, counted from `started`
  std::chrono::steady_clock::time_point started;
  std::function<void(const std::string&)> progress;
};

// Every round adds this many times the trials a group's estimate still
// lacks, scaled up by the share of its trials set aside so far (at least 2,
// rounded up to a multiple of 4 so that groups lacking about as many are
// measured in one run), taking the group to at most max_trials and at most
// kRoundGrowth times the trials it has: an estimate from a few trials is
// noise, and a round sized by it alone can spend the budget on one group.
// The groups nearest a decision are measured first; a round that falls short
// spends one of the few looks.
inline constexpr double kRoundMargin = 1.5;
inline constexpr double kRoundGrowth = 4;
// A group whose estimate is beyond max_trials is still measured, kRoundGrowth
// times its trials a round, until it has this many.
inline constexpr double kWideGroupTrials = 96;

// Judges the claims at kLookAlpha; while some are inconclusive on groups
// that max_trials can decide (or that have fewer than kWideGroupTrials),
// looks are left and the budget is not spent,
// measures the rows those groups were judged on (a wrapped row and its
// ceiling: two processes a trial, not the shape's every tier and
// configuration) in a round of new trials, adds the samples to `table`
// (percent of peak recomputed) and judges again. Returns the last verdicts.
//
// A "not met" must replicate: the groups that failed a claim are measured
// again in as many new trials (at least kReplicateTrials), judged on those
// trials alone, once each. A group that fails again confirms the verdict;
// when none of a claim's failing groups does, the claim is inconclusive (two
// measurements of one build disagree: a disturbance that lasted one run), and
// its detail gives both figures. A claim failed by a wrong answer is not
// replicated. Without budget left for the replicate, or when it measured
// nothing of the group, the verdict stands and says it was not replicated.
// 8: the fewest trials a look at kLookAlpha judges (sign_test_trials).
inline constexpr int kReplicateTrials = 8;
std::vector<ClaimResult> judge_claims_remeasuring(BenchTable& table, const FamilyDescriptor& fam,
                                                  const PeakResult* peak, const ClaimRemeasure& how);

// check --rerun measures under the baseline's recorded environment, with the
// current run's POPPER_BENCH_INJECT_SLOWDOWN (empty: none) in place of any the
// baseline recorded: new samples join the current's, so they must measure what
// it measured, never an injected slowdown this process happens to have.
Environment rerun_environment(const BenchTable& baseline, const BenchTable& current);

// CheckOptions::remeasure for check --rerun: each call measures the rows asked
// for in one run of 2 trials (so a row and its ceiling share the machine's
// state), ceiling configurations unscreened, trials numbered from first_trial
// on; rows of the run's cross product that were not asked for are dropped.
Remeasure rerun_measure(const std::string& source_dir, const std::string& build_dir, const Environment& env,
                        int first_trial, const std::function<void(const std::string&)>& progress);

// check --rerun's interleaved re-measure (CheckOptions::interleave): each call
// runs one trial of the rows asked for, on `base_build` under `base_env` (the
// baseline's side) or on `build_dir` under `current_env`; trial ids count on
// from first_trial across both sides, in the order the trials ran.
Interleave interleaved_measure(const std::string& source_dir, const std::string& build_dir,
                               const Environment& current_env, const std::string& base_build,
                               const Environment& base_env, int first_trial,
                               const std::function<void(const std::string&)>& progress);

// The build that measures the baseline's side: this one when the baseline and
// `current` were measured at the commit the source tree is at, unmodified
// (a check of the code against itself); else the baseline's commit
// built in build_dir/gate-ref (bench/gate.hpp, cached); nullopt, with the
// reason in `why`, when the baseline's commit is unknown, had uncommitted
// changes, or cannot be built here.
struct BaselineBuildOptions {
  std::string source_dir, build_dir;
  int jobs = 2;
  std::function<void(const std::string&)> progress;
};
std::optional<std::string> baseline_build(const BenchTable& baseline, const BenchTable& current,
                                          const BaselineBuildOptions& opt, std::string& label, std::string& why);

}  // namespace popper::bench
