// Routing thresholds from a bench CSV (threshold.hpp).
#include "bench/threshold.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "bench/stats.hpp"
#include "popper/error.hpp"

namespace popper::bench {

namespace {

bool usable(const BenchRow& r) { return r.unit == kUnitSeconds && !r.samples.empty() && !r.verdict.failed(); }

std::string key_text(const std::map<std::string, long>& key, const std::vector<std::string>& order) {
  std::string s;
  for (const auto& k : order) s += (s.empty() ? "" : " ") + k + "=" + std::to_string(key.at(k));
  return s;
}

// The fastest usable row of `tier` for the key (the fallback's best backend: a conservative comparison).
const BenchRow* best(const BenchTable& t, const std::string& family, Tier tier, const std::string& shape,
                     const std::string& precision, int threads) {
  const BenchRow* out = nullptr;
  for (const auto& r : t.rows) {
    if (r.key.family != family || r.key.tier != tier || r.key.shape != shape || r.key.precision != precision ||
        r.key.threads != threads || r.unit != kUnitSeconds)
      continue;
    if (!out || (usable(r) && (!usable(*out) || r.median() < out->median()))) out = &r;
  }
  return out;
}

}  // namespace

std::map<std::string, long> shape_parameters(const std::string& shape) {
  std::map<std::string, long> out;
  std::stringstream ss(shape);
  std::string token;
  while (std::getline(ss, token, '_')) {
    std::size_t i = 0;
    while (i < token.size() && std::isalpha(static_cast<unsigned char>(token[i]))) ++i;
    if (i == 0 || i == token.size()) continue;
    bool digits = true;
    for (std::size_t j = i; j < token.size(); ++j)
      digits = digits && std::isdigit(static_cast<unsigned char>(token[j]));
    if (digits && token.size() - i < 18) out[token.substr(0, i)] = std::stol(token.substr(i));
  }
  return out;
}

ThresholdResult derive_thresholds(const BenchTable& table, const ThresholdOptions& o) {
  if (!(o.margin > 0)) throw InvalidArgument("bench threshold: --margin must be > 0");
  ThresholdResult result;
  result.options = o;
  std::map<std::map<std::string, long>, ThresholdGroup> groups;
  std::set<std::tuple<std::string, std::string, int>> seen;  // (shape, precision, threads)
  for (const auto& r : table.rows) {
    if (r.key.family != o.family || (r.key.tier != o.fast_tier && r.key.tier != o.slow_tier) || r.unit != kUnitSeconds)
      continue;
    if (std::find(o.exclude_shapes.begin(), o.exclude_shapes.end(), r.key.shape) != o.exclude_shapes.end()) continue;
    if (!o.threads.empty() && std::find(o.threads.begin(), o.threads.end(), r.key.threads) == o.threads.end()) continue;
    if (!seen.insert({r.key.shape, r.key.precision, r.key.threads}).second) continue;
    const auto params = shape_parameters(r.key.shape);
    std::map<std::string, long> key;
    bool complete = params.count(o.axis) > 0;
    for (const auto& b : o.by) {
      const auto it = params.find(b);
      complete = complete && it != params.end();
      if (it != params.end()) key[b] = it->second;
    }
    if (!complete) continue;  // not a shape of the swept grid
    ThresholdEvidence e;
    e.shape = r.key.shape;
    e.precision = r.key.precision;
    e.threads = r.key.threads;
    e.axis_value = params.at(o.axis);
    const BenchRow* fast = best(table, o.family, o.fast_tier, e.shape, e.precision, e.threads);
    const BenchRow* slow = best(table, o.family, o.slow_tier, e.shape, e.precision, e.threads);
    if (!fast || !slow) {
      e.note = "no " + (fast ? tier_text(o.slow_tier) : tier_text(o.fast_tier)) + " row";
    } else if (!usable(*fast) || !usable(*slow)) {
      const BenchRow& bad = usable(*fast) ? *slow : *fast;
      e.note =
          tier_text(bad.key.tier) + " " + (bad.samples.empty() ? "unmeasured" : "") + " (" + bad.verdict.label + ")";
    } else {
      e.measured = true;
      e.fast_median = fast->median();
      e.slow_median = slow->median();
      e.ratio = e.slow_median / e.fast_median;
      e.ratio_low = quantile(slow->samples, 0.25) / quantile(fast->samples, 0.75);
      e.ratio_high = quantile(slow->samples, 0.75) / quantile(fast->samples, 0.25);
      e.wins = e.ratio >= o.margin;
      if ((e.wins && e.ratio_low < o.margin) || (!e.wins && e.ratio_high >= o.margin))
        e.note = "noisy: spread straddles the margin";
    }
    auto& g = groups[key];
    g.key = key;
    g.rows.push_back(std::move(e));
  }
  if (groups.empty())
    throw Error("bench threshold: no " + tier_text(o.fast_tier) + "/" + tier_text(o.slow_tier) + " rows of family " +
                o.family + " whose shape names carry " + o.axis + " and every --by parameter");
  for (auto& [key, g] : groups) {
    std::sort(g.rows.begin(), g.rows.end(), [](const ThresholdEvidence& a, const ThresholdEvidence& b) {
      return std::tie(a.axis_value, a.shape, a.threads) < std::tie(b.axis_value, b.shape, b.threads);
    });
    std::vector<long> values;
    for (const auto& e : g.rows)
      if (values.empty() || values.back() != e.axis_value) values.push_back(e.axis_value);
    // Walk down from the largest value while every row of that value wins.
    std::optional<long> min_axis;
    const ThresholdEvidence* blocker = nullptr;
    for (auto v = values.rbegin(); v != values.rend() && !blocker; ++v) {
      for (const auto& e : g.rows)
        if (e.axis_value == *v && !e.wins) {
          blocker = &e;
          break;
        }
      if (!blocker) min_axis = *v;
    }
    g.min_axis = min_axis;
    std::size_t from = 0;
    for (const auto& e : g.rows) from += min_axis && e.axis_value >= *min_axis;
    const std::string ax = o.axis;
    if (!min_axis) {
      g.reason = fmt::format("never: at the largest {} = {}, {} threads {} {}", ax, values.back(), blocker->shape,
                             blocker->threads,
                             blocker->measured ? fmt::format("has {}/{} = {:.3f} < {}", tier_text(o.slow_tier),
                                                             tier_text(o.fast_tier), blocker->ratio, o.margin)
                                               : "is not measured: " + blocker->note);
    } else if (blocker) {
      g.reason = fmt::format(
          "{} >= {} x {} on all {} rows with {} >= {}; at {} = {}, {} threads {} {}", tier_text(o.fast_tier), o.margin,
          tier_text(o.slow_tier), from, ax, *min_axis, ax, blocker->axis_value, blocker->shape, blocker->threads,
          blocker->measured ? fmt::format("has {:.3f}", blocker->ratio) : "is not measured: " + blocker->note);
    } else {
      g.reason = fmt::format("{} >= {} x {} on all {} rows (every {} measured)", tier_text(o.fast_tier), o.margin,
                             tier_text(o.slow_tier), from, ax);
    }
    result.groups.push_back(std::move(g));
  }
  return result;
}

std::string render_threshold_report(const ThresholdResult& r) {
  const auto& o = r.options;
  std::ostringstream os;
  os << fmt::format("{} threshold: smallest {} from which median time({}) / median time({}) >= {} on every larger {}\n",
                    o.family, o.axis, tier_text(o.slow_tier), tier_text(o.fast_tier), o.margin, o.axis);
  for (const auto& g : r.groups)
    os << fmt::format("  {}: min {} = {}  ({})\n", key_text(g.key, o.by), o.axis,
                      g.min_axis ? std::to_string(*g.min_axis) : "never", g.reason);
  for (const auto& g : r.groups) {
    os << fmt::format("\nevidence {} (ratio = {}/{} median time; spread = q25/q75 .. q75/q25 over repetitions)\n",
                      key_text(g.key, o.by), tier_text(o.slow_tier), tier_text(o.fast_tier));
    os << fmt::format("  {:<30} {:>3} {:>6} {:>12} {:>12} {:>7} {:>17}  {}\n", "shape", "thr", o.axis,
                      tier_text(o.fast_tier) + " ms", tier_text(o.slow_tier) + " ms", "ratio", "spread", "wins");
    for (const auto& e : g.rows) {
      if (!e.measured) {
        os << fmt::format("  {:<30} {:>3} {:>6} {:>12} {:>12} {:>7} {:>17}  no ({})\n", e.shape, e.threads,
                          e.axis_value, "-", "-", "-", "-", e.note);
        continue;
      }
      os << fmt::format("  {:<30} {:>3} {:>6} {:>12.3f} {:>12.3f} {:>7.3f} {:>8.3f}..{:<7.3f}  {}{}\n", e.shape,
                        e.threads, e.axis_value, e.fast_median * 1e3, e.slow_median * 1e3, e.ratio, e.ratio_low,
                        e.ratio_high, e.wins ? "yes" : "no", e.note.empty() ? "" : " (" + e.note + ")");
    }
  }
  return os.str();
}

std::string render_router_config(const ThresholdResult& r, const BenchTable& source, const std::string& csv_path) {
  const auto& o = r.options;
  auto meta = [&](const char* k) {
    const auto v = source.meta(k);
    return v ? *v : std::string("unknown");
  };
  std::ostringstream os;
  os << "# " << o.family << " router thresholds for one machine, derived from a bench CSV; do not edit by hand.\n"
     << "# Written by: popper bench threshold --family " << o.family << " --margin " << o.margin << "\n"
     << "# Rule: for each (" << fmt::format("{}", fmt::join(o.by, ", ")) << "), min_" << o.axis << " = the smallest "
     << o.axis << " from which median time(" << tier_text(o.slow_tier) << ") / median time(" << tier_text(o.fast_tier)
     << ") >= margin\n"
     << "# on every bench row with a larger or equal " << o.axis << "; never = " << tier_text(o.fast_tier)
     << " does not win at the largest " << o.axis << ".\n"
     << "# The router runs " << tier_text(o.fast_tier) << " iff an entry exists, is not never, and the mean selected "
     << o.axis << " >= min_" << o.axis << ".\n";
  os << "family: " << o.family << "\n"
     << "margin: " << o.margin << "\n"
     << "axis: " << o.axis << "\n"
     << "by: [" << fmt::format("{}", fmt::join(o.by, ", ")) << "]\n"
     << "fast_tier: " << tier_text(o.fast_tier) << "\n"
     << "slow_tier: " << tier_text(o.slow_tier) << "\n"
     << "source:\n"
     << "  csv: \"" << csv_path << "\"\n"
     << "  commit: \"" << meta("commit") << "\"\n"
     << "  date: \"" << meta("date") << "\"\n"
     << "  fingerprint: \"" << meta("fingerprint") << "\"\n"
     << "  cpu_model: \"" << meta("cpu_model") << "\"\n"
     << "  blas_core: \"" << meta("blas_core") << "\"\n";
  os << "thresholds:\n";
  for (const auto& g : r.groups) {
    os << "  - {";
    for (const auto& b : o.by) os << b << ": " << g.key.at(b) << ", ";
    os << "min_" << o.axis << ": " << (g.min_axis ? std::to_string(*g.min_axis) : "never")
       << ", rows: " << g.rows.size() << "}\n";
  }
  return os.str();
}

}  // namespace popper::bench
