// Trial-aware bootstrap intervals, t tests, Benjamini-Hochberg and power (interval.hpp).
#include "bench/interval.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <utility>

#include "bench/stats.hpp"
#include "popper/error.hpp"

namespace popper::bench {

namespace {

// Samples grouped by trial id, in trial-id order.
std::map<int, std::vector<double>> by_trial(const TrialSamples& s) {
  std::map<int, std::vector<double>> out;
  const auto& v = *s.samples;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const int t = s.trials && i < s.trials->size() ? (*s.trials)[i] : 0;
    out[t].push_back(v[i]);
  }
  return out;
}

// The q-quantile of one two-level resample of the given trials (drawn indices into `groups`).
double resampled_quantile(const std::vector<const std::vector<double>*>& groups, const std::vector<std::size_t>& draw,
                          double q, std::mt19937_64& rng, std::vector<double>& pool) {
  pool.clear();
  for (std::size_t g : draw) {
    const auto& v = *groups[g];
    std::uniform_int_distribution<std::size_t> pick(0, v.size() - 1);
    for (std::size_t k = 0; k < v.size(); ++k) pool.push_back(v[pick(rng)]);
  }
  std::sort(pool.begin(), pool.end());
  return quantile_of_sorted(pool, q);
}

// A trial whose two sides kept as many repetitions is judged on their pairs,
// the k-th of one over the k-th of the other: run in turns, those two ran
// next to each other (popper/turns.h). Empty otherwise.
std::vector<double> repetition_ratios(const std::vector<double>& num, const std::vector<double>& den) {
  std::vector<double> out;
  if (num.size() != den.size()) return out;
  for (std::size_t k = 0; k < num.size(); ++k) out.push_back(num[k] / den[k]);
  return out;
}

// trial_ratio, given the trial's repetition_ratios.
double trial_ratio(const std::vector<double>& pairs, const std::vector<double>& num, const std::vector<double>& den) {
  return pairs.empty() ? median(num) / median(den) : median(pairs);
}

// z with P(Z > z) = p for a standard normal, by bisection.
double normal_upper_quantile(double p) {
  double lo = 0, hi = 40;
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(mid / std::sqrt(2.0)) > p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

RatioInterval summarize(std::vector<double>& logs, double ratio, double alpha, int df) {
  RatioInterval r;
  r.ratio = ratio;
  r.df = df;
  std::sort(logs.begin(), logs.end());
  auto pct = [&](double q) {
    const double pos = q * static_cast<double>(logs.size() - 1);
    const auto i = static_cast<std::size_t>(pos);
    const double f = pos - static_cast<double>(i);
    return i + 1 < logs.size() ? logs[i] * (1 - f) + logs[i + 1] * f : logs[i];
  };
  r.lo = std::exp(pct(alpha / 2));
  r.hi = std::exp(pct(1 - alpha / 2));
  // The spread from the central 68% (one normal sd either side), not the
  // sample sd: a few resamples that drew mostly delayed trials sit far out
  // and would inflate the sd of an otherwise narrow distribution.
  if (logs.size() > 1) {
    r.log_se = 0.5 * (pct(0.841345) - pct(0.158655));
    // Each side's spread from the printed interval's end on that side, in
    // normal sds (z = 1.96 at alpha 0.05): the tail a one-sided test needs.
    const double z = normal_upper_quantile(alpha / 2);
    r.log_se_below = (pct(0.5) - pct(alpha / 2)) / z;
    r.log_se_above = (pct(1 - alpha / 2) - pct(0.5)) / z;
  }
  return r;
}

void check_nonempty(const TrialSamples& s, const char* side) {
  if (!s.samples || s.samples->empty()) throw InvalidArgument(std::string("ratio interval: no ") + side + " samples");
  for (double x : *s.samples)
    if (!(x > 0) || !std::isfinite(x))
      throw InvalidArgument(std::string("ratio interval: a ") + side + " sample is not positive");
}

// Regularized incomplete beta I_x(a, b) by its continued fraction (Lentz).
double betacf(double a, double b, double x) {
  const double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a - 1 + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1 + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-15) break;
  }
  return h;
}

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  return x < (a + 1) / (a + b + 2) ? front * betacf(a, b, x) / a : 1 - front * betacf(b, a, 1 - x) / b;
}

// Upper quantile: t with P(T > t) = p, by bisection.
double t_upper_quantile(double p, double df) {
  double lo = 0, hi = 1e3;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (student_t_upper(mid, df) > p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

double student_t_upper(double t, double df) {
  if (df < 1) throw InvalidArgument("student_t_upper: df must be >= 1");
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
  return t >= 0 ? tail : 1 - tail;
}

double trial_ratio(const std::vector<double>& num, const std::vector<double>& den) {
  return trial_ratio(repetition_ratios(num, den), num, den);
}

RatioInterval ratio_interval(const TrialSamples& num, const TrialSamples& den, double alpha, int resamples,
                             std::uint64_t seed, double q) {
  check_nonempty(num, "numerator");
  check_nonempty(den, "denominator");
  const auto gn = by_trial(num), gd = by_trial(den);
  std::vector<const std::vector<double>*> vn, vd;
  for (const auto& [t, v] : gn) vn.push_back(&v);
  for (const auto& [t, v] : gd) vd.push_back(&v);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pn(0, vn.size() - 1), pd(0, vd.size() - 1);
  std::vector<double> logs, pool;
  std::vector<std::size_t> dn(vn.size()), dd(vd.size());
  for (int b = 0; b < resamples; ++b) {
    for (auto& i : dn) i = pn(rng);
    for (auto& i : dd) i = pd(rng);
    logs.push_back(std::log(resampled_quantile(vn, dn, q, rng, pool) / resampled_quantile(vd, dd, q, rng, pool)));
  }
  const int df = static_cast<int>(vn.size() + vd.size()) - 2;
  return summarize(logs, quantile(*num.samples, q) / quantile(*den.samples, q), alpha, df);
}

RatioInterval median_interval(const TrialSamples& s, double alpha, int resamples, std::uint64_t seed) {
  static const std::vector<double> one{1.0};
  static const std::vector<int> trial0{0};
  RatioInterval r = ratio_interval(s, TrialSamples{&one, &trial0}, alpha, resamples, seed);
  r.df = trial_count(s) - 1;
  return r;
}

RatioInterval paired_ratio_interval(const TrialSamples& num, const TrialSamples& den, double alpha, int resamples,
                                    std::uint64_t seed) {
  check_nonempty(num, "numerator");
  check_nonempty(den, "denominator");
  const auto gn = by_trial(num), gd = by_trial(den);
  std::vector<const std::vector<double>*> vn, vd;
  std::vector<std::vector<double>> pairs;  // each shared trial's repetition_ratios
  std::vector<double> trial_logs;          // each shared trial's log ratio (trial_ratio)
  for (const auto& [t, v] : gn)
    if (auto it = gd.find(t); it != gd.end()) {
      vn.push_back(&v);
      vd.push_back(&it->second);
      pairs.push_back(repetition_ratios(v, it->second));
      trial_logs.push_back(std::log(trial_ratio(pairs.back(), v, it->second)));
    }
  if (vn.empty()) return ratio_interval(num, den, alpha, resamples, seed);  // no shared trial: unpaired
  std::vector<const std::vector<double>*> vp;
  for (const auto& p : pairs) vp.push_back(&p);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, vn.size() - 1);
  std::vector<double> logs, pool, drawn(vn.size());
  std::vector<std::size_t> trial(1);
  for (int b = 0; b < resamples; ++b) {
    for (auto& d : drawn) {
      trial[0] = pick(rng);
      d = pairs[trial[0]].empty()
              ? std::log(resampled_quantile(vn, trial, 0.5, rng, pool) / resampled_quantile(vd, trial, 0.5, rng, pool))
              : std::log(resampled_quantile(vp, trial, 0.5, rng, pool));
    }
    logs.push_back(median(drawn));
  }
  return summarize(logs, std::exp(median(trial_logs)), alpha, static_cast<int>(vn.size()) - 1);
}

namespace {
// P(B <= j), B ~ Binomial(n, 1/2).
double sign_tail(int n, int j) {
  double tail = 0, term = std::pow(0.5, n);
  for (int i = 0; i <= j; ++i) {
    tail += term;
    term *= static_cast<double>(n - i) / (i + 1);
  }
  return tail;
}
}  // namespace

int sign_test_rank(int n, double alpha) {
  // k - 1 = the largest j with P(B <= j) <= alpha/2; k at least 1.
  int k = 1;
  for (int j = 0; j < n / 2 && sign_tail(n, j) <= alpha / 2; ++j) k = j + 1;
  return k;
}

int sign_test_trials(int outside, double alpha) {
  int n = std::max(outside, 1);
  while (sign_tail(n, outside) > alpha / 2) ++n;
  return n;
}

TrialRatioSpan trial_ratio_span(const TrialSamples& num, const TrialSamples& den, double alpha) {
  const auto gn = by_trial(num), gd = by_trial(den);
  std::vector<TrialRatioSpan::Ratio> r;
  for (const auto& [t, v] : gn)
    if (auto it = gd.find(t); it != gd.end() && !v.empty() && !it->second.empty())
      r.push_back({trial_ratio(v, it->second), t});
  if (r.empty()) return {};
  std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.ratio < b.ratio; });
  const int n = static_cast<int>(r.size());
  const int k = sign_test_rank(n, alpha);
  const double lo = r[static_cast<std::size_t>(k - 1)].ratio, hi = r[static_cast<std::size_t>(n - k)].ratio;
  return {lo, hi, n, std::move(r)};
}

namespace {
// The spread on one side, or both sides' when that side has none (every
// resample on it tied with the median).
double side_se(const RatioInterval& r, double one_side) { return one_side > 0 ? one_side : r.log_se; }
}  // namespace

double p_ratio_above(const RatioInterval& r, double c) {
  if (!r.testable()) return 1;
  return student_t_upper((std::log(r.ratio) - std::log(c)) / side_se(r, r.log_se_below), r.df);
}

double p_ratio_below(const RatioInterval& r, double c) {
  if (!r.testable()) return 1;
  return student_t_upper((std::log(c) - std::log(r.ratio)) / side_se(r, r.log_se_above), r.df);
}

std::vector<bool> benjamini_hochberg(const std::vector<double>& p, double q) {
  std::vector<std::size_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p[a] < p[b]; });
  const double m = static_cast<double>(p.size());
  // Step up: the largest rank k with p_(k) <= k q / m; ranks 1..k are rejected.
  std::size_t k = 0;
  for (std::size_t r = order.size(); r > 0; --r)
    if (p[order[r - 1]] <= static_cast<double>(r) * q / m) {
      k = r;
      break;
    }
  std::vector<bool> rejected(p.size(), false);
  for (std::size_t r = 0; r < k; ++r) rejected[order[r]] = true;
  return rejected;
}

double between_trial_log_sd(const TrialSamples& s) {
  const auto g = by_trial(s);
  if (g.size() < 2) return 0;
  std::vector<double> logs;
  logs.reserve(g.size());
  for (const auto& [t, v] : g) logs.push_back(std::log(median(v)));
  return stddev(logs);
}

int trial_count(const TrialSamples& s) { return static_cast<int>(by_trial(s).size()); }

namespace {
// P(reject "ratio <= threshold") for a true ratio `effect`, t trials a side:
// P(T_df > t_crit - gap / se).
double power_of(double sigma, double effect, double threshold, double alpha, int t) {
  const double df = 2.0 * t - 2;
  const double se = sigma * std::sqrt(2.0 / t);
  const double gap = std::log(effect) - std::log(threshold);
  if (se <= 0) return gap > 0 ? 1 : 0;
  return student_t_upper(t_upper_quantile(alpha, df) - gap / se, df);
}
}  // namespace

int trials_for_power(double sigma, double effect, double threshold, double alpha, double power) {
  if (!(effect > threshold)) throw InvalidArgument("trials_for_power: the effect must exceed the threshold");
  for (int t = 2; t <= 1000; ++t)
    if (power_of(sigma, effect, threshold, alpha, t) >= power) return t;
  return 1000;
}

double detectable_ratio(double sigma, int trials, double threshold, double alpha, double power) {
  if (trials < 2) throw InvalidArgument("detectable_ratio: a test needs 2 trials a side");
  double lo = threshold, hi = 100 * threshold;  // power rises with the effect
  if (power_of(sigma, hi, threshold, alpha, trials) < power) return hi;
  for (int i = 0; i < 100; ++i) {
    const double mid = std::sqrt(lo * hi);
    (power_of(sigma, mid, threshold, alpha, trials) >= power ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace popper::bench
