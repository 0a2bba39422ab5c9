// Markdown table and SVG chart of a bench table (definitions in report.hpp).
#include "bench/report.hpp"

#include "bench/interval.hpp"
#include "bench/stats.hpp"
#include "common/text.hpp"

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace popper::bench {
namespace {

struct Group {
  std::string precision;
  int threads;
  std::string cache_mode;
  bool operator<(const Group& o) const {
    return std::tie(cache_mode, precision, threads) < std::tie(o.cache_mode, o.precision, o.threads);
  }
};

std::vector<std::string> shapes_in_order(const BenchTable& t) {
  std::vector<std::string> out;
  for (const auto& r : t.rows)
    if (std::find(out.begin(), out.end(), r.key.shape) == out.end()) out.push_back(r.key.shape);
  return out;
}

std::set<Group> groups(const BenchTable& t) {
  std::set<Group> g;
  for (const auto& r : t.rows)
    if (r.unit == kUnitSeconds) g.insert({r.key.precision, r.key.threads, r.key.cache_mode});
  return g;
}

std::string num(double v, const char* fmt) {
  if (std::isnan(v) || v <= 0) return "—";
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace

const BenchRow* best_row(const BenchTable& t, Tier tier, const std::string& shape, const std::string& precision,
                         int threads, const std::string& cache_mode) {
  const BenchRow* best = nullptr;
  for (const auto& r : t.rows) {
    if (r.key.tier != tier || r.key.shape != shape || r.key.precision != precision || r.key.threads != threads ||
        r.key.cache_mode != cache_mode || r.samples.empty() || r.unit != kUnitSeconds || !r.valid())
      continue;
    if (!best || r.median() < best->median()) best = &r;
  }
  return best;
}

const BenchRow* matching_row(const BenchTable& t, Tier tier, const std::string& shape, const std::string& precision,
                             int threads, const std::string& backend, const std::string& cache_mode) {
  for (const auto& r : t.rows)
    if (r.key.tier == tier && r.key.shape == shape && r.key.precision == precision && r.key.threads == threads &&
        r.key.cache_mode == cache_mode && r.key.backend == backend && !r.samples.empty() && r.unit == kUnitSeconds)
      // An invalid row of that configuration: no figure, rather than another
      // configuration's passed off as this one's (FFI overhead would mix both).
      return r.valid() ? &r : nullptr;
  // None timed (the train family's wrapped step over OpenBLAS against a
  // libtorch ceiling): no figure either.
  return nullptr;
}

namespace {

// "fp32=224.55/440.61 fp64=107.15/213.58 bw=31.63/63.63 llc_mib=16 cores=2" (peak.hpp peak_metadata).
struct RooflinePeaks {
  double fp32[2] = {0, 0}, fp64[2] = {0, 0}, bw[2] = {0, 0};  // per core / all cores, in FLOP/s and B/s
  double llc = 0;                                             // bytes; 0 unknown
  int cores = 1;
  bool ok = false;
};

RooflinePeaks parse_peaks(const BenchTable& t) {
  RooflinePeaks p;
  const auto v = t.meta("roofline_peaks");
  if (!v) return p;
  std::istringstream in(*v);
  std::string tok;
  while (in >> tok) {
    const auto eq = tok.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = tok.substr(0, eq), val = tok.substr(eq + 1);
    const auto slash = val.find('/');
    const double a = std::atof(val.c_str()), b = slash == std::string::npos ? a : std::atof(val.c_str() + slash + 1);
    if (k == "fp32") p.fp32[0] = a * 1e9, p.fp32[1] = b * 1e9;
    else if (k == "fp64") p.fp64[0] = a * 1e9, p.fp64[1] = b * 1e9;
    else if (k == "bw") p.bw[0] = a * 1e9, p.bw[1] = b * 1e9;
    else if (k == "llc_mib") p.llc = a * 1024 * 1024;
    else if (k == "cores") p.cores = std::max(1, static_cast<int>(a));
  }
  p.ok = p.fp64[0] > 0 && p.bw[0] > 0;
  return p;
}

double at_threads(const double* v, int threads, int cores) {
  if (threads <= 1) return v[0];
  if (threads >= cores) return v[1];
  return std::min(v[1], v[0] * threads);
}

std::string mib(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, bytes >= 1024.0 * 1024 ? "%.1f MiB" : "%.0f KiB",
                bytes >= 1024.0 * 1024 ? bytes / (1024.0 * 1024) : bytes / 1024.0);
  return b;
}

}  // namespace

std::optional<RooflineBound> roofline_bound(const BenchTable& t, const BenchRow& r) {
  if (r.unit != kUnitSeconds || r.work_unit != "flop" || r.work_per_iter <= 0 || r.bytes_per_iter <= 0)
    return std::nullopt;
  const RooflinePeaks p = parse_peaks(t);
  if (!p.ok) return std::nullopt;
  const double* pk = r.key.precision == "f32" ? p.fp32 : r.key.precision == "f64" ? p.fp64 : nullptr;
  RooflineBound b;
  b.intensity = r.work_per_iter / r.bytes_per_iter;
  b.dram = at_threads(p.bw, r.key.threads, p.cores) * b.intensity;
  // A cold row's operands were evicted before its call, whatever their size.
  b.in_llc = r.key.cache_mode != "cold" && p.llc > 0 && r.bytes_per_iter <= p.llc;
  // Where the suite probed the row's own footprint on its threads (from
  // memory, for a cold row), that probe is the bandwidth, wherever the bytes
  // sit: a stream of a few LLCs is partly served from cache (the hand q4k GEMV
  // read 75 MB at 37-45 GB/s on one Zen 4 core, against a 28 GB/s triad),
  // which the triad over arrays of 512 MiB never sees, and one core reads
  // faster than its share of the triad (gemm's GEMV rows).
  if (const double read = t.footprint_read(r.key.shape, r.key.precision, r.key.threads, r.key.cache_mode); read > 0) {
    b.dram = read * b.intensity;
    b.in_llc = false;
    b.read = true;
  }
  const std::string dram_limit = b.read ? "read of " + mib(r.bytes_per_iter) : "DRAM";
  if (!pk) {
    // A precision with no measured compute peak (q4k: integer dot products on
    // decoded blocks): the bytes (the Q4_K weights) over the measured bandwidth
    // still bound it, unless they fit in the LLC, where nothing measured does.
    if (b.in_llc) return std::nullopt;
    b.limit = dram_limit;
    b.peak = b.flops = b.dram;
    return b;
  }
  b.peak = at_threads(pk, r.key.threads, p.cores);
  if (b.in_llc) {
    b.flops = b.peak;
    b.limit = "compute, in LLC";
  } else {
    b.flops = std::min(b.peak, b.dram);
    b.limit = b.dram < b.peak ? dram_limit : "compute";
  }
  return b;
}

std::string figure(double v, const char* fmt) { return num(v, fmt); }

ThroughputScale throughput_scale(const BenchTable& t) {
  bool items = false;
  double fastest = 0;
  for (const auto& r : t.rows) {
    items |= r.work_unit == "items";
    fastest = std::max(fastest, r.throughput());
  }
  if (!items) return {};
  for (const auto& [factor, unit] : {std::pair{1e-9, "G items/s"}, {1e-6, "M items/s"}, {1e-3, "k items/s"}})
    if (fastest * factor >= 1) return {factor, unit};
  return {1.0, "items/s"};
}

std::vector<std::pair<std::string, std::string>> report_metadata(const BenchTable& t) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* k :
       {"date", "commit", "popper", "fingerprint", "cpu_model", "blas_core", "compiler", "loadavg_at_start", "steal",
        "pace", "peak_fp32_avx2_gflops", "peak_fp64_avx2_gflops", "peak_avx512", "peak_triad_gbs", "llc"})
    if (auto v = t.meta(k)) out.emplace_back(k, *v);
  return out;
}

namespace {
// A bound is an upper limit on what the row can do; a tier measured above it
// shows that the probe behind it did not see what the kernel does (its
// footprint, thread count or page size differ from the row's). Names the
// fastest such tier and its figure, "" when every tier is within the bound.
std::string bound_beaten(const ShapeFigures& f, double bound, const std::string& limit) {
  const BenchRow* fastest = nullptr;
  for (const BenchRow* r : {f.ceiling, f.wrapped, f.hand})
    if (r && r->throughput() > bound && (!fastest || r->throughput() > fastest->throughput())) fastest = r;
  if (!fastest) return "";
  return tier_text(fastest->key.tier) + " measured at " + num(100.0 * fastest->throughput() / bound, "%.1f%%") +
         " of its " + limit + " bound: the probe behind it differs from this row in footprint (" +
         mib(f.bound_row->bytes_per_iter) + "), thread count (" + std::to_string(fastest->key.threads) +
         ") or page size, so it bounds nothing here";
}
}  // namespace

std::vector<GroupFigures> table_figures(const BenchTable& t) {
  std::vector<GroupFigures> out;
  const double nan = std::nan("");
  const double llc = parse_peaks(t).llc;
  for (const auto& g : groups(t)) {
    GroupFigures gf{g.precision, g.threads, g.cache_mode, {}};
    for (const auto& shape : shapes_in_order(t)) {
      ShapeFigures f{};
      f.shape = shape;
      auto in_group = [&](const BenchRow& r) {
        return r.key.shape == shape && r.key.precision == g.precision && r.key.threads == g.threads &&
               r.key.cache_mode == g.cache_mode;
      };
      f.ceiling = best_row(t, Tier::Ceiling, shape, g.precision, g.threads, g.cache_mode);
      f.wrapped = best_row(t, Tier::Wrapped, shape, g.precision, g.threads, g.cache_mode);
      f.hand = best_row(t, Tier::Hand, shape, g.precision, g.threads, g.cache_mode);
      for (const auto& r : t.rows)
        if (!r.valid() && r.key.tier == Tier::Ceiling && in_group(r)) f.invalid_ceilings.push_back(&r);
      if (!f.ceiling && !f.wrapped && !f.hand) {
        // A row may exist without samples (incorrect): still show it.
        bool any = false;
        for (const auto& r : t.rows) any |= in_group(r);
        if (!any) continue;
      }
      const BenchRow* c_same = f.wrapped ? matching_row(t, Tier::Ceiling, shape, g.precision, g.threads,
                                                        f.wrapped->key.backend, g.cache_mode)
                                         : nullptr;
      auto per_work = [](const BenchRow* r) {
        return r->work_per_iter > 0 ? r->median() / r->work_per_iter : r->median();
      };
      f.ffi = (c_same && f.wrapped) ? per_work(f.wrapped) / per_work(c_same) : nan;
      f.hand_vs_ceiling = (f.ceiling && f.hand) ? per_work(f.ceiling) / per_work(f.hand) : nan;
      f.wrapped_vs_ceiling = (f.ceiling && f.wrapped) ? per_work(f.ceiling) / per_work(f.wrapped) : nan;
      f.hand_pct_of_peak = f.hand && f.hand->pct_of_peak >= 0 ? f.hand->pct_of_peak : nan;
      f.bound_row = f.hand ? f.hand : (f.ceiling ? f.ceiling : f.wrapped);
      f.bound = f.bound_row ? roofline_bound(t, *f.bound_row) : std::nullopt;
      // A working set just above the measured LLC (the probe doubles its size,
      // so the real LLC may be up to twice it) that some tier ran faster than
      // the DRAM term allows sat in cache: bound it by P alone. Far above the
      // LLC a row beyond the bound stays DRAM and shows > 100%: there the
      // bound's bandwidth (triad, with its write traffic) is what is wrong.
      // A read of the row's own footprint, or a cold row, is no DRAM guess.
      if (f.bound && !f.bound->in_llc && !f.bound->read && f.bound_row->key.cache_mode != "cold" &&
          f.bound->dram < f.bound->peak && llc > 0 && f.bound_row->bytes_per_iter <= 2 * llc) {
        double fastest = 0;
        for (const BenchRow* r : {f.ceiling, f.wrapped, f.hand})
          if (r) fastest = std::max(fastest, r->throughput());
        if (fastest > f.bound->dram) {
          f.bound->flops = f.bound->peak;
          f.bound->in_llc = true;
          f.bound->limit = "compute, cache-resident: measured above the DRAM bound";
        }
      }
      if (f.bound && f.bound->flops > 0) f.bound_invalid = bound_beaten(f, f.bound->flops, f.bound->limit);
      auto pct = [&](const BenchRow* r) {
        return r && f.bound && f.bound->flops > 0 && f.bound_invalid.empty() ? 100.0 * r->throughput() / f.bound->flops
                                                                             : nan;
      };
      f.hand_pct_of_bound = pct(f.hand);
      f.ceiling_pct_of_bound = pct(f.ceiling);
      if (!f.bound) {
        if (const BenchRow* r = f.hand && f.hand->pct_of_peak > 0 ? f.hand : f.ceiling; r && r->pct_of_peak > 0)
          f.peak = r->throughput() / (r->pct_of_peak / 100);
        // A read of the row's own footprint on its threads bounds it where the
        // suite probed one (decode's tokens), as it bounds the claims (claims.cpp).
        if (const BenchRow* r = f.bound_row; r && r->bytes_per_iter > 0 && r->work_per_iter > 0)
          if (const double read = t.footprint_read(r->key.shape, r->key.precision, r->key.threads, r->key.cache_mode);
              read > 0)
            f.peak = read * r->work_per_iter / r->bytes_per_iter, f.peak_is_read = true;
        const std::string limit = f.peak_is_read ? "footprint's read" : "measured peak";
        if (f.peak > 0 && f.bound_row) f.bound_invalid = bound_beaten(f, f.peak, limit);
        auto of_peak = [&](const BenchRow* r) {
          return r && f.peak > 0 && f.bound_invalid.empty() ? 100.0 * r->throughput() / f.peak : nan;
        };
        f.hand_pct_of_bound = of_peak(f.hand);
        f.ceiling_pct_of_bound = of_peak(f.ceiling);
      }
      const BenchRow* tiers[3] = {f.ceiling, f.wrapped, f.hand};
      for (int i = 0; i < 3; ++i)
        f.cv_pct[i] = !tiers[i]                      ? nan
                      : tiers[i]->samples.size() > 1 ? 100.0 * coefficient_of_variation(tiers[i]->samples)
                                                     : 0.0;
      auto verdict = [&](Tier tier) {
        for (const auto& r : t.rows)
          if (r.key.tier == tier && in_group(r)) return r.verdict;
        return Verdict::not_run("no row");
      };
      f.verdict_wrapped = verdict(Tier::Wrapped);
      f.verdict_hand = verdict(Tier::Hand);
      gf.shapes.push_back(std::move(f));
    }
    out.push_back(std::move(gf));
  }
  return out;
}

std::string bound_cell(const ShapeFigures& f, const ThroughputScale& scale) {
  auto shown = [&](double throughput) { return num(throughput * scale.factor, "%.1f"); };
  if (!f.bound_invalid.empty()) return shown(f.bound ? f.bound->flops : f.peak) + " (invalid: " + f.bound_invalid + ")";
  if (!f.bound)
    return f.peak > 0 ? shown(f.peak) + (f.peak_is_read ? " (read of its footprint)" : " (measured peak)") : "—";
  std::string cell = shown(f.bound->flops) + " (" + f.bound->limit;
  if (f.bound->in_llc) cell += " " + mib(f.bound_row->bytes_per_iter);
  else cell += ", " + num(f.bound->intensity, "%.3g") + " flop/B";
  return cell + ")";
}

std::string render_markdown(const BenchTable& t, const std::string& family) {
  std::ostringstream out;
  const ThroughputScale scale = throughput_scale(t);
  const std::string& unit = scale.unit;
  out << "# Bench: " << family << "\n\n";
  for (const auto& [k, v] : report_metadata(t)) out << "- " << k << ": " << v << "\n";
  if (t.meta("ceiling_vendors")) {
    out << "\n## Ceiling vendors\n\nTried (each timed on every shape unless screened out):\n\n";
    for (const auto& v : t.meta_list("ceiling_vendors")) out << "- " << v << "\n";
    if (const auto not_run = t.meta_list("ceiling_not_run"); !not_run.empty()) {
      out << "\nCould not run, or left out:\n\n";
      for (const auto& nr : not_run) out << "- " << nr << "\n";
    }
    if (const auto warnings = t.meta_list("vendor_warnings"); !warnings.empty()) {
      out << "\n";
      for (const auto& w : warnings) out << "> **" << w << "**\n>\n";
    }
  }
  // Every row, not the metadata: a table built in memory shows them too.
  bool any_invalid = false;
  for (const auto& r : t.rows)
    if (!r.valid()) {
      if (!any_invalid)
        out << "\n## Invalid vendor rows\n\nImplausible against the same vendor's other rows "
               "(plausibility.hpp); left out of every ratio:\n\n";
      out << "- " << r.key.to_string() << ": invalid: " << r.invalid_reason << "\n";
      any_invalid = true;
    }
  const bool roof = parse_peaks(t).ok;
  out << "\nCeiling = the best ceiling run over every vendor configuration (raw C), its winner in brackets. "
         "hand ÷ ceiling and wrapped ÷ ceiling are throughput ratios against that best ceiling (> 1: faster than "
         "the best library). FFI overhead = wrapped/ceiling median time per unit of work against the ceiling of the "
         "same library and configuration as the wrapped tier. "
      << (roof ? "Bound = roofline min(P, BW × flop/byte) from the measured peaks for the thread count; a working set "
                 "within the measured LLC is bounded by P alone and marked \"in LLC\" (its traffic is not DRAM "
                 "traffic); so is a working set up to twice the measured LLC that some tier ran faster than its DRAM "
                 "term allows, marked \"cache-resident\" (the probe doubles its sizes, so the real LLC may be larger). "
                 "A row whose suite read its own footprint on its threads (q4k; gemm's GEMV shapes) takes that read as "
                 "BW (\"read of N MiB\"); a row that counts items (decode's tokens) is bounded by that read alone "
                 "(\"read of its footprint\"). "
          : t.meta("device_peaks")
              ? "Bound = the device's measured peak for the precision (" + *t.meta("device_peaks") + "). "
              : std::string("Roofline: no measured peaks in this table (run `popper peak`). "))
      << "Medians over the repetitions; cv = stddev/mean.\n";
  for (const auto& g : table_figures(t)) {
    out << "\n## " << g.precision << ", threads " << g.threads
        << (g.cache_mode == "warm" ? "" : ", " + g.cache_mode + " (operands evicted from the caches before each call)")
        << "\n\n";
    out << "| shape | ceiling " << unit << " (winner) | wrapped " << unit << " | hand " << unit
        << " | hand ÷ ceiling | FFI overhead | wrapped ÷ ceiling | bound " << unit
        << " (limit) | hand % bound | ceiling % bound | cv (c/w/h) | verdict (wrapped / hand) |\n";
    out << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n";
    for (const auto& f : g.shapes) {
      auto tput = [&](const BenchRow* r) { return r ? num(r->throughput() * scale.factor, "%.2f") : std::string("—"); };
      std::string ceiling_cell = tput(f.ceiling) + (f.ceiling ? " (" + f.ceiling->key.backend + ")" : "");
      if (!f.invalid_ceilings.empty())
        ceiling_cell += f.ceiling ? " [" + std::to_string(f.invalid_ceilings.size()) + " invalid, left out]"
                                  : " [invalid: " + f.invalid_ceilings.front()->invalid_reason + "]";
      out << "| " << f.shape << " | " << ceiling_cell << " | " << tput(f.wrapped) << " | " << tput(f.hand) << " | "
          << num(f.hand_vs_ceiling, "%.3f×") << " | " << num(f.ffi, "%.3f×") << " | "
          << num(f.wrapped_vs_ceiling, "%.3f×") << " | " << bound_cell(f, scale) << " | "
          << num(f.hand_pct_of_bound, "%.1f%%") << " | " << num(f.ceiling_pct_of_bound, "%.1f%%") << " | "
          << num(f.cv_pct[0], "%.1f%%") << " / " << num(f.cv_pct[1], "%.1f%%") << " / " << num(f.cv_pct[2], "%.1f%%")
          << " | " << f.verdict_wrapped.label << " / " << f.verdict_hand.label << " |\n";
    }
  }
  // Tiers beside the three above (a device backend, the reference, packing): every row, as measured.
  auto other = [](const BenchRow& r) {
    return r.key.tier != Tier::Ceiling && r.key.tier != Tier::Wrapped && r.key.tier != Tier::Hand;
  };
  if (std::any_of(t.rows.begin(), t.rows.end(), other)) {
    out << "\n## Other tiers\n\n| tier | backend | shape | precision | threads | " << unit
        << " | % of peak | median s | cv | verdict |\n|---|---|---|---|---:|---:|---:|---:|---:|---|\n";
    for (const auto& r : t.rows) {
      if (!other(r)) continue;
      const bool timed = !r.samples.empty() && r.unit == kUnitSeconds;
      out << "| " << to_string(r.key.tier) << " | " << r.key.backend << " | " << r.key.shape << " | " << r.key.precision
          << " | " << r.key.threads << " | " << (timed ? num(r.throughput() * scale.factor, "%.3g") : "—") << " | "
          << (timed && r.pct_of_peak >= 0 ? num(r.pct_of_peak, "%.1f%%") : "—") << " | "
          << (timed ? num(r.median(), "%.4g") : "—") << " | "
          << (timed ? num(100 * coefficient_of_variation(r.samples), "%.1f%%") : "—") << " | " << r.verdict.label
          << " |\n";
    }
  }
  // Every ceiling configuration, so the vendor comparison is visible.
  bool any_ceiling = false;
  for (const auto& r : t.rows) any_ceiling |= r.key.tier == Tier::Ceiling;
  if (any_ceiling) {
    out << "\n## Ceiling per vendor configuration\n\n| shape | precision | threads | backend | " << unit
        << " | ÷ best | median s | cv |\n|---|---|---:|---|---:|---:|---:|---:|\n";
    for (const auto& r : t.rows) {
      if (r.key.tier != Tier::Ceiling || r.samples.empty()) continue;
      const double cvv = coefficient_of_variation(r.samples);
      const BenchRow* best = best_row(t, Tier::Ceiling, r.key.shape, r.key.precision, r.key.threads, r.key.cache_mode);
      // An invalid row keeps its measurement on show, but no ratio is taken from it.
      out << "| " << r.key.shape << " | " << r.key.precision << " | " << r.key.threads << " | " << r.key.backend
          << (best == &r ? " **best**" : "") << " | " << num(r.throughput() * scale.factor, "%.2f") << " | "
          << (r.valid() ? num(best ? best->median() / r.median() : std::nan(""), "%.3f")
                        : "invalid: " + r.invalid_reason)
          << " | " << num(r.median(), "%.4g") << " | " << num(cvv * 100, "%.1f%%") << " |\n";
    }
  }
  return out.str();
}

namespace {

// One log-log roofline panel per precision: compute roofs and DRAM slopes for
// 1 thread and all cores, and every row's point (intensity, throughput):
// colour = tier, circle = 1 thread, square = more, hollow = working set in LLC.
std::string roofline_panels(const BenchTable& t, double width, double y0, double& height) {
  const RooflinePeaks pk = parse_peaks(t);
  std::ostringstream o;
  height = 0;
  if (!pk.ok) return "";
  const std::map<Tier, std::string> color = {
      {Tier::Ceiling, "#4e79a7"}, {Tier::Wrapped, "#f28e2b"}, {Tier::Hand, "#59a14f"}, {Tier::Reference, "#999999"}};
  std::set<std::string> precisions;
  for (const auto& r : t.rows)
    if (roofline_bound(t, r)) precisions.insert(r.key.precision);
  const double panel_h = 360, left = 80, right = 220, top_pad = 30;
  for (const auto& prec : precisions) {
    const double* P = prec == "f32" ? pk.fp32 : pk.fp64;
    std::vector<std::pair<const BenchRow*, RooflineBound>> pts;
    double imin = 1e30, imax = 0, ymin = 1e30, ymax = P[1];
    for (const auto& r : t.rows) {
      if (r.key.precision != prec || r.samples.empty()) continue;
      const auto b = roofline_bound(t, r);
      if (!b) continue;
      pts.emplace_back(&r, *b);
      imin = std::min(imin, b->intensity);
      imax = std::max(imax, b->intensity);
      ymin = std::min(ymin, r.throughput());
      ymax = std::max(ymax, r.throughput());
    }
    if (pts.empty()) continue;
    const double lx0 = std::floor(std::log10(imin)) - 0.5, lx1 = std::ceil(std::log10(imax)) + 0.5;
    const double ly0 = std::floor(std::log10(std::max(ymin, 1.0))) - 0.2, ly1 = std::log10(ymax) + 0.3;
    const double px0 = left, px1 = width - right, py0 = y0 + top_pad, py1 = y0 + panel_h;
    auto X = [&](double i) { return px0 + (std::log10(i) - lx0) / (lx1 - lx0) * (px1 - px0); };
    auto Y = [&](double f) { return py1 - (std::log10(f) - ly0) / (ly1 - ly0) * (py1 - py0); };
    o << "<text x=\"" << left << "\" y=\"" << y0 + 14 << "\" font-weight=\"bold\">roofline, " << prec
      << " (log-log; x: flop per compulsory DRAM byte, y: GFLOP/s)</text>\n";
    o << "<rect x=\"" << px0 << "\" y=\"" << py0 << "\" width=\"" << px1 - px0 << "\" height=\"" << py1 - py0
      << "\" fill=\"none\" stroke=\"black\"/>\n";
    for (int e = static_cast<int>(std::ceil(lx0)); e <= static_cast<int>(std::floor(lx1)); ++e) {
      const double x = X(std::pow(10.0, e));
      o << "<line x1=\"" << x << "\" y1=\"" << py0 << "\" x2=\"" << x << "\" y2=\"" << py1
        << "\" stroke=\"#eee\"/><text x=\"" << x << "\" y=\"" << py1 + 14 << "\" text-anchor=\"middle\">1e" << e
        << "</text>\n";
    }
    for (int e = static_cast<int>(std::ceil(ly0)); e <= static_cast<int>(std::floor(ly1)); ++e) {
      const double y = Y(std::pow(10.0, e));
      o << "<line x1=\"" << px0 << "\" y1=\"" << y << "\" x2=\"" << px1 << "\" y2=\"" << y
        << "\" stroke=\"#eee\"/><text x=\"" << px0 - 6 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">"
        << num(std::pow(10.0, e) * 1e-9, "%g") << "</text>\n";
    }
    // Roofs: 1 thread (solid) and all cores (dashed).
    for (int k = 0; k < 2; ++k) {
      const double peakv = P[k], bw = pk.bw[k];
      const double ridge = peakv / bw;
      const double ia = std::pow(10.0, lx0), ib = std::pow(10.0, lx1);
      const double ir = std::clamp(ridge, ia, ib);
      const char* dash = k ? " stroke-dasharray=\"6,4\"" : "";
      o << "<polyline fill=\"none\" stroke=\"#e15759\" stroke-width=\"2\"" << dash << " points=\"" << X(ia) << ","
        << Y(std::max(bw * ia, std::pow(10.0, ly0))) << " " << X(ir) << "," << Y(std::min(bw * ir, peakv)) << " "
        << X(ib) << "," << Y(peakv) << "\"/>\n";
      o << "<text x=\"" << px1 + 4 << "\" y=\"" << Y(peakv) + 4 << "\" fill=\"#e15759\" font-size=\"10\">"
        << (k ? "all cores " : "1 core ") << num(peakv * 1e-9, "%.0f") << " GFLOP/s, " << num(bw * 1e-9, "%.0f")
        << " GB/s</text>\n";
    }
    for (const auto& [r, b] : pts) {
      const auto it = color.find(r->key.tier);
      const std::string c = it == color.end() ? "#333" : it->second;
      const double x = X(b.intensity), y = Y(r->throughput());
      const std::string fill = b.in_llc ? "white" : c;
      char lab[64];
      std::snprintf(lab, sizeof lab, "%.1f", r->throughput() * 1e-9);
      const std::string title = tier_text(r->key.tier) + " " + r->key.backend + " " + r->key.shape + " threads " +
                                std::to_string(r->key.threads) + ": " + lab + " GFLOP/s, " +
                                num(100.0 * r->throughput() / b.flops, "%.1f%%") + " of bound (" + b.limit + ")";
      if (r->key.threads <= 1)
        o << "<circle cx=\"" << x << "\" cy=\"" << y << "\" r=\"5\" fill=\"" << fill << "\" stroke=\"" << c
          << "\" stroke-width=\"2\"><title>" << markup_escape(title) << "</title></circle>\n";
      else
        o << "<rect x=\"" << x - 5 << "\" y=\"" << y - 5 << "\" width=\"10\" height=\"10\" fill=\"" << fill
          << "\" stroke=\"" << c << "\" stroke-width=\"2\"><title>" << markup_escape(title) << "</title></rect>\n";
      if (r->key.tier == Tier::Hand)
        o << "<text x=\"" << x + 7 << "\" y=\"" << y - 6 << "\" font-size=\"9\" fill=\"#333\">"
          << markup_escape(r->key.shape) << "</text>\n";
    }
    double ly = py0 + 60;
    for (const auto& [tier, c] : color) {
      o << "<circle cx=\"" << px1 + 26 << "\" cy=\"" << ly << "\" r=\"5\" fill=\"" << c << "\"/><text x=\"" << px1 + 36
        << "\" y=\"" << ly + 4 << "\">" << to_string(tier) << "</text>\n";
      ly += 16;
    }
    o << "<text x=\"" << px1 + 20 << "\" y=\"" << ly + 8 << "\" font-size=\"10\">circle 1 thread, square more</text>\n"
      << "<text x=\"" << px1 + 20 << "\" y=\"" << ly + 22 << "\" font-size=\"10\">hollow: working set in LLC</text>\n";
    y0 += panel_h + 50;
    height += panel_h + 50;
  }
  return o.str();
}

}  // namespace

std::vector<double> axis_ticks(double max) {
  if (!(max > 0)) max = 1;
  constexpr int kMostIntervals = 6;
  const double magnitude = std::pow(10.0, std::floor(std::log10(max / kMostIntervals)));
  // A hair of tolerance so that 150 / 25 computed as 6.000000001 still gives 6 intervals.
  auto intervals = [&](double step) { return static_cast<int>(std::ceil(max / step - 1e-9)); };
  double step = 10 * magnitude;
  for (const double mantissa : {1.0, 2.0, 2.5, 5.0})
    if (intervals(mantissa * magnitude) <= kMostIntervals) {
      step = mantissa * magnitude;
      break;
    }
  std::vector<double> ticks;
  for (int i = 0; i <= intervals(step); ++i) ticks.push_back(i * step);
  return ticks;
}

std::vector<std::string> shapes_by_size(const BenchTable& t) {
  struct Size {
    double work = 0, bytes = 0;
  };
  std::map<std::string, Size> size;  // a shape's rows may differ (a tier without counters): the largest counts
  for (const auto& r : t.rows) {
    Size& s = size[r.key.shape];
    s.work = std::max(s.work, r.work_per_iter);
    s.bytes = std::max(s.bytes, r.bytes_per_iter);
  }
  std::vector<std::string> out = shapes_in_order(t);
  std::stable_sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) {
    return std::tie(size[a].work, size[a].bytes, a) < std::tie(size[b].work, size[b].bytes, b);
  });
  return out;
}

namespace {

// What the layout assumes of the sans-serif face, since no font is measured
// here: widths per character a little above DejaVu Sans's (digits 0.64 em,
// lower case ~0.6 em) and Helvetica's, so a text placed by them stays inside
// the room given to it; the report check (scripts/report-check.sh) measures
// the real boxes in Chromium.
constexpr double kCharEm = 0.65, kBoldCharEm = 0.72, kLineEm = 1.2;

std::size_t code_points(const std::string& s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

double text_width(const std::string& s, double font_size, bool bold) {
  return static_cast<double>(code_points(s)) * font_size * (bold ? kBoldCharEm : kCharEm);
}

// Bars: a value label turned a quarter turn runs up from its bar, centred on
// it (dominant-baseline central). Across the bars it takes one line height,
// kLineEm × kValueFont = 10.8 px, less than the bar pitch kBarWidth = 18 px:
// the labels of neighbouring bars cannot overlap, whatever their values.
constexpr double kBarWidth = 18, kValueFont = 9;
static_assert(kLineEm * kValueFont < kBarWidth, "value labels of neighbouring bars would overlap");
// Room above the plot for the label of a bar that reaches the top: its error
// bar may stand 10 px above, the label starts 3 px above that and is at most
// "99999.9" long (7 characters).
constexpr double kValueLabelRoom = 10 + 3 + 7 * kCharEm * kValueFont;

std::string value_label(double bar_centre, double bottom, const std::string& text) {
  std::ostringstream o;
  o << "<text class=\"value\" transform=\"translate(" << bar_centre << "," << bottom
    << ") rotate(-90)\" dominant-baseline=\"central\" font-size=\"" << kValueFont << "\">" << text << "</text>\n";
  return o.str();
}

std::string tick_label(double v) {
  char lab[32];
  std::snprintf(lab, sizeof lab, "%.10g", v);
  return lab;
}

}  // namespace

std::string render_svg(const BenchTable& t, const std::string& family, const PeakResult* peak,
                       const std::string& peak_kind_f32, const std::string& peak_kind_f64) {
  const auto gs = groups(t);
  const auto shapes = shapes_by_size(t);
  const std::vector<std::pair<Tier, std::string>> tiers = {
      {Tier::Ceiling, "#4e79a7"}, {Tier::Wrapped, "#f28e2b"}, {Tier::Hand, "#59a14f"}};
  const double plot_h = 280, top = 60, left = 80, bar_w = kBarWidth, gap = 26, margin = 10;
  const double panel_h = 20 + kValueLabelRoom + plot_h;  // header, value label room, plot
  const double group_w = bar_w * double(tiers.size()) + gap;
  const double right = 200;  // room for the legend and the peak label
  const ThroughputScale scale = throughput_scale(t);
  const std::string& unit = scale.unit;
  // The title and the machine line start at the left margin; the canvas is
  // made wide enough for them (a centred title wider than the canvas starts
  // off its left edge).
  const std::string title =
      family + ": ceiling vs wrapped vs hand (" + unit + ", median; bars: 95% interval over trials)";
  const auto fp = t.meta("fingerprint");
  const std::string machine = fp ? *fp + " — " + t.meta("date").value_or("") : "";
  const double width =
      std::max({680.0, left + 40 + group_w * double(shapes.size()) + right, 2 * margin + text_width(title, 16, true),
                2 * margin + text_width(machine, 12, false)});
  const double bars_height = top + (panel_h + 90) * double(std::max<std::size_t>(gs.size(), 1));
  double roof_height = 0;
  const std::string roof = roofline_panels(t, width, bars_height, roof_height);
  const double height = bars_height + roof_height;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height << "\" viewBox=\"0 0 "
    << width << " " << height << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << margin << "\" y=\"24\" font-size=\"16\" font-weight=\"bold\">" << markup_escape(title)
    << "</text>\n";
  if (fp) o << "<text x=\"" << margin << "\" y=\"42\" fill=\"#555\">" << markup_escape(machine) << "</text>\n";
  double y0 = top;
  for (const auto& g : gs) {
    const std::string kind = g.precision == "f64" ? peak_kind_f64 : peak_kind_f32;
    const double pk = (peak && (kind == "fp32" || kind == "fp64")) ? peak_for(*peak, kind, g.threads) * 1e-9 : 0;
    double vmax = pk;
    for (const auto& shape : shapes)
      for (const auto& [tier, color] : tiers)
        if (const BenchRow* r = best_row(t, tier, shape, g.precision, g.threads, g.cache_mode))
          vmax = std::max(vmax, r->throughput() * scale.factor);
    const std::vector<double> ticks = axis_ticks(vmax);
    const double axis_max = ticks.back();
    const double plot_top = y0 + 20 + kValueLabelRoom, plot_bottom = plot_top + plot_h;
    auto ypos = [&](double v) { return plot_bottom - (v / axis_max) * (plot_bottom - plot_top); };
    o << "<text x=\"" << left << "\" y=\"" << y0 + 10 << "\" font-weight=\"bold\">" << g.precision << ", threads "
      << g.threads << "</text>\n";
    // axes and ticks
    o << "<line x1=\"" << left << "\" y1=\"" << plot_top << "\" x2=\"" << left << "\" y2=\"" << plot_bottom
      << "\" stroke=\"black\"/>\n";
    o << "<line x1=\"" << left << "\" y1=\"" << plot_bottom << "\" x2=\"" << width - right << "\" y2=\"" << plot_bottom
      << "\" stroke=\"black\"/>\n";
    for (const double v : ticks) {
      const double y = ypos(v);
      o << "<line x1=\"" << left - 4 << "\" y1=\"" << y << "\" x2=\"" << width - right << "\" y2=\"" << y
        << "\" stroke=\"#ddd\"/>\n<text class=\"tick\" x=\"" << left - 8 << "\" y=\"" << y + 4
        << "\" text-anchor=\"end\">" << tick_label(v) << "</text>\n";
    }
    o << "<text transform=\"translate(" << left - 50 << "," << (plot_top + plot_bottom) / 2
      << ") rotate(-90)\" text-anchor=\"middle\">" << unit << "</text>\n";
    double x = left + 20;
    for (const auto& shape : shapes) {
      double bx = x;
      for (const auto& [tier, color] : tiers) {
        if (const BenchRow* r = best_row(t, tier, shape, g.precision, g.threads, g.cache_mode)) {
          const double v = r->throughput() * scale.factor, y = ypos(v);
          char lab[32];
          std::snprintf(lab, sizeof lab, "%.1f", v);
          o << "<rect x=\"" << bx << "\" y=\"" << y << "\" width=\"" << bar_w - 2 << "\" height=\"" << plot_bottom - y
            << "\" fill=\"" << color << "\"><title>" << to_string(tier) << " " << shape << " " << lab << " " << unit
            << "</title></rect>\n";
          // Error bar: the 95% interval of the median over trials (two-level bootstrap).
          double label_y = y - 3;
          if (r->samples.size() >= 2) {
            const RatioInterval ci = median_interval(TrialSamples{&r->samples, &r->trials});
            if (ci.lo > 0 && ci.hi > 0) {
              const double med = r->median(), cx = bx + bar_w / 2 - 1;
              const double ylo = ypos(v * med / ci.hi), yhi = std::max(plot_top - 10, ypos(v * med / ci.lo));
              o << "<path d=\"M" << cx - 3 << " " << ylo << "H" << cx + 3 << "M" << cx << " " << ylo << "V" << yhi
                << "M" << cx - 3 << " " << yhi << "H" << cx + 3 << "\" stroke=\"black\" fill=\"none\"/>\n";
              label_y = std::min(label_y, yhi - 3);
            }
          }
          o << value_label(bx + bar_w / 2 - 1, label_y, lab);
        }
        bx += bar_w;
      }
      o << "<text x=\"" << x + bar_w * 1.5 << "\" y=\"" << plot_bottom + 16 << "\" text-anchor=\"middle\">"
        << markup_escape(shape) << "</text>\n";
      x += group_w;
    }
    o << "<text x=\"" << (left + width - right) / 2 << "\" y=\"" << plot_bottom + 34
      << "\" text-anchor=\"middle\">shape</text>\n";
    if (pk > 0) {
      char lab[64];
      std::snprintf(lab, sizeof lab, "measured peak %.1f %s", pk, unit.c_str());
      o << "<line x1=\"" << left << "\" y1=\"" << ypos(pk) << "\" x2=\"" << width - right << "\" y2=\"" << ypos(pk)
        << "\" stroke=\"#e15759\" stroke-dasharray=\"6,4\" stroke-width=\"2\"/>\n<text x=\"" << width - right + 4
        << "\" y=\"" << ypos(pk) + 4 << "\" fill=\"#e15759\" font-size=\"10\">" << lab << "</text>\n";
    }
    // legend
    double ly = plot_top + 10;
    for (const auto& [tier, color] : tiers) {
      o << "<rect x=\"" << width - right + 20 << "\" y=\"" << ly + 20 << "\" width=\"12\" height=\"12\" fill=\""
        << color << "\"/><text x=\"" << width - right + 38 << "\" y=\"" << ly + 30 << "\">" << to_string(tier)
        << "</text>\n";
      ly += 18;
    }
    y0 += panel_h + 90;
  }
  o << roof;
  o << "</svg>\n";
  return o.str();
}

}  // namespace popper::bench
