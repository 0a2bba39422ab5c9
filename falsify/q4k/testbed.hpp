// Q4_K testbed shared by the falsifiers (falsify/q4k) and the bench
// (bench/q4k): inputs, the FP64 reference, and the derived bounds of
// contracts/q4k/q4k-gemv-v1.yaml. No GoogleTest here.
//
//   hand:    |y - y_ref| <= sum_b s_b (1/2 + 2^-30)(1 + u) sum_{i in b} |w_i|
//                           + (2u + gamma64_{cols+32}) sum_i |w_i| (|x_i| + s_b(i))
//   device:  |y - y_ref| <= (gamma_{ceil(cols/32)+5} + gamma64_cols) sum_i |w_i x_i|
//   s_b = max_{i in b} |x_i| / 8191 (the contract's fixed point), u = 2^-24.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "impl/accum/accum.hpp"
#include "impl/q4k/q4k.hpp"
#include "impl/q4k/reference.hpp"

namespace popper::q4k::testbed {

inline constexpr double kU = 0x1p-24;
inline constexpr double kU64 = 0x1p-53;
inline constexpr double kFixedPointMax = 8191.0;

inline double gamma(double k, double u) { return accum::gamma(k, u); }

enum class XKind {
  Uniform,      // uniform(-1, 1)
  Positive,     // uniform(0, 1)
  Adversarial,  // per block: one value of magnitude ~100 among values of ~1e-3 (coarse fixed-point step)
};

struct Problem {
  Matrix w;
  std::vector<float> x;
  std::int64_t rows() const { return w.rows; }
  std::int64_t cols() const { return w.cols; }
};

// Deterministic fill in [-1, 1): the LCG of bench/common/fill.hpp and popper/ceiling_cli.h.
inline void fill_lcg(std::vector<float>& v, std::uint64_t seed) {
  std::uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (auto& e : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    e = static_cast<float>(static_cast<double>(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
}

inline std::vector<float> make_x(std::int64_t cols, std::uint64_t seed, XKind kind) {
  std::vector<float> x(static_cast<std::size_t>(cols));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (std::size_t i = 0; i < x.size(); ++i) {
    switch (kind) {
      case XKind::Uniform: x[i] = u(rng); break;
      case XKind::Positive: x[i] = 0.5f * (u(rng) + 1.0f); break;
      case XKind::Adversarial: x[i] = (i % kBlockWeights == 7) ? 100.0f * u(rng) : 1e-3f * u(rng); break;
    }
  }
  return x;
}

// W = quantize(uniform(-1, 1) values, or uniform(0, 1) with positive_weights) by popper's reference quantizer.
inline Problem make_problem(std::int64_t rows, std::int64_t cols, std::uint64_t seed, XKind kind = XKind::Uniform,
                            bool positive_weights = false) {
  std::vector<float> dense(static_cast<std::size_t>(rows * cols));
  fill_lcg(dense, seed);
  if (positive_weights)
    for (auto& v : dense) v = std::fabs(v);
  Problem p{reference::quantize_matrix(rows, cols, dense), make_x(cols, seed ^ 0x9E3779B97F4A7C15ULL, kind)};
  return p;
}

// W of random blocks (random codes and 6-bit scales; d, dmin in [0, 0.01)): weights of magnitude ~1 without
// the cost of quantizing, for tests where W's values only need to be valid Q4_K.
inline Problem make_random_problem(std::int64_t rows, std::int64_t cols, std::uint64_t seed,
                                   XKind kind = XKind::Uniform) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> scale(0.0f, 0.01f);
  Problem p{Matrix{rows, cols, std::vector<Block>(static_cast<std::size_t>(rows * (cols / kBlockWeights)))},
            make_x(cols, seed ^ 0x9E3779B97F4A7C15ULL, kind)};
  for (auto& b : p.w.blocks) {
    auto* bytes = reinterpret_cast<std::uint8_t*>(&b);
    for (int i = 0; i < kBlockBytes; ++i) bytes[i] = static_cast<std::uint8_t>(rng());
    b.d = float_to_fp16(scale(rng));
    b.dmin = float_to_fp16(scale(rng));
  }
  return p;
}

// Per row: the FP64 reference and the magnitudes the bounds scale with.
struct RowStats {
  std::vector<double> y_ref;   // sum w x (FP64)
  std::vector<double> abs_wx;  // sum |w x|
  std::vector<double> fixed;   // sum_b s_b sum_{i in b} |w_i|
  std::vector<double> wide;    // sum_i |w_i| (|x_i| + s_b(i))
};

inline std::vector<double> block_steps(const std::vector<float>& x) {
  std::vector<double> s(x.size() / kBlockWeights);
  for (std::size_t b = 0; b < s.size(); ++b) {
    double amax = 0;
    for (int i = 0; i < kBlockWeights; ++i)
      amax = std::max(amax, std::fabs(double(x[b * kBlockWeights + std::size_t(i)])));
    s[b] = amax / kFixedPointMax;
  }
  return s;
}

// Stats of the selected rows (all rows when `rows_to_check` is empty).
inline RowStats row_stats(const Problem& p, const std::vector<std::int64_t>& rows_to_check = {}) {
  std::vector<std::int64_t> rows = rows_to_check;
  if (rows.empty())
    for (std::int64_t r = 0; r < p.rows(); ++r) rows.push_back(r);
  const auto steps = block_steps(p.x);
  const std::size_t nb = static_cast<std::size_t>(p.cols() / kBlockWeights);
  RowStats s;
  std::vector<float> w(static_cast<std::size_t>(p.cols()));
  for (std::int64_t r : rows) {
    reference::dequantize_row(std::span<const Block>(p.w.blocks).subspan(static_cast<std::size_t>(r) * nb, nb), w);
    double y = 0, awx = 0, fixed = 0, wide = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      const double wi = w[i], xi = p.x[i], sb = steps[i / kBlockWeights];
      y += wi * xi;
      awx += std::fabs(wi * xi);
      fixed += sb * std::fabs(wi);
      wide += std::fabs(wi) * (std::fabs(xi) + sb);
    }
    s.y_ref.push_back(y);
    s.abs_wx.push_back(awx);
    s.fixed.push_back(fixed);
    s.wide.push_back(wide);
  }
  return s;
}

inline double hand_bound(const RowStats& s, std::size_t k, std::int64_t cols) {
  return s.fixed[k] * (0.5 + 0x1p-30) * (1 + kU) + (2 * kU + gamma(double(cols + 32), kU64)) * s.wide[k];
}

inline double device_bound(const RowStats& s, std::size_t k, std::int64_t cols) {
  return (gamma(std::ceil(double(cols) / 32) + 5, kU) + gamma(double(cols), kU64)) * s.abs_wx[k];
}

struct Comparison {
  bool ok = true;
  double worst_ratio = 0;  // max error / bound
  std::string message;     // the first violation
};

// y holds the selected rows in order (y[k] for stats row k).
template <class BoundFn>
Comparison compare(const std::vector<float>& y, const RowStats& s, BoundFn bound) {
  Comparison c;
  for (std::size_t k = 0; k < s.y_ref.size(); ++k) {
    const double err = std::fabs(double(y[k]) - s.y_ref[k]);
    const double b = bound(k);
    const double ratio = b > 0 ? err / b : (err > 0 ? INFINITY : 0.0);
    c.worst_ratio = std::max(c.worst_ratio, ratio);
    if (!(err <= b) && c.ok) {
      c.ok = false;
      char buf[256];
      std::snprintf(buf, sizeof buf, "row %zu: |y - y_ref| = %.6g > bound %.6g (y = %.9g, y_ref = %.9g)", k, err, b,
                    double(y[k]), s.y_ref[k]);
      c.message = buf;
    }
  }
  return c;
}

// max_r |y_r - y_ref,r| / sum_i |w_ri x_i|: the error measure of FALSIFY-Q4K-014 and of the bench rows.
inline double scaled_error(const std::vector<float>& y, const RowStats& s) {
  double worst = 0;
  for (std::size_t k = 0; k < s.y_ref.size(); ++k)
    if (s.abs_wx[k] > 0) worst = std::max(worst, std::fabs(double(y[k]) - s.y_ref[k]) / s.abs_wx[k]);
  return worst;
}

}  // namespace popper::q4k::testbed
