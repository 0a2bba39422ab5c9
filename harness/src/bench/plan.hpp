// How many trials a timed run (`popper bench compare`) takes, and the noise
// it then saw. Auto sizes the trials so that a slowdown of twice the
// regression threshold (20%) is flagged with 80% power at planning_alpha, from
// the between-trial noise of an earlier run of this machine (a 3% prior
// without one): trials = trials_for_power(sigma, 1.2, 1.1, alpha, 0.8).
#pragma once
#include <string>

#include "bench/compare.hpp"
#include "bench/csv.hpp"

namespace popper::bench {

// The per-row level trials are planned at: the table's alpha over an estimate
// of its rows, the level one changed row alone must reach (Benjamini-
// Hochberg's first rank; more changed rows are judged at a laxer level).
double planning_alpha(const CompareOptions& co);

// Trials per side that flag a slowdown of twice the regression threshold
// (20%) above it (10%) with 80% power at level `alpha`, at noise `sigma`:
// what the plan sizes the trials by, and the top-up (compare.hpp) a noisy step.
int trials_to_flag(double sigma, double alpha);

struct TrialRequest {
  std::string reps = "auto";    // --reps: repetitions per step in all, or auto
  std::string trials = "auto";  // --trials: processes per step, or auto
  double budget = 1800;         // --budget, seconds (auto trials only)
  std::string noise_csv;        // a bench CSV whose noise sizes auto trials; "" = the 3% prior
};

struct TrialPlan {
  // One repetition per process: the noise is between processes (a second
  // repetition in the same one moved the median by 1-3% where trials differed
  // by 5-25%), so the time buys more trials instead.
  int trials = 2, reps_per_trial = 1;
  int top_up_trials = 0;  // --trials auto: more trials for the steps noisier than sigma
  double top_up_alpha = 0.05;
  double budget_seconds = 0;  // the run's own budget (CompareOptions::budget_seconds), auto only
  double sigma = 0.03;        // the between-trial noise planned for
  std::string sigma_from;     // where it came from
  int needed = 2;             // the trials power needs at that noise
};

// --noise-from when given, else this machine's committed baseline of the
// family (baselines/<fingerprint>/<family>.csv) when there is one, else "".
std::string noise_source(const std::string& noise_from, const std::string& source_dir, const std::string& fingerprint,
                         const std::string& family);

// The plan for co's steps (threads x precisions x tiers). Throws Error on a
// count that is not auto or 1..1000, and on one repetition or one trial (the
// noise between processes would be unknown).
TrialPlan plan_trials(const CompareOptions& co, const TrialRequest& request);
void apply(const TrialPlan& plan, CompareOptions& co);
// "trials: 6 x 2 repetitions per step (...)", and a warning line when the
// trials are fewer than power needs.
std::string describe(const TrialPlan& plan);

// What a finished run can see: the between-trial noise it measured on the
// rows a change can move (not the ceiling's), and the slowdown a check of an
// equally noisy run against it flags with 80% power. Kept in the metadata
// (noise_between_trials, detectable_slowdown), so a NOISY verdict later has
// its cause on record. False (nothing recorded) below two trials.
bool record_noise(BenchTable& table, const CompareOptions& co, double planned_sigma);

}  // namespace popper::bench
