// The plausibility rule of vendor rows (plausibility.hpp).
#include "bench/plausibility.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "bench/stats.hpp"

namespace popper::bench {
namespace {

bool timed(const BenchRow& r) { return r.unit == kUnitSeconds && !r.samples.empty() && r.median() > 0; }

// Same family, shape, precision and cache mode: rows that measure the same work.
bool same_work(const BenchKey& a, const BenchKey& b) {
  return a.family == b.family && a.shape == b.shape && a.precision == b.precision && a.cache_mode == b.cache_mode;
}

std::string scaling_reason(const BenchTable& t, const BenchRow& r, const PlausibilityRule& rule) {
  const BenchRow* worst = nullptr;
  double worst_ratio = 0;
  for (const auto& q : t.rows) {
    if (!timed(q) || q.key.tier != r.key.tier || q.key.backend != r.key.backend || !same_work(q.key, r.key) ||
        q.key.threads >= r.key.threads)
      continue;
    const double ratio = q.median() / r.median();  // throughput(R) / throughput(Q)
    if (ratio < rule.min_scaling && (!worst || ratio < worst_ratio)) worst = &q, worst_ratio = ratio;
  }
  if (!worst) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf, "%d threads at %.3g× its %d-thread throughput (below %.3g×)", r.key.threads,
                worst_ratio, worst->key.threads, rule.min_scaling);
  return buf;
}

std::string scatter_reason(const BenchTable& t, const BenchRow& r, const PlausibilityRule& rule) {
  if (r.samples.size() < 2 || r.key.tier != Tier::Ceiling) return "";
  std::vector<double> others;
  std::set<int> their_trials;
  for (const auto& q : t.rows)
    if (&q != &r && q.key.tier == Tier::Ceiling && timed(q) && q.samples.size() > 1 && same_work(q.key, r.key) &&
        q.key.threads == r.key.threads) {
      others.push_back(coefficient_of_variation(q.samples));
      their_trials.merge(q.trials_ran());
    }
  if (others.empty()) return "";
  // R's scatter over the trials its neighbours ran too: a row measured again
  // in hundreds more trials (a claim's group) meets the host's rare outliers
  // that its neighbours' few trials never saw.
  std::vector<double> shared;
  for (std::size_t i = 0; i < r.samples.size(); ++i)
    if (their_trials.count(r.trial_of(i))) shared.push_back(r.samples[i]);
  const double cv = coefficient_of_variation(shared.size() > 1 ? shared : r.samples), usual = median(others);
  if (cv <= rule.cv_floor || cv <= rule.cv_factor * usual) return "";
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "cv %.1f%% against a median %.1f%% of the %zu other ceiling rows of its shape and threads", 100 * cv,
                100 * usual, others.size());
  return buf;
}

}  // namespace

std::vector<ImplausibleRow> implausible_vendor_rows(const BenchTable& t, const PlausibilityRule& rule) {
  const auto wrapped_vendor = t.meta("wrapped_vendor");
  const bool wrapped_rows_too = wrapped_vendor && !wrapped_vendor->empty();
  std::vector<ImplausibleRow> out;
  for (const auto& r : t.rows) {
    const bool vendor = r.key.tier == Tier::Ceiling || (wrapped_rows_too && r.key.tier == Tier::Wrapped);
    if (!vendor || !timed(r)) continue;
    std::string reason = scaling_reason(t, r, rule);
    const std::string scatter = scatter_reason(t, r, rule);
    if (!scatter.empty()) reason += (reason.empty() ? "" : "; ") + scatter;
    if (!reason.empty()) out.push_back({r.key, reason});
  }
  return out;
}

std::vector<BenchKey> rows_to_remeasure(const BenchTable& t, const std::vector<ImplausibleRow>& suspects) {
  std::vector<BenchKey> keys;
  for (const auto& r : t.rows) {
    const bool grouped = std::any_of(suspects.begin(), suspects.end(), [&](const ImplausibleRow& s) {
      return same_work(s.key, r.key) && s.key.threads == r.key.threads;
    });
    if (grouped && timed(r)) keys.push_back(r.key);
  }
  return keys;
}

void mark_invalid_vendor_rows(BenchTable& t, const PlausibilityRule& rule) {
  const auto bad = implausible_vendor_rows(t, rule);
  std::vector<std::string> listed;
  for (auto& r : t.rows) {
    r.invalid_reason.clear();
    for (const auto& b : bad)
      if (b.key == r.key) {
        r.invalid_reason = b.reason;
        listed.push_back(r.key.to_string() + ": " + b.reason);
      }
  }
  if (listed.empty()) std::erase_if(t.metadata, [](const auto& kv) { return kv.first == "invalid_vendor_rows"; });
  else t.set_meta_list("invalid_vendor_rows", listed);
}

}  // namespace popper::bench
