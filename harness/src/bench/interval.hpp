// Ratios of medians with their uncertainty, resampled at the level that
// carries the noise. Samples come in trials (one process each); the variation
// between trials (clock, neighbours, page placement, warm-up order) is larger
// than within one, so repetitions of one process are not independent samples.
//
// Two-level bootstrap of R = median(num) / median(den):
//   repeat B times: draw the trials of each side with replacement, then the
//   samples within each drawn trial with replacement; R* = ratio of medians.
//   Paired (both sides measured in the same trials, e.g. two tiers of one
//   run): R = the median over trials of each trial's own ratio of medians,
//   and R* the same over a draw of trials (each drawn trial's samples
//   resampled on both sides), so noise a trial's two sides share cancels in
//   its ratio. A ratio of the pooled medians would not: on a host that placed
//   whole trials on one CCD or two, each side's pooled median fell on
//   whichever trial sat mid-pack, and two such trials' times differed by more
//   than the 2% a claim was judged on.
// Interval: the alpha/2 and 1 - alpha/2 percentiles of R*.
// Test against a threshold c: t = (log R - log c) / se, with
// df = trials(num) + trials(den) - 2 (paired: trials - 1) degrees of freedom;
// one-sided p from Student's t. se is the spread of log R* on the side where
// c lies, read off the interval's end on that side: (median - alpha/2
// percentile) / z for R > c, (1 - alpha/2 percentile - median) / z for R < c,
// z the normal's 1 - alpha/2 quantile (for a normal R* both are its sd, as
// with the central 68% the planning uses: log_se). A skewed R* (some trials
// much faster than the rest) no longer widens the side it does not reach: a
// row whose whole interval lies below the regression threshold is not NOISY.
// With df < 1 the between-trial noise cannot be estimated and no test is
// possible (`testable()` is false).
#pragma once
#include <cstdint>
#include <vector>

namespace popper::bench {

struct TrialSamples {
  const std::vector<double>* samples;
  const std::vector<int>* trials;  // same length as samples; empty = all one trial
};

struct RatioInterval {
  double ratio = 0;  // median(num) / median(den) over all samples; paired: the median trial_ratio
  double lo = 0, hi = 0;
  double log_se = 0;                          // bootstrap standard error of log(ratio) (robust: half the central 68%)
  double log_se_below = 0, log_se_above = 0;  // one side each, from lo and hi (see above)
  int df = 0;
  bool testable() const { return df >= 1 && log_se > 0; }
};

// One trial's ratio of its two sides' samples: the median of the ratios of
// their repetitions in order, the k-th over the k-th, when both sides kept as
// many (run in turns, the k-th of each ran next to the other: popper/turns.h);
// else median(num) / median(den).
double trial_ratio(const std::vector<double>& num, const std::vector<double>& den);

// `q` other than 0.5: the ratio of the q-quantiles instead (the check judges
// lower quartiles: check.hpp says why).
RatioInterval ratio_interval(const TrialSamples& num, const TrialSamples& den, double alpha = 0.05,
                             int resamples = 2000, std::uint64_t seed = 1, double q = 0.5);
// Both sides from the same trials (trial ids shared); only trials present on both sides are used.
RatioInterval paired_ratio_interval(const TrialSamples& num, const TrialSamples& den, double alpha = 0.05,
                                    int resamples = 2000, std::uint64_t seed = 1);

// Distribution-free interval of the median per-trial ratio: r_t =
// trial_ratio(num in trial t, den in trial t) over the n trials both sides
// share, sorted; [r_(k), r_(n+1-k)] for the largest k with
// P(Binomial(n, 1/2) < k) <= alpha/2 (the sign test's interval; below 6
// trials at alpha 0.05 no k qualifies and it is [min, max]). The bootstrap of
// medians above undercovers with few trials; this one keeps its coverage, and
// a trial disturbed on one side only moves one r_t, which the interval spans
// until enough trials outvote it. Claims are judged on the union of both.
struct TrialRatioSpan {
  double lo = 0, hi = 0;
  int trials = 0;  // shared trials; 0: none, the span is empty
  struct Ratio {
    double ratio;
    int trial;
  };
  std::vector<Ratio> ratios;  // the r_t, ascending
};
TrialRatioSpan trial_ratio_span(const TrialSamples& num, const TrialSamples& den, double alpha = 0.05);

// The k above for n trials.
int sign_test_rank(int n, double alpha = 0.05);
// The fewest trials whose sign-test interval leaves out `outside` of their
// ratios on one side (k = outside + 1): 6 for none (below that even [min, max]
// covers the median less often than 1 - alpha), 9 for one, 12 for two at
// alpha 0.05; 8, 11, 15 at 0.0125. Trials that read on the far side of a
// threshold are outvoted only by that many; narrowing the bootstrap alone
// does not reach them. A ratio judged on fewer than sign_test_trials(0)
// trials is inconclusive (claims.hpp).
int sign_test_trials(int outside, double alpha = 0.05);

// Interval of one row's median itself (the same two-level bootstrap, against
// a constant): what the report's error bars show. `ratio` is the median.
RatioInterval median_interval(const TrialSamples& s, double alpha = 0.05, int resamples = 2000, std::uint64_t seed = 1);

// One-sided p-values: the evidence that the true ratio is above (below) c.
// 1 when the interval is not testable.
double p_ratio_above(const RatioInterval& r, double c);
double p_ratio_below(const RatioInterval& r, double c);

// Benjamini-Hochberg step-up: rejected[i], controlling the false discovery
// rate at q. When no row truly changed (a clean check) every rejection is
// false, so the chance of any is at most q, as with a family-wise method; when
// several rows did change, it rejects far more of them than Holm's step-down
// (which needs p < q / rows for the first), so a slowdown of every hand row is
// not lost among a table of unchanged vendor rows.
std::vector<bool> benjamini_hochberg(const std::vector<double>& p, double q);

// Student's t: upper tail P(T > t) with df degrees of freedom (df >= 1).
double student_t_upper(double t, double df);

// Noise of one row from its own samples: the standard deviation of log
// per-trial medians (between-trial), 0 with fewer than two trials.
double between_trial_log_sd(const TrialSamples& s);
int trial_count(const TrialSamples& s);

// Trials per side so that a true ratio of `effect` (e.g. 1.25) is judged
// above `threshold` (e.g. 1.10) with probability `power`, at one-sided level
// `alpha`, when each side's between-trial sd of log medians is `sigma`.
// At least 2 (a test needs df >= 1 per comparison).
int trials_for_power(double sigma, double effect, double threshold, double alpha, double power);

// The inverse: the smallest true ratio that `trials` per side judge above
// `threshold` with probability `power` (at most 100 x threshold).
double detectable_ratio(double sigma, int trials, double threshold, double alpha, double power);

}  // namespace popper::bench
