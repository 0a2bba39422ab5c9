// Markdown table and SVG chart of a bench table (definitions in report.hpp).
#include "popper/bench/report.hpp"

#include "popper/bench/interval.hpp"
#include "popper/bench/stats.hpp"

#include <algorithm>
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
  bool operator<(const Group& o) const { return std::tie(precision, threads) < std::tie(o.precision, o.threads); }
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
    if (r.unit == kUnitSeconds) g.insert({r.key.precision, r.key.threads});
  return g;
}

std::string num(double v, const char* fmt) {
  if (std::isnan(v) || v <= 0) return "—";
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '<') out += "&lt;";
    else if (ch == '>') out += "&gt;";
    else if (ch == '&') out += "&amp;";
    else out.push_back(ch);
  }
  return out;
}

const char* unit_label(const BenchTable& t) {
  for (const auto& r : t.rows)
    if (r.work_unit == "items") return "G items/s";
  return "GFLOP/s";
}

}  // namespace

const BenchRow* best_row(const BenchTable& t, const std::string& tier, const std::string& shape,
                         const std::string& precision, int threads) {
  const BenchRow* best = nullptr;
  for (const auto& r : t.rows) {
    if (r.key.tier != tier || r.key.shape != shape || r.key.precision != precision || r.key.threads != threads ||
        r.samples.empty() || r.unit != kUnitSeconds)
      continue;
    if (!best || r.median() < best->median()) best = &r;
  }
  return best;
}

const BenchRow* matching_row(const BenchTable& t, const std::string& tier, const std::string& shape,
                             const std::string& precision, int threads, const std::string& backend) {
  for (const auto& r : t.rows)
    if (r.key.tier == tier && r.key.shape == shape && r.key.precision == precision && r.key.threads == threads &&
        r.key.backend == backend && !r.samples.empty() && r.unit == kUnitSeconds)
      return &r;
  return best_row(t, tier, shape, precision, threads);
}

std::string render_markdown(const BenchTable& t, const std::string& family) {
  std::ostringstream out;
  const std::string unit = unit_label(t);
  out << "# Bench: " << family << "\n\n";
  for (const char* k : {"date", "commit", "fingerprint", "cpu_model", "blas_core", "compiler", "loadavg_at_start",
                        "peak_fp32_avx2_gflops", "peak_fp64_avx2_gflops", "peak_avx512", "peak_triad_gbs"})
    if (auto v = t.meta(k)) out << "- " << k << ": " << *v << "\n";
  out << "\nCeiling = best OpenBLAS core type run (raw C). FFI overhead = wrapped/ceiling median time, against the "
         "ceiling run on the same OpenBLAS core as the wrapped tier; "
         "speedup = wrapped/hand median time; % peak = throughput / measured peak for the thread count. "
         "Medians over the repetitions; cv = stddev/mean.\n";
  for (const auto& g : groups(t)) {
    out << "\n## " << g.precision << ", threads " << g.threads << "\n\n";
    out << "| shape | ceiling " << unit << " | wrapped " << unit << " | hand " << unit
        << " | FFI overhead | speedup | wrapped % peak | hand % peak | cv (c/w/h) | verdict (wrapped / hand) |\n";
    out << "|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n";
    for (const auto& shape : shapes_in_order(t)) {
      const BenchRow* c = best_row(t, "ceiling", shape, g.precision, g.threads);
      const BenchRow* w = best_row(t, "wrapped", shape, g.precision, g.threads);
      const BenchRow* h = best_row(t, "hand", shape, g.precision, g.threads);
      if (!c && !w && !h) {
        // A row may exist without samples (incorrect): still show it.
        bool any = false;
        for (const auto& r : t.rows) any |= r.key.shape == shape && r.key.precision == g.precision && r.key.threads == g.threads;
        if (!any) continue;
      }
      auto gf = [](const BenchRow* r) { return r ? num(r->throughput() * 1e-9, "%.2f") : std::string("—"); };
      auto cv = [](const BenchRow* r) {
        return r ? num(r->samples.size() > 1 ? 100.0 * coefficient_of_variation(r->samples) : 0.0, "%.1f%%")
                 : std::string("—");
      };
      auto verdict = [&](const std::string& tier) {
        for (const auto& r : t.rows)
          if (r.key.tier == tier && r.key.shape == shape && r.key.precision == g.precision && r.key.threads == g.threads)
            return r.verdict;
        return std::string("not run");
      };
      const BenchRow* c_same = w ? matching_row(t, "ceiling", shape, g.precision, g.threads, w->key.backend) : nullptr;
      const double ffi = (c_same && w) ? w->median() / c_same->median() : std::nan("");
      const double speedup = (w && h) ? w->median() / h->median() : std::nan("");
      out << "| " << shape << " | " << gf(c) << (c ? " (" + c->key.backend + ")" : "") << " | " << gf(w) << " | "
          << gf(h) << " | " << num(ffi, "%.3f×") << " | " << num(speedup, "%.3f×") << " | "
          << (w && w->pct_of_peak >= 0 ? num(w->pct_of_peak, "%.1f%%") : "—") << " | "
          << (h && h->pct_of_peak >= 0 ? num(h->pct_of_peak, "%.1f%%") : "—") << " | " << cv(c) << " / " << cv(w)
          << " / " << cv(h) << " | " << verdict("wrapped") << " / " << verdict("hand") << " |\n";
    }
  }
  // Ceiling per core type, so the core-type comparison is visible.
  bool any_ceiling = false;
  for (const auto& r : t.rows) any_ceiling |= r.key.tier == "ceiling";
  if (any_ceiling) {
    out << "\n## Ceiling per OpenBLAS core type\n\n| shape | precision | threads | backend | " << unit
        << " | median s | cv |\n|---|---|---:|---|---:|---:|---:|\n";
    for (const auto& r : t.rows) {
      if (r.key.tier != "ceiling" || r.samples.empty()) continue;
      const double cvv = coefficient_of_variation(r.samples);
      out << "| " << r.key.shape << " | " << r.key.precision << " | " << r.key.threads << " | " << r.key.backend << " | "
          << num(r.throughput() * 1e-9, "%.2f") << " | " << num(r.median(), "%.4g") << " | " << num(cvv * 100, "%.1f%%")
          << " |\n";
    }
  }
  return out.str();
}

std::string render_svg(const BenchTable& t, const std::string& family, const PeakResult* peak,
                       const std::string& peak_kind_f32, const std::string& peak_kind_f64) {
  const auto gs = groups(t);
  const auto shapes = shapes_in_order(t);
  const std::vector<std::pair<std::string, std::string>> tiers = {
      {"ceiling", "#4e79a7"}, {"wrapped", "#f28e2b"}, {"hand", "#59a14f"}};
  const double panel_h = 300, top = 60, left = 80, bar_w = 18, gap = 26;
  const double group_w = bar_w * double(tiers.size()) + gap;
  const double right = 200;  // room for the legend and the peak label
  const double width = std::max(680.0, left + 40 + group_w * double(shapes.size()) + right);
  const double height = top + (panel_h + 90) * double(std::max<std::size_t>(gs.size(), 1));
  const std::string unit = unit_label(t);
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << width / 2 << "\" y=\"24\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">"
    << xml_escape(family) << ": ceiling vs wrapped vs hand (" << unit << ", median; bars: 95% interval over trials)</text>\n";
  if (auto fp = t.meta("fingerprint"))
    o << "<text x=\"" << width / 2 << "\" y=\"42\" text-anchor=\"middle\" fill=\"#555\">" << xml_escape(*fp) << " — "
      << xml_escape(t.meta("date").value_or("")) << "</text>\n";
  double y0 = top;
  for (const auto& g : gs) {
    const std::string kind = g.precision == "f64" ? peak_kind_f64 : peak_kind_f32;
    const double pk = (peak && (kind == "fp32" || kind == "fp64")) ? peak_for(*peak, kind, g.threads) * 1e-9 : 0;
    double vmax = pk;
    for (const auto& shape : shapes)
      for (const auto& [tier, color] : tiers)
        if (const BenchRow* r = best_row(t, tier, shape, g.precision, g.threads)) vmax = std::max(vmax, r->throughput() * 1e-9);
    if (vmax <= 0) vmax = 1;
    vmax *= 1.1;
    const double plot_top = y0 + 20, plot_bottom = y0 + panel_h;
    auto ypos = [&](double v) { return plot_bottom - (v / vmax) * (plot_bottom - plot_top); };
    o << "<text x=\"" << left << "\" y=\"" << y0 + 10 << "\" font-weight=\"bold\">" << g.precision << ", threads "
      << g.threads << "</text>\n";
    // axes and ticks
    o << "<line x1=\"" << left << "\" y1=\"" << plot_top << "\" x2=\"" << left << "\" y2=\"" << plot_bottom
      << "\" stroke=\"black\"/>\n";
    o << "<line x1=\"" << left << "\" y1=\"" << plot_bottom << "\" x2=\"" << width - right << "\" y2=\"" << plot_bottom
      << "\" stroke=\"black\"/>\n";
    for (int i = 0; i <= 5; ++i) {
      const double v = vmax * i / 5.0, y = ypos(v);
      char lab[32];
      std::snprintf(lab, sizeof lab, "%.0f", v);
      o << "<line x1=\"" << left - 4 << "\" y1=\"" << y << "\" x2=\"" << width - right << "\" y2=\"" << y
        << "\" stroke=\"#ddd\"/>\n<text x=\"" << left - 8 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">" << lab
        << "</text>\n";
    }
    o << "<text transform=\"translate(" << left - 50 << "," << (plot_top + plot_bottom) / 2
      << ") rotate(-90)\" text-anchor=\"middle\">" << unit << "</text>\n";
    double x = left + 20;
    for (const auto& shape : shapes) {
      double bx = x;
      for (const auto& [tier, color] : tiers) {
        if (const BenchRow* r = best_row(t, tier, shape, g.precision, g.threads)) {
          const double v = r->throughput() * 1e-9, y = ypos(v);
          char lab[32];
          std::snprintf(lab, sizeof lab, "%.1f", v);
          o << "<rect x=\"" << bx << "\" y=\"" << y << "\" width=\"" << bar_w - 2 << "\" height=\"" << plot_bottom - y
            << "\" fill=\"" << color << "\"><title>" << tier << " " << shape << " " << lab << " " << unit
            << "</title></rect>\n";
          // Error bar: the 95% interval of the median over trials (two-level bootstrap).
          double label_y = y - 3;
          if (r->samples.size() >= 2) {
            const RatioInterval ci = median_interval(TrialSamples{&r->samples, &r->trials});
            if (ci.lo > 0 && ci.hi > 0) {
              const double med = r->median(), cx = bx + bar_w / 2 - 1;
              const double ylo = ypos(v * med / ci.hi), yhi = std::max(plot_top - 10, ypos(v * med / ci.lo));
              o << "<path d=\"M" << cx - 3 << " " << ylo << "H" << cx + 3 << "M" << cx << " " << ylo << "V" << yhi << "M"
                << cx - 3 << " " << yhi << "H" << cx + 3 << "\" stroke=\"black\" fill=\"none\"/>\n";
              label_y = std::min(label_y, yhi - 3);
            }
          }
          o << "<text x=\"" << bx + bar_w / 2 - 1 << "\" y=\"" << label_y << "\" text-anchor=\"middle\" font-size=\"9\">"
            << lab << "</text>\n";
        }
        bx += bar_w;
      }
      o << "<text x=\"" << x + bar_w * 1.5 << "\" y=\"" << plot_bottom + 16 << "\" text-anchor=\"middle\">"
        << xml_escape(shape) << "</text>\n";
      x += group_w;
    }
    o << "<text x=\"" << (left + width - right) / 2 << "\" y=\"" << plot_bottom + 34 << "\" text-anchor=\"middle\">shape</text>\n";
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
      o << "<rect x=\"" << width - right + 20 << "\" y=\"" << ly + 20 << "\" width=\"12\" height=\"12\" fill=\"" << color
        << "\"/><text x=\"" << width - right + 38 << "\" y=\"" << ly + 30 << "\">" << tier << "</text>\n";
      ly += 18;
    }
    y0 += panel_h + 90;
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace popper::bench
