#include "bench/plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "bench/check.hpp"
#include "bench/interval.hpp"
#include "bench/stats.hpp"
#include "popper/error.hpp"

namespace popper::bench {

double planning_alpha(const CompareOptions& co) {
  const std::size_t rows_estimate = std::max<std::size_t>(1, co.threads.size() * co.precisions.size() * 3 * 4);
  return Thresholds{}.alpha / static_cast<double>(rows_estimate);
}

std::string noise_source(const std::string& noise_from, const std::string& source_dir, const std::string& fingerprint,
                         const std::string& family) {
  if (!noise_from.empty()) return noise_from;
  const std::string committed = source_dir + "/baselines/" + fingerprint + "/" + family + ".csv";
  return std::filesystem::exists(committed) ? committed : "";
}

int trials_to_flag(double sigma, double alpha) {
  const Thresholds th;
  return trials_for_power(sigma, 1 + 2 * th.regression, 1 + th.regression, alpha, 0.8);
}

namespace {

int parse_count(const std::string& v, const char* what) {
  try {
    std::size_t used = 0;
    const int n = std::stoi(v, &used);
    if (used != v.size() || n < 1 || n > 1000) throw std::invalid_argument(v);
    return n;
  } catch (const std::exception&) {
    throw Error(std::string("--") + what + " wants auto or a count in 1..1000, got '" + v + "'");
  }
}

}  // namespace

TrialPlan plan_trials(const CompareOptions& co, const TrialRequest& request) {
  const int reps = request.reps == "auto" ? 0 : parse_count(request.reps, "reps");
  const int trials = request.trials == "auto" ? 0 : parse_count(request.trials, "trials");
  if (reps == 1 || trials == 1)
    throw Error(
        "one repetition (or one trial) per step can never reach significance: the noise between processes is "
        "unknown; the minimum is --reps 2 (two trials of one repetition)");
  TrialPlan plan;
  plan.sigma_from = "a 3% prior (no earlier run of this machine to measure it from)";
  // The noise: the largest between-trial sd of log medians over the rows of an earlier run.
  if (!request.noise_csv.empty()) {
    double worst = 0;
    for (const auto& r : read_bench_csv(request.noise_csv).rows)
      if (r.unit == kUnitSeconds && !r.samples.empty())
        worst = std::max(worst, between_trial_log_sd({&r.samples, &r.trials}));
    if (worst > 0) {
      plan.sigma = worst;
      plan.sigma_from = request.noise_csv;
    }
  }
  plan.needed = trials_to_flag(plan.sigma, planning_alpha(co));
  if (trials > 0) plan.trials = trials;
  else if (reps > 0) plan.trials = std::min(reps, std::max(plan.needed, 2));
  else plan.trials = plan.needed;
  if (reps > 0) plan.reps_per_trial = (reps + plan.trials - 1) / plan.trials;
  else if (co.turns) plan.reps_per_trial = kRepetitionsInTurns;
  if (trials == 0 && reps == 0) {
    // About (1 + reps) x min_time per process, for every step of a trial.
    const double per_trial = 1.3 * (1 + plan.reps_per_trial) * std::max(co.min_time, 0.05) *
                             static_cast<double>(co.threads.size() * co.precisions.size() * co.tiers.size() * 4);
    if (per_trial * plan.trials > request.budget)
      plan.trials = std::max(2, static_cast<int>(request.budget / per_trial));
    plan.budget_seconds = request.budget;  // the estimate above can be far off; the run enforces it per trial
    // Steps noisier than sigma get up to a third as many trials again (compare.hpp):
    // the default gemm run stays within about 4 minutes on 2 cores.
    plan.top_up_trials = (plan.trials + 2) / 3;
    plan.top_up_alpha = planning_alpha(co);
  }
  return plan;
}

void apply(const TrialPlan& plan, CompareOptions& co) {
  co.trials = plan.trials;
  co.reps_per_trial = plan.reps_per_trial;
  co.budget_seconds = plan.budget_seconds;
  co.top_up_trials = plan.top_up_trials;
  co.top_up_alpha = plan.top_up_alpha;
}

std::string describe(const TrialPlan& plan) {
  std::ostringstream out;
  out << "trials: " << plan.trials << " x " << plan.reps_per_trial << " repetitions per step (between-trial noise "
      << static_cast<int>(std::round(plan.sigma * 1000)) / 10.0 << "% from " << plan.sigma_from << "; " << plan.needed
      << " trials flag a 20% slowdown with 80% power)";
  if (plan.top_up_trials > 0) out << "; up to " << plan.top_up_trials << " more for the steps noisier than that";
  out << "\n";
  if (plan.trials < plan.needed)
    out << "warning: " << plan.trials << " trials are fewer than the " << plan.needed
        << " that power needs: a real slowdown may come out NOISY\n";
  return out.str();
}

bool record_noise(BenchTable& table, const CompareOptions& co, double planned_sigma) {
  std::vector<double> sd, trials;  // trials: the planned ones and any top-up (compare.hpp)
  for (const auto& r : table.rows)
    if (r.unit == kUnitSeconds && r.key.tier != Tier::Ceiling && trial_count({&r.samples, &r.trials}) >= 2) {
      sd.push_back(between_trial_log_sd({&r.samples, &r.trials}));
      trials.push_back(trial_count({&r.samples, &r.trials}));
    }
  if (sd.empty() || co.trials < 2) return false;
  const double noise = median(sd);
  const int n = static_cast<int>(median(trials));
  const double slowdown = detectable_ratio(noise, n, 1 + Thresholds{}.regression, planning_alpha(co), 0.8);
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "median %.1f%% over %zu rows (hand, wrapped, reference); trials were planned for %.1f%%", 100 * noise,
                sd.size(), 100 * planned_sigma);
  table.set_meta("noise_between_trials", buf);
  std::snprintf(buf, sizeof buf, "%.2fx at 80%% power (%d trials a side, at this noise)", slowdown, n);
  table.set_meta("detectable_slowdown", buf);
  return true;
}

}  // namespace popper::bench
