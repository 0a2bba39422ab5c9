// Drift against depth (drift.hpp): measurement, fits, CSV and SVG.
#include "impl/decode/drift.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "impl/decode/forward.hpp"
#include "impl/decode/parity.hpp"
#include "popper/error.hpp"

namespace popper::decode {

namespace {

std::vector<DriftPoint> of_series(std::span<const DriftPoint> points, const std::string& series) {
  std::vector<DriftPoint> out;
  for (const auto& p : points)
    if (p.series == series && p.rel_l2 > 0 && std::isfinite(p.rel_l2)) out.push_back(p);
  return out;
}

std::vector<std::string> series_names(std::span<const DriftPoint> points) {
  std::vector<std::string> out;
  for (const auto& p : points)
    if (std::find(out.begin(), out.end(), p.series) == out.end()) out.push_back(p.series);
  return out;
}

bool is_order(const std::string& name) {
  return std::any_of(std::begin(accum::kAllOrders), std::end(accum::kAllOrders),
                     [&](accum::Order o) { return name == accum::to_string(o); });
}

// Slope of the least-squares line through (x_i, y_i).
double slope(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sx += x[i], sy += y[i], sxx += x[i] * x[i], sxy += x[i] * y[i];
  const double den = n * sxx - sx * sx;
  return den > 0 ? (n * sxy - sx * sy) / den : NAN;
}

}  // namespace

// About 10 kernels per layer, each 1.001x off.
double hypothesis_rel(int depth) { return std::pow(1.001, 10.0 * depth) - 1.0; }

std::vector<std::string> drift_series() {
  std::vector<std::string> out;
  for (auto o : accum::kAllOrders) out.emplace_back(accum::to_string(o));
  out.emplace_back("cpu-simd");
  return out;
}

std::vector<int> drift_depths(int layers) {
  std::vector<int> out;
  for (int d = 1; d < layers; d *= 2) out.push_back(d);
  out.push_back(layers);
  return out;
}

void check_drift_series(const std::vector<std::string>& series) {
  std::string known;
  for (auto o : accum::kAllOrders) known += accum::to_string(o) + std::string(", ");
  for (const auto& name : series)
    if (!is_order(name) && std::find(backend_names().begin(), backend_names().end(), name) == backend_names().end())
      throw InvalidArgument("drift: unknown series '" + name + "' (" + known + backend_list() + ")");
}

std::vector<DriftPoint> measure_drift(const Model& m, std::span<const std::int32_t> tokens,
                                      const std::vector<std::string>& series, int threads) {
  check_drift_series(series);
  std::vector<std::vector<double>> exact;
  auto ref = reference_ops(m.config, threads);
  forward<double>(m, tokens, *ref, [&](int, std::span<const double> y) { exact.emplace_back(y.begin(), y.end()); });
  std::vector<DriftPoint> out;
  const auto add = [&](const std::string& name, int layer, std::span<const float> y) {
    const auto a = compare_logits(y, std::span<const double>(exact[static_cast<std::size_t>(layer)]));
    out.push_back({name, layer + 1, a.cosine, a.rel_l2});
  };
  const auto usable = [&](std::unique_ptr<Backend> b) {
    if (!b->available())
      throw InvalidArgument("drift: backend " + b->name() + " is unavailable: " + b->unavailable_reason());
    return b;
  };
  for (const auto& name : series) {
    if (is_order(name)) {
      auto ordered = ordered_ops(m.config, accum::parse_order(name), threads);
      forward<float>(m, tokens, *ordered, [&](int layer, std::span<const float> y) { add(name, layer, y); });
      continue;
    }
    auto b = usable(make_backend(name, m, threads));
    if (Ops<float>* ops = b->ops()) {
      forward<float>(m, tokens, *ops, [&](int layer, std::span<const float> y) { add(name, layer, y); });
      continue;
    }
    // A whole-model runtime: each truncated model is loaded and run whole (the full one is b).
    const int layers = static_cast<int>(m.layers.size());
    for (int d : drift_depths(layers)) {
      if (d == layers) {
        add(name, d - 1, b->logits(tokens));
        continue;
      }
      const Model cut = truncated(m, d);
      add(name, d - 1, usable(make_backend(name, cut, threads))->logits(tokens));
    }
  }
  return out;
}

DriftFit fit_drift(std::span<const DriftPoint> points, const std::string& series) {
  const auto pts = of_series(points, series);
  if (pts.size() < 2) throw InvalidArgument("fit_drift: fewer than 2 depths with a nonzero error");
  std::vector<double> logd, loge;
  for (const auto& p : pts) {
    logd.push_back(std::log(static_cast<double>(p.depth)));
    loge.push_back(std::log(p.rel_l2));
  }
  DriftFit f;
  f.power = slope(logd, loge);
  f.rel = pts.back().rel_l2;
  f.growth = f.rel / pts.front().rel_l2;
  f.hypothesis_rel = hypothesis_rel(pts.back().depth);
  f.hypothesis_growth = f.hypothesis_rel / hypothesis_rel(pts.front().depth);
  return f;
}

std::string drift_csv(std::span<const DriftPoint> points) {
  std::string out = "series,depth,cosine,rel_l2,hypothesis_rel\n";
  char line[160];
  for (const auto& p : points) {
    std::snprintf(line, sizeof line, "%s,%d,%.17g,%.6g,%.6g\n", p.series.c_str(), p.depth, p.cosine, p.rel_l2,
                  hypothesis_rel(p.depth));
    out += line;
  }
  return out;
}

std::string drift_svg(std::span<const DriftPoint> points, const std::string& title) {
  const double W = 720, H = 440, left = 70, right = 150, top = 40, bottom = 50;
  int max_depth = 1;
  double lo = 1e300;
  for (const auto& p : points)
    if (p.rel_l2 > 0) max_depth = std::max(max_depth, p.depth), lo = std::min(lo, p.rel_l2);
  const double hi_exp = std::ceil(std::log10(std::max(hypothesis_rel(max_depth), 1.0)));
  const double lo_exp = std::floor(std::log10(std::min(lo, 1e-1)));
  const auto X = [&](double d) { return left + (d - 1) / std::max(1, max_depth - 1) * (W - left - right); };
  const auto Y = [&](double v) { return top + (hi_exp - std::log10(v)) / (hi_exp - lo_exp) * (H - top - bottom); };
  std::string s;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
                "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                "<text x=\"%.0f\" y=\"22\" font-size=\"14\">%s</text>\n",
                W, H, left, title.c_str());
  s += buf;
  for (double e = lo_exp; e <= hi_exp; ++e) {
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%.1f\" "
                  "text-anchor=\"end\">1e%+.0f</text>\n",
                  left, W - right, Y(std::pow(10, e)), Y(std::pow(10, e)), left - 6, Y(std::pow(10, e)) + 4, e);
    s += buf;
  }
  for (int d = 1; d <= max_depth; d += std::max(1, max_depth / 7)) {
    std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n", X(d),
                  H - bottom + 18, d);
    s += buf;
  }
  std::snprintf(buf, sizeof buf,
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">depth (layers)</text>\n"
                "<text transform=\"translate(16 %.1f) rotate(-90)\" text-anchor=\"middle\">|logits32 - logits64| / "
                "|logits64|</text>\n",
                (left + W - right) / 2, H - 12, (top + H - bottom) / 2);
  s += buf;
  const auto polyline = [&](const std::vector<std::pair<double, double>>& xy, const char* colour, const char* dash,
                            const std::string& label, int row) {
    s += "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" + std::string(colour) + "\" stroke-dasharray=\"" +
         dash + "\" points=\"";
    for (const auto& [d, v] : xy) {
      std::snprintf(buf, sizeof buf, "%.1f,%.1f ", X(d), Y(v));
      s += buf;
    }
    s += "\"/>\n";
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\" "
                  "stroke-dasharray=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                  W - right + 10, W - right + 30, top + 16.0 * row, top + 16.0 * row, colour, dash, W - right + 34,
                  top + 16.0 * row + 4, label.c_str());
    s += buf;
  };
  const char* colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#d62728", "#8c564b", "#e377c2"};
  int row = 0;
  for (const auto& name : series_names(points)) {
    std::vector<std::pair<double, double>> xy;
    for (const auto& p : of_series(points, name)) xy.emplace_back(p.depth, p.rel_l2);
    if (!xy.empty()) polyline(xy, colours[row % 7], "none", name, row), ++row;
  }
  std::vector<std::pair<double, double>> hyp;
  for (int d = 1; d <= max_depth; ++d) hyp.emplace_back(d, hypothesis_rel(d));
  polyline(hyp, "black", "6 4", "1.001^(10L) - 1", row);
  return s + "</svg>\n";
}

}  // namespace popper::decode
