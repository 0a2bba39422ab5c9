// Regression classification; rules in check.hpp.
#include "bench/check.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "bench/duet.hpp"
#include "bench/ingest.hpp"
#include "bench/interval.hpp"
#include "bench/plausibility.hpp"
#include "bench/stats.hpp"
#include "bench/vendors.hpp"

namespace popper::bench {

const char* to_string(Change c) {
  switch (c) {
    case Change::Regression: return "REGRESSION";
    case Change::Warning: return "WARNING";
    case Change::Unchanged: return "UNCHANGED";
    case Change::Improvement: return "IMPROVEMENT";
    case Change::Missing: return "MISSING";
    case Change::Skipped: return "SKIPPED";
    case Change::New: return "NEW";
    case Change::Noisy: return "NOISY";
    case Change::Moved: return "MOVED";
  }
  return "?";
}

Change classify_count_ratio(double ratio, const Thresholds& t) {
  if (ratio > 1 + t.regression) return Change::Regression;
  if (ratio > 1 + t.warning) return Change::Warning;
  if (ratio < 1 - t.warning) return Change::Improvement;
  return Change::Unchanged;
}

int CheckReport::count(Change c) const {
  int n = 0;
  for (const auto& r : rows) n += r.change == c;
  return n;
}

int CheckReport::exit_code(bool strict) const {
  return count(Change::Regression) + count(Change::Missing) + (strict ? count(Change::Noisy) : 0) > 0 ? 1 : 0;
}

namespace {

BenchKey without_backend(BenchKey k) {
  k.backend = "*";
  return k;
}

// The (shape, precision, threads, cache mode) group of a key: its ceiling key.
std::string group_of(const BenchKey& k) {
  BenchKey g = without_backend(k);
  g.tier = Tier::Ceiling;
  return g.to_string();
}

// Best (smallest) ceiling median per (shape, precision, threads, cache mode),
// overall ("") and per trial ("#<t>").
std::map<std::string, double> ceiling_medians(const BenchTable& t) {
  std::map<std::string, double> best;
  auto keep = [&](const std::string& id, double m) {
    auto it = best.find(id);
    if (it == best.end() || m < it->second) best[id] = m;
  };
  for (const auto& r : t.rows) {
    // An implausible ceiling (plausibility.hpp) normalizes nothing.
    if (r.key.tier != Tier::Ceiling || r.samples.empty() || r.unit != kUnitSeconds || !r.valid()) continue;
    const std::string g = group_of(r.key);
    keep(g, r.median());
    std::map<int, std::vector<double>> per;
    for (std::size_t i = 0; i < r.samples.size(); ++i) per[r.trial_of(i)].push_back(r.samples[i]);
    for (const auto& [tr, v] : per) keep(g + "#" + std::to_string(tr), median(v));
  }
  return best;
}

// The row's samples divided by its trial's best ceiling; nullopt without one.
std::optional<BenchRow> normalized(const std::map<std::string, double>& best, const BenchRow& r) {
  const std::string g = group_of(r.key);
  const auto overall = best.find(g);
  if (overall == best.end() || overall->second <= 0) return std::nullopt;
  BenchRow out = r;
  for (std::size_t i = 0; i < out.samples.size(); ++i) {
    const auto it = best.find(g + "#" + std::to_string(r.trial_of(i)));
    out.samples[i] /= it != best.end() ? it->second : overall->second;
  }
  return out;
}

// How far the vendor-library rows moved: the geometric mean of current/baseline
// (the check's quantile) over the ceiling rows both tables hold, and the
// evidence that the whole machine moved beyond the warning band: a one-sided t-test of the mean
// log ratio over the rows (df = rows - 1), or with a single row, that row's own
// trial-level interval. Two rows that disagree are no evidence (df = 1).
struct Drift {
  double ratio = 1;
  int rows = 0;
  double p = 1;  // P-value of "moved no more than the warning band"
};
std::optional<Drift> ceiling_drift(const BenchTable& baseline, const BenchTable& current, const Thresholds& t) {
  std::vector<double> logs;
  const BenchRow *last_base = nullptr, *last_cur = nullptr;  // the pair that decides when it is the only one
  for (const auto& b : baseline.rows) {
    if (b.key.tier != Tier::Ceiling || b.unit != kUnitSeconds || b.samples.empty() || b.median() <= 0 || !b.valid())
      continue;
    for (const auto& c : current.rows)
      if (c.key == b.key && c.unit == b.unit && !c.samples.empty() && c.median() > 0 && c.valid()) {
        logs.push_back(std::log(quantile(c.samples, t.quantile) / quantile(b.samples, t.quantile)));
        last_base = &b;
        last_cur = &c;
      }
  }
  if (logs.empty()) return std::nullopt;
  Drift d;
  d.rows = static_cast<int>(logs.size());
  double mean = 0;
  for (double x : logs) mean += x;
  mean /= static_cast<double>(logs.size());
  d.ratio = std::exp(mean);
  const double band = std::log1p(t.warning);
  if (logs.size() >= 2) {
    double ss = 0;
    for (double x : logs) ss += (x - mean) * (x - mean);
    const double se = std::sqrt(ss / static_cast<double>(logs.size() - 1) / static_cast<double>(logs.size()));
    d.p = se > 0 ? student_t_upper((std::fabs(mean) - band) / se, static_cast<double>(logs.size() - 1))
                 : (std::fabs(mean) > band ? 0.0 : 1.0);
  } else if (const auto one =
                 ratio_interval({&last_cur->samples, &last_cur->trials}, {&last_base->samples, &last_base->trials},
                                t.alpha, 1000, std::hash<std::string>{}(last_base->key.to_string()), t.quantile);
             one.testable()) {
    d.p = student_t_upper((std::fabs(mean) - band) / one.log_se, one.df);
  } else {
    d.p = std::fabs(mean) > band ? 0.0 : 1.0;  // one row of one trial: effect size only, as elsewhere
  }
  return d;
}

// A pair of rows to judge: the (possibly normalized) samples of each side.
struct Pair {
  RowCheck rc;
  BenchRow base, cur;
  bool timed = false;
  bool interleaved = false;  // both sides measured now, in alternating trials (CheckOptions::interleave)
};

void judge(std::vector<Pair>& pairs, const Thresholds& t, std::string& method) {
  std::vector<std::size_t> timed;
  std::vector<double> p_reg, p_warn, p_imp;
  std::vector<RatioInterval> ivs(pairs.size());
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    auto& pr = pairs[i];
    if (pr.rc.change == Change::Missing || pr.rc.change == Change::Skipped || pr.rc.change == Change::New ||
        pr.rc.change == Change::Moved)
      continue;
    auto& rc = pr.rc;
    if (!pr.timed) {  // deterministic counts
      rc.ratio = pr.base.median() > 0 ? pr.cur.median() / pr.base.median() : std::nan("");
      rc.change = std::isnan(rc.ratio) ? Change::Skipped : classify_count_ratio(rc.ratio, t);
      rc.significant = rc.change == Change::Regression;
      rc.p_value = rc.significant ? 0 : 1;
      rc.note = std::isnan(rc.ratio) ? "baseline count is not positive" : "deterministic count";
      continue;
    }
    const TrialSamples b{&pr.base.samples, &pr.base.trials}, c{&pr.cur.samples, &pr.cur.trials};
    rc.trials_base = trial_count(b);
    rc.trials_current = trial_count(c);
    ivs[i] = ratio_interval(c, b, t.alpha, 2000, std::hash<std::string>{}(rc.key.to_string()), t.quantile);
    rc.ratio = ivs[i].ratio;
    rc.lo = ivs[i].lo;
    rc.hi = ivs[i].hi;
    if (!ivs[i].testable()) {  // no between-trial noise estimate: the effect size decides
      rc.change = classify_count_ratio(rc.ratio, t);
      rc.p_value = std::nan("");
      rc.note = "effect size only: " + std::to_string(std::min(rc.trials_base, rc.trials_current)) +
                " trial on a side, no noise estimate (2 per side are needed for a test)";
      continue;
    }
    timed.push_back(i);
    p_reg.push_back(p_ratio_above(ivs[i], 1 + t.regression));
    p_warn.push_back(p_ratio_above(ivs[i], 1 + t.warning));
    p_imp.push_back(p_ratio_below(ivs[i], 1 - t.warning));
  }
  // Two families, each under Benjamini-Hochberg on its own: the vendor
  // (ceiling) rows, which ask whether the machine moved, and the rows of this
  // repository's code, which ask whether it changed. Pooled, the 144 vendor
  // rows of gemm's gate shapes (all null when the code changed) made the 32
  // suite rows' k-th rejection need p <= k alpha / 176, not k alpha / 32.
  std::vector<bool> reg(timed.size()), warn(timed.size()), imp(timed.size());
  for (const bool vendor : {true, false}) {
    std::vector<std::size_t> in;
    std::vector<double> pr, pw, pi;
    for (std::size_t j = 0; j < timed.size(); ++j)
      if ((pairs[timed[j]].rc.key.tier == Tier::Ceiling) == vendor) {
        in.push_back(j);
        pr.push_back(p_reg[j]), pw.push_back(p_warn[j]), pi.push_back(p_imp[j]);
      }
    const auto r = benjamini_hochberg(pr, t.alpha), w = benjamini_hochberg(pw, t.alpha),
               i = benjamini_hochberg(pi, t.alpha);
    for (std::size_t x = 0; x < in.size(); ++x) reg[in[x]] = r[x], warn[in[x]] = w[x], imp[in[x]] = i[x];
  }
  for (std::size_t j = 0; j < timed.size(); ++j) {
    auto& rc = pairs[timed[j]].rc;
    const auto& iv = ivs[timed[j]];
    rc.p_value = p_reg[j];
    rc.significant = reg[j];
    rc.note = fmt::format("trials {} vs {}", rc.trials_current, rc.trials_base);
    if (reg[j]) rc.change = Change::Regression;
    else if (p_ratio_below(iv, 1 + t.regression) > t.alpha) rc.change = Change::Noisy;
    else if (warn[j]) rc.change = Change::Warning;
    else if (imp[j]) rc.change = Change::Improvement;
    else rc.change = Change::Unchanged;
  }
  if (timed.empty()) {  // a gate run: instruction counts only
    method = "instruction counts: exact, judged by their ratio (REGRESSION above " +
             std::to_string(static_cast<int>(std::lround(100 * t.regression))) + "%, WARNING above " +
             std::to_string(static_cast<int>(std::lround(100 * t.warning))) + "%)";
    return;
  }
  std::size_t vendor_rows = 0;
  for (std::size_t j : timed) vendor_rows += pairs[j].rc.key.tier == Tier::Ceiling;
  const std::string what = t.quantile == 0.5 ? "medians" : fmt::format("{:.2f}-quantiles", t.quantile);
  method = fmt::format(
      "timed rows: ratio of the samples' {} with a two-level bootstrap interval (trials, then samples); REGRESSION "
      "when 'ratio > {:.2f}' is rejected by Benjamini-Hochberg at alpha {:.2f} over the {} testable rows of this "
      "repository's code (the {} vendor rows are a family of their own); NOISY when 'ratio < {:.2f}' cannot be "
      "shown at alpha {:.2f}",
      what, 1 + t.regression, t.alpha, timed.size() - vendor_rows, vendor_rows, 1 + t.regression, t.alpha);
}

// Absolute mode, after judging: ceiling rows judged REGRESSION become MOVED,
// and the wrapped rows of their groups are judged again relative to their
// trial's best ceiling (check.hpp).
void judge_moved_groups(std::vector<Pair>& pairs, const std::map<std::string, double>& nb,
                        const std::map<std::string, double>& nc, const Thresholds& t, std::string& method) {
  std::map<std::string, double> moved;  // group -> the ceiling's ratio
  for (auto& p : pairs)
    if (p.timed && p.rc.key.tier == Tier::Ceiling && p.rc.change == Change::Regression) {
      p.rc.change = Change::Moved;
      p.rc.note += "; the vendor's own time moved: the machine, not this repository's code";
      auto& r = moved[group_of(p.rc.key)];
      r = std::max(r, p.rc.ratio);
    }
  if (moved.empty()) return;
  std::vector<std::size_t> relative;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    auto& p = pairs[i];
    if (!p.timed || p.interleaved || p.rc.key.tier != Tier::Wrapped || !moved.count(group_of(p.rc.key))) continue;
    const auto nbase = normalized(nb, p.base), ncur = normalized(nc, p.cur);
    if (!nbase || !ncur) continue;
    p.base = *nbase;
    p.cur = *ncur;
    relative.push_back(i);
  }
  judge(pairs, t, method);
  for (std::size_t i : relative)
    pairs[i].rc.note += fmt::format("; relative to its trial's ceiling (the vendor rows of this group moved {:.3f}x)",
                                    moved[group_of(pairs[i].rc.key)]);
}

}  // namespace

namespace {

using CeilingMedians = std::map<std::string, double>;

// Stage "mode": absolute or normalized, decided again after every
// re-measuring round: re-measured trials are taken later, and if the machine
// moved meanwhile, the ceiling rows re-measured with them show it.
void decide_mode(CheckReport& report, const BenchTable& baseline, const BenchTable& cur, const CheckOptions& opt) {
  const Thresholds& t = opt.thresholds;
  const auto fb = baseline.meta("fingerprint"), fc = cur.meta("fingerprint");
  const bool same_machine = fb && fc && *fb == *fc;
  report.mode = same_machine ? CheckMode::Absolute : CheckMode::Normalized;
  report.mode_reason = same_machine
                           ? "same machine fingerprint (" + *fb + "): absolute per-iteration values compared"
                           : "machine fingerprints differ (baseline " + fb.value_or("none") + ", current " +
                                 fc.value_or("none") +
                                 "): each timed sample is divided by its own trial's best ceiling and those ratios "
                                 "are compared, never absolute times";
  if (!same_machine || !opt.normalize_on_drift) return;
  // The machine moved only when the vendor rows show it beyond the warning
  // band at the check's alpha: a couple of noisy ceiling rows must not
  // rescale, and so hide, a real change.
  const auto drift = ceiling_drift(baseline, cur, t);
  const bool beyond = drift && std::fabs(std::log(drift->ratio)) > std::log1p(t.warning);
  if (beyond && drift->p < t.alpha) {
    report.mode = CheckMode::Normalized;
    report.mode_reason = fmt::format(
        "same machine, but its vendor-library rows (untouched by any change to this repository) are {:.3f}x "
        "their baseline time (geometric mean of {} ceiling rows, beyond the {:.0f}% band at p = {:.2g}): the "
        "machine itself is {} than when the baseline was recorded, so each timed sample is divided by its "
        "own trial's best ceiling",
        drift->ratio, drift->rows, 100 * t.warning, drift->p, drift->ratio > 1 ? "slower" : "faster");
  } else if (beyond) {
    report.mode_reason += fmt::format(
        "; the vendor-library rows moved {:.3f}x ({} rows), but not beyond their own scatter (p = {:.2g}), "
        "so nothing is rescaled",
        drift->ratio, drift->rows, drift->p);
  }
}

// The tables a round pairs: the stored ones, and the rows measured again
// in interleaved trials (each side's samples only).
struct Sides {
  const BenchTable& baseline;
  BenchTable cur_table;  // the current table, re-measured samples added
  BenchTable fresh_base, fresh_cur;
};

// Stage "pair", one baseline row: its current counterpart, interleaved,
// normalized or as stored, or the reason it cannot be compared.
Pair pair_row(const BenchRow& b, const Sides& sd, CheckMode mode, const CeilingMedians& nb, const CeilingMedians& nc) {
  Pair pr;
  pr.rc.key = b.key;
  pr.rc.ratio = std::nan("");
  const bool normalize = mode == CheckMode::Normalized && b.unit == kUnitSeconds;
  // A vendor library broken on this machine in both runs (plausibility.hpp)
  // says nothing of either: skipped, said so. Broken in one run only, it is
  // judged: that may be this code's doing (a wrapped tier's threading).
  if (const BenchRow* stored = sd.cur_table.find(b.key); !b.valid() && stored && !stored->valid()) {
    pr.rc.change = Change::Skipped;
    pr.rc.note = "invalid in both tables: " + stored->invalid_reason + " (a vendor row, plausibility.hpp)";
    return pr;
  }
  const BenchRow *now_base = sd.fresh_base.find(b.key), *now_cur = sd.fresh_cur.find(b.key);
  if (now_base && now_cur && !now_base->samples.empty() && !now_cur->samples.empty()) {
    pr.base = *now_base;
    pr.cur = *now_cur;
    pr.timed = pr.interleaved = true;
    return pr;
  }
  const BenchRow* c = nullptr;
  for (const auto& r : sd.cur_table.rows)
    if ((normalize ? without_backend(r.key) == without_backend(b.key) : r.key == b.key) && r.unit == b.unit) c = &r;
  // A configuration near the vendor screen's cut-off runs in one run and
  // not the next: the vendor set changing, not this code.
  const auto why = c || b.key.tier != Tier::Ceiling ? std::nullopt : not_run_reason(sd.cur_table, b.key.backend);
  if (why) {
    pr.rc.change = Change::Skipped;
    pr.rc.note = "ceiling configuration not run in current: " + *why;
  } else if (!c || c->samples.empty()) {
    pr.rc.change = Change::Missing;
    pr.rc.note = c ? "no samples in current (" + c->verdict.label + ")" : "row absent from current";
  } else if (b.samples.empty()) {
    pr.rc.change = Change::Skipped;
    pr.rc.note = "no samples in the baseline (" + b.verdict.label + ")";
  } else if (normalize) {
    const auto nbase = normalized(nb, b), ncur = normalized(nc, *c);
    if (!nbase || !ncur) {
      // Its group's ceilings all invalid (a vendor broken on that machine):
      // nothing to scale by, and nothing this code did. None at all: missing.
      const BenchTable& lacking = !nbase ? sd.baseline : sd.cur_table;
      const BenchRow* broken = nullptr;
      for (const auto& r : lacking.rows)
        if (r.key.tier == Tier::Ceiling && group_of(r.key) == group_of(b.key) && !r.valid()) broken = &r;
      const std::string side = !nbase ? "the baseline" : "current";
      pr.rc.change = broken ? Change::Skipped : Change::Missing;
      pr.rc.note = broken ? "cannot be normalized: every ceiling row of its group is invalid in " + side + " (" +
                                broken->key.backend + ": " + broken->invalid_reason + ")"
                          : "cannot be normalized: no ceiling row in " + side;
    } else {
      pr.base = *nbase;
      pr.cur = *ncur;
      pr.timed = true;
    }
  } else {
    pr.base = b;
    pr.cur = *c;
    pr.timed = b.unit == kUnitSeconds;
  }
  return pr;
}

// Stage "pair": every baseline row, then the current rows the baseline lacks.
std::vector<Pair> pair_rows(const Sides& sd, CheckMode mode, const CeilingMedians& nb, const CeilingMedians& nc) {
  std::vector<Pair> pairs;
  for (const auto& b : sd.baseline.rows) {
    if (mode == CheckMode::Normalized && b.unit == kUnitSeconds && b.key.tier == Tier::Ceiling)
      continue;  // the normalizers themselves
    pairs.push_back(pair_row(b, sd, mode, nb, nc));
  }
  for (const auto& c : sd.cur_table.rows) {
    const bool normalize = mode == CheckMode::Normalized && c.unit == kUnitSeconds;
    if (normalize && c.key.tier == Tier::Ceiling) continue;
    bool in_base = false;
    for (const auto& b : sd.baseline.rows)
      in_base = in_base || (normalize ? without_backend(b.key) == without_backend(c.key) : b.key == c.key);
    if (!in_base) {
      Pair pr;
      pr.rc.key = c.key;
      pr.rc.ratio = std::nan("");
      pr.rc.change = Change::New;
      pr.rc.note = "not in the baseline";
      pairs.push_back(std::move(pr));
    }
  }
  return pairs;
}

// The report's rows from the judged pairs, interleaved ones noted.
void publish(CheckReport& report, std::vector<Pair>& pairs, const CheckOptions& opt,
             const std::string& interleave_failed) {
  report.rows.clear();
  bool any_interleaved = false;
  for (auto& p : pairs) {
    if (p.interleaved) {
      p.rc.note +=
          "; interleaved now with the baseline's side (" + opt.interleave.baseline + "), the stored samples set aside";
      any_interleaved = true;
    }
    report.rows.push_back(p.rc);
  }
  if (any_interleaved)
    report.method +=
        "; rows noted 'interleaved' were measured again on both sides in alternating trials (ABBA: "
        "current, baseline, baseline, current, then baseline first) and judged on those trials alone";
  if (!interleave_failed.empty()) report.method += "; " + interleave_failed;
}

// Stage "re-measure": one round. Interleaved: every timed suite row once (a
// machine that moved since the baseline can hide a change as well as fake
// one, so a row that looks unchanged against the stored baseline proves
// nothing), then the ones still NOISY. The rest (ceiling rows; every row when
// there is no interleaving) as before: NOISY and REGRESSION rows on this
// build alone (a NOISY vendor row says nothing of this code, but --strict
// fails on it, and a few more trials of a vendor program cost seconds).
// Returns whether anything was measured.
struct Remeasuring {
  bool interleave;
  int interleaved_trials = 0;  // per side
  std::string failed;
};

bool remeasure_round(Sides& sd, const std::vector<Pair>& pairs, CheckMode mode, const CheckOptions& opt,
                     Remeasuring& state) {
  auto rows_of = [&](const BenchKey& k, std::vector<BenchKey>& into) {
    for (const auto& c : sd.cur_table.rows)
      if (c.unit == kUnitSeconds &&
          (c.key == k || (mode == CheckMode::Normalized && without_backend(c.key) == without_backend(k))) &&
          std::find(into.begin(), into.end(), c.key) == into.end())
        into.push_back(c.key);
  };
  std::vector<BenchKey> both, again;
  for (const auto& p : pairs) {
    if (state.interleave && p.timed && p.rc.key.tier != Tier::Ceiling) {
      if (!p.interleaved || p.rc.change == Change::Noisy) rows_of(p.rc.key, both);
    } else if (!p.interleaved && (p.rc.change == Change::Regression || p.rc.change == Change::Noisy)) {
      rows_of(p.rc.key, again);
    }
  }
  std::erase_if(both, [&](const BenchKey& k) { return !sd.baseline.find(k); });
  bool measured = false;
  if (!both.empty()) {
    for (int k = 0; k < 4 && state.interleave; ++k) {  // two trials a side, in --against's ABBA order
      const bool base_side = (k % 2 == 0) != current_first(state.interleaved_trials + k / 2);
      const auto got = opt.interleave.measure(both, base_side);
      if (!got || got->empty()) state.interleave = false;  // measured on this build alone from here on
      else merge_rows((base_side ? sd.fresh_base : sd.fresh_cur).rows, *got);
    }
    state.interleaved_trials += 2;
    measured = state.interleave;
    if (!state.interleave) {
      sd.fresh_base.rows.clear(), sd.fresh_cur.rows.clear();
      state.failed = "interleaving with the baseline's side (" + opt.interleave.baseline +
                     ") failed, so NOISY and REGRESSION rows were measured again on this build alone";
      for (const auto& p : pairs)
        if (p.rc.change == Change::Regression || p.rc.change == Change::Noisy) rows_of(p.rc.key, again);
    }
  }
  if (again.empty() || !opt.remeasure) return measured;
  // The normalizers of re-measured rows are re-measured in the same trials,
  // whatever the mode: they are what shows the machine moved in between.
  const auto asked = again;
  for (const auto& k : asked)
    for (const auto& c : sd.cur_table.rows)
      if (c.key.tier == Tier::Ceiling && c.key.shape == k.shape && c.key.precision == k.precision &&
          c.key.threads == k.threads && std::find(again.begin(), again.end(), c.key) == again.end())
        again.push_back(c.key);
  const auto more = opt.remeasure(again);
  if (!more || more->empty()) return measured;
  for (const auto& m : *more)
    for (auto& c : sd.cur_table.rows)
      if (c.key == m.key)
        for (std::size_t i = 0; i < m.samples.size(); ++i) {
          c.trials.resize(c.samples.size(), 0);
          c.samples.push_back(m.samples[i]);
          c.trials.push_back(m.trial_of(i));
        }
  mark_invalid_vendor_rows(sd.cur_table);  // the new samples may make a vendor row plausible, or not
  return true;
}

}  // namespace

// mode, pair, judge, publish, then re-measure and again, rounds and budget permitting.
CheckReport check_tables(const BenchTable& baseline, const BenchTable& current, const CheckOptions& opt) {
  CheckReport report;
  Sides sd{baseline, current, {}, {}};
  Remeasuring state{static_cast<bool>(opt.interleave.measure), 0, {}};
  const auto started = std::chrono::steady_clock::now();
  for (int round = 0;; ++round) {
    decide_mode(report, baseline, sd.cur_table, opt);
    if (round > 0) report.mode_reason += " (after " + std::to_string(round) + " re-measuring round(s))";
    const auto nb = ceiling_medians(baseline), nc = ceiling_medians(sd.cur_table);
    auto pairs = pair_rows(sd, report.mode, nb, nc);
    judge(pairs, opt.thresholds, report.method);
    if (report.mode == CheckMode::Absolute && opt.normalize_on_drift)
      judge_moved_groups(pairs, nb, nc, opt.thresholds, report.method);
    publish(report, pairs, opt, state.failed);
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (round >= opt.max_rounds || (opt.budget_seconds > 0 && spent >= opt.budget_seconds)) break;
    if (!remeasure_round(sd, pairs, report.mode, opt, state)) break;
  }
  report.interleaved_baseline = std::move(sd.fresh_base);
  report.interleaved_current = std::move(sd.fresh_cur);
  return report;
}

CheckReport check_tables(const BenchTable& baseline, const BenchTable& current, const Thresholds& t,
                         const Rerun& rerun) {
  CheckOptions opt;
  opt.thresholds = t;
  CheckReport rep = check_tables(baseline, current, opt);
  if (!rerun) return rep;
  // Count rows: a regression is confirmed by one re-run (the count is exact; a
  // re-run guards only against a broken measurement).
  for (auto& rc : rep.rows) {
    if (rc.change != Change::Regression) continue;
    const BenchRow* c = current.find(rc.key);
    const BenchRow* b = baseline.find(rc.key);
    if (!c || !b || c->unit != kUnitInstructions) continue;
    if (auto again = rerun(*c); again && !again->samples.empty() && b->median() > 0) {
      const double r2 = again->median() / b->median();
      const Change second = classify_count_ratio(r2, t);
      rc.note += fmt::format("; {} on re-run (ratio {:.3f})",
                             second == Change::Regression ? "confirmed" : "not confirmed", r2);
      rc.change = second;
      rc.ratio = r2;
    }
  }
  return rep;
}

BenchTable read_baseline(const std::string& path) {
  if (::access(path.c_str(), F_OK) != 0)
    throw NoBaseline("no baseline at " + path +
                     "; create one on this machine with `popper bench compare --family <F>` then "
                     "`popper bench baseline save --from reports/bench-<F>.csv` (gate: `popper bench gate --family <F> "
                     "--no-check` then `popper bench baseline save --from reports/bench-<F>-gate.csv`)");
  BenchTable t = read_bench_csv(path);
  if (const auto inj = t.meta("injected_slowdown"))
    throw BenchFileError(path + " was recorded with POPPER_BENCH_INJECT_SLOWDOWN=" + *inj +
                         ": a baseline must measure the code as it is; record it again without the variable");
  return t;
}

std::string format_check_report(const CheckReport& report) {
  std::ostringstream out;
  out << "mode: " << (report.mode == CheckMode::Absolute ? "absolute" : "normalized") << " — " << report.mode_reason
      << "\n";
  if (!report.method.empty()) out << "method: " << report.method << "\n";
  constexpr const char* kLine = "{:<12} {:<66} {:>8} {:<17} {:>9}  {}\n";
  out << fmt::format(kLine, "verdict", "row", "ratio", "interval", "p", "note");
  for (const auto& r : report.rows) {
    const std::string ratio = std::isnan(r.ratio) ? "-" : fmt::format("{:.3f}", r.ratio);
    const std::string iv = r.hi > 0 ? fmt::format("[{:.3f}, {:.3f}]", r.lo, r.hi) : "-";
    const std::string p = std::isnan(r.p_value) ? "-" : fmt::format("{:.3g}", r.p_value);
    out << fmt::format(kLine, to_string(r.change), r.key.to_string(), ratio, iv, p, r.note);
  }
  out << "summary: " << report.count(Change::Regression) << " regression, " << report.count(Change::Missing)
      << " missing, " << report.count(Change::Noisy) << " noisy, " << report.count(Change::Warning) << " warning, "
      << report.count(Change::Unchanged) << " unchanged, " << report.count(Change::Improvement) << " improvement, "
      << report.count(Change::Skipped) << " skipped, " << report.count(Change::New) << " new, "
      << report.count(Change::Moved) << " moved\n";
  return out.str();
}

}  // namespace popper::bench
