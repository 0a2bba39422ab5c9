// Regression classification; rules in check.hpp.
#include "popper/bench/check.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "popper/bench/stats.hpp"

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
  }
  return "?";
}

Change classify_ratio(double ratio, bool significant, const Thresholds& t) {
  if (ratio > 1 + t.regression && significant) return Change::Regression;
  if (ratio > 1 + t.warning) return Change::Warning;
  if (ratio < 1 - t.warning) return Change::Improvement;
  return Change::Unchanged;
}

int CheckReport::count(Change c) const {
  int n = 0;
  for (const auto& r : rows) n += r.change == c;
  return n;
}

int CheckReport::exit_code() const { return count(Change::Regression) + count(Change::Missing) > 0 ? 1 : 0; }

namespace {

// Compares two sample sets already expressed in comparable units.
RowCheck compare_samples(const BenchKey& key, const std::vector<double>& base, const std::vector<double>& cur,
                         bool deterministic, const Thresholds& t) {
  RowCheck rc;
  rc.key = key;
  const double mb = median(base), mc = median(cur);
  rc.ratio = mb > 0 ? mc / mb : std::nan("");
  if (std::isnan(rc.ratio)) {
    rc.change = Change::Skipped;
    rc.note = "baseline median is not positive";
    return rc;
  }
  if (deterministic) {
    rc.significant = rc.ratio > 1 + t.regression;
    rc.p_value = rc.significant ? 0 : 1;
    rc.note = "deterministic count";
  } else {
    std::vector<double> shifted;
    for (double b : base) shifted.push_back(b * (1 + t.regression));
    const auto mw = mann_whitney_greater(cur, shifted);
    rc.p_value = mw.p_value;
    rc.significant = mw.p_value < t.alpha;
  }
  rc.change = classify_ratio(rc.ratio, rc.significant, t);
  return rc;
}

BenchKey without_backend(BenchKey k) {
  k.backend = "*";
  return k;
}

// Best (smallest median) ceiling row per (family, shape, precision, threads, cache_mode, unit).
std::map<std::string, double> ceiling_medians(const BenchTable& t) {
  std::map<std::string, double> best;
  for (const auto& r : t.rows) {
    if (r.key.tier != "ceiling" || r.samples.empty()) continue;
    BenchKey k = without_backend(r.key);
    k.tier = "ceiling";
    const std::string id = k.to_string() + "|" + r.unit;
    const double m = r.median();
    auto it = best.find(id);
    if (it == best.end() || m < it->second) best[id] = m;
  }
  return best;
}

std::optional<double> normalizer(const std::map<std::string, double>& best, const BenchRow& r) {
  BenchKey k = without_backend(r.key);
  k.tier = "ceiling";
  auto it = best.find(k.to_string() + "|" + r.unit);
  if (it == best.end() || it->second <= 0) return std::nullopt;
  return it->second;
}

}  // namespace

CheckReport check_tables(const BenchTable& baseline, const BenchTable& current, const Thresholds& t,
                         const Rerun& rerun) {
  CheckReport report;
  const auto fb = baseline.meta("fingerprint"), fc = current.meta("fingerprint");
  if (fb && fc && *fb == *fc) {
    report.mode = CheckMode::Absolute;
    report.mode_reason = "same machine fingerprint (" + *fb + "): absolute per-iteration values compared";
  } else {
    report.mode = CheckMode::Normalized;
    report.mode_reason = "machine fingerprints differ (baseline " + fb.value_or("none") + ", current " +
                         fc.value_or("none") +
                         "): only normalized ratios tier/ceiling from the same run are compared, never absolute times";
  }

  if (report.mode == CheckMode::Absolute) {
    for (const auto& b : baseline.rows) {
      const BenchRow* c = current.find(b.key);
      RowCheck rc;
      rc.key = b.key;
      rc.ratio = std::nan("");
      if (!c || c->samples.empty()) {
        rc.change = Change::Missing;
        rc.note = c ? "no samples in current (" + c->verdict + ")" : "row absent from current";
        report.rows.push_back(rc);
        continue;
      }
      if (b.samples.empty() || b.unit != c->unit) {
        rc.change = Change::Skipped;
        rc.note = b.samples.empty() ? "no samples in baseline" : "unit differs: " + b.unit + " vs " + c->unit;
        report.rows.push_back(rc);
        continue;
      }
      const bool det = b.unit == kUnitInstructions;
      rc = compare_samples(b.key, b.samples, c->samples, det, t);
      if (rc.change == Change::Regression && rerun) {
        if (auto again = rerun(*c); again && !again->samples.empty()) {
          RowCheck second = compare_samples(b.key, b.samples, again->samples, det, t);
          if (second.change == Change::Regression) {
            second.note += (second.note.empty() ? "" : "; ") + std::string("confirmed on re-run");
          } else {
            char buf[96];
            std::snprintf(buf, sizeof buf, "not confirmed on re-run (first ratio %.3f)", rc.ratio);
            second.note += (second.note.empty() ? "" : "; ") + std::string(buf);
          }
          rc = second;
        } else {
          rc.note += (rc.note.empty() ? "" : "; ") + std::string("re-run failed; first measurement kept");
        }
      }
      report.rows.push_back(rc);
    }
    for (const auto& c : current.rows)
      if (!baseline.find(c.key)) {
        RowCheck rc;
        rc.key = c.key;
        rc.ratio = std::nan("");
        rc.change = Change::New;
        rc.note = "not in the baseline";
        report.rows.push_back(rc);
      }
    return report;
  }

  // Normalized mode: hand/wrapped (and any non-ceiling tier) over the best ceiling of its own run.
  const auto nb = ceiling_medians(baseline), nc = ceiling_medians(current);
  for (const auto& b : baseline.rows) {
    if (b.key.tier == "ceiling") continue;  // the normalizers themselves
    RowCheck rc;
    rc.key = b.key;
    rc.ratio = std::nan("");
    const BenchRow* c = nullptr;
    for (const auto& r : current.rows)
      if (without_backend(r.key) == without_backend(b.key) && r.unit == b.unit) c = &r;
    if (!c || c->samples.empty()) {
      rc.change = Change::Missing;
      rc.note = "row absent from current (matched ignoring backend)";
      report.rows.push_back(rc);
      continue;
    }
    const auto db = normalizer(nb, b), dc = normalizer(nc, *c);
    if (!db || !dc || b.samples.empty()) {
      rc.change = Change::Skipped;
      rc.note = "no ceiling row to normalize by in " + std::string(!db ? "baseline" : "current");
      report.rows.push_back(rc);
      continue;
    }
    std::vector<double> sb, sc;
    for (double v : b.samples) sb.push_back(v / *db);
    for (double v : c->samples) sc.push_back(v / *dc);
    rc = compare_samples(b.key, sb, sc, false, t);
    rc.note += (rc.note.empty() ? "" : "; ") + std::string("normalized by ceiling");
    report.rows.push_back(rc);
  }
  return report;
}

BenchTable read_baseline(const std::string& path) {
  if (::access(path.c_str(), F_OK) != 0)
    throw NoBaseline("no baseline at " + path +
                     "; create one on this machine with `popper bench compare --family <F>` then "
                     "`popper bench baseline save --from reports/bench-<F>.csv` (gate: `popper bench gate --family <F> "
                     "--no-check` then `popper bench baseline save --from reports/bench-<F>-gate.csv`)");
  return read_bench_csv(path);
}

std::string format_check_report(const CheckReport& report) {
  std::ostringstream out;
  out << "mode: " << (report.mode == CheckMode::Absolute ? "absolute" : "normalized") << " — " << report.mode_reason
      << "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-12s %-62s %8s %8s  %s\n", "verdict", "row", "ratio", "p", "note");
  out << line;
  for (const auto& r : report.rows) {
    char ratio[32], p[32];
    if (std::isnan(r.ratio)) std::snprintf(ratio, sizeof ratio, "-");
    else std::snprintf(ratio, sizeof ratio, "%.3f", r.ratio);
    std::snprintf(p, sizeof p, "%.3g", r.p_value);
    std::snprintf(line, sizeof line, "%-12s %-62s %8s %8s  %s\n", to_string(r.change), r.key.to_string().c_str(),
                  ratio, p, r.note.c_str());
    out << line;
  }
  out << "summary: " << report.count(Change::Regression) << " regression, " << report.count(Change::Missing)
      << " missing, " << report.count(Change::Warning) << " warning, " << report.count(Change::Unchanged)
      << " unchanged, " << report.count(Change::Improvement) << " improvement, " << report.count(Change::Skipped)
      << " skipped, " << report.count(Change::New) << " new\n";
  return out.str();
}

}  // namespace popper::bench
