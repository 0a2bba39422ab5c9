// Q4_K oracle: dequantization straight from the format, FP64 GEMV, and
// popper's reference quantizer.
//
// Quantizer, per super-block of 256 values x_i (sub-block j = x_{32j..32j+31}):
//  1. For each sub-block, fit w = s*q - mn (s > 0, mn >= 0: the range's lower
//     end is <= 0, as in ggml) over candidate code assignments
//       q_i = clamp(round((x_i - lo) * (15 + 0.1 t) / (hi - lo)), 0, 15),  t = -kSteps..kSteps,
//     lo = min(0, min x), hi = max x; for each, the least-squares (s, mn)
//     given q (mn clamped to >= 0); keep the smallest sum of squared errors.
//  2. d = fp16(max_j s_j / 63), dmin = fp16(max_j mn_j / 63);
//     sc_j = round(s_j / d), m_j = round(mn_j / dmin) in 0..63.
//  3. Refine: for each j try sc_j +- 1 and m_j +- 1 (nine pairs) with the final
//     codes of step 4 and keep the pair with the smallest squared error.
//  4. q_i = the code whose dequantized value (d*sc_j)*q - dmin*m_j is nearest
//     to x_i (ties to the smaller code): optimal for the stored scales.
// Unweighted least squares throughout (ggml's reference quantizer weights the
// error by |x_i| + rms(x)); both are compared in FALSIFY-Q4K-008.
#include "impl/q4k/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "impl/common/parallel.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::q4k::reference {
namespace {

constexpr int kSteps = 10;

struct Fit {
  double s = 0, mn = 0;
};

Fit fit_sub_block(const float* x, bool no_search) {
  float lo = 0, hi = x[0];
  for (int i = 0; i < kSubBlockWeights; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  if (hi <= lo) return {0, -static_cast<double>(lo)};  // constant, non-positive block: w = -mn exactly
  Fit best{(static_cast<double>(hi) - lo) / 15, -static_cast<double>(lo)};
  double best_sse = std::numeric_limits<double>::infinity();
  constexpr double n = kSubBlockWeights;
  double sx = 0;
  for (int i = 0; i < kSubBlockWeights; ++i) sx += x[i];
  for (int t = no_search ? 0 : -kSteps; t <= (no_search ? 0 : kSteps); ++t) {
    const float iscale = static_cast<float>((15.0 + 0.1 * t) / (static_cast<double>(hi) - lo));
    int q[kSubBlockWeights];
    double sq = 0, sqq = 0, sqx = 0;
    for (int i = 0; i < kSubBlockWeights; ++i) {
      const int v = static_cast<int>((x[i] - lo) * iscale + 0.5f);  // argument >= 0: round half up
      q[i] = v > 15 ? 15 : v;
      sq += q[i], sqq += q[i] * q[i], sqx += q[i] * static_cast<double>(x[i]);
    }
    const double den = n * sqq - sq * sq;
    if (den <= 0) continue;  // all codes equal: no slope to fit
    double s = (n * sqx - sq * sx) / den;
    double mn = (s * sq - sx) / n;
    if (mn < 0) mn = 0, s = sqx / sqq;
    if (!(s > 0)) continue;
    double sse = 0;
    for (int i = 0; i < kSubBlockWeights; ++i) {
      const double e = x[i] - (s * q[i] - mn);
      sse += e * e;
    }
    if (sse < best_sse) best_sse = sse, best = {s, mn};
  }
  return best;
}

// Nearest code for x under the stored scale D = d*sc and offset M = dmin*m.
inline int nearest_code(float x, float D, float M) {
  if (!(D > 0)) return 0;
  const int q0 = static_cast<int>(std::clamp(std::nearbyint((static_cast<double>(x) + M) / D), 0.0, 15.0));
  int best = q0;
  float best_err = std::numeric_limits<float>::infinity();
  for (int q = std::max(0, q0 - 1); q <= std::min(15, q0 + 1); ++q) {
    const float p = D * static_cast<float>(q);
    const float v = p - M;
    const float err = std::fabs(x - v);
    if (err < best_err) best_err = err, best = q;
  }
  return best;
}

// Squared error of sub-block x under (D, M), codes by rounding (the final
// codes of quantize_block also check the neighbours; this is the search cost).
double sub_block_sse(const float* x, float D, float M) {
  double sse = 0;
  const float inv = D > 0 ? 1.0f / D : 0.0f;
  for (int i = 0; i < kSubBlockWeights; ++i) {
    const float v = (x[i] + M) * inv + 0.5f;
    const int q = v <= 0 ? 0 : (v >= 15 ? 15 : static_cast<int>(v));
    const float p = D * static_cast<float>(q);
    const double e = static_cast<double>(x[i]) - static_cast<double>(p - M);
    sse += e * e;
  }
  return sse;
}

void quantize_block(const float* x, Block& out, bool no_search) {
  Fit fit[kSubBlocks];
  double smax = 0, mmax = 0;
  for (int j = 0; j < kSubBlocks; ++j) {
    fit[j] = fit_sub_block(x + kSubBlockWeights * j, no_search);
    smax = std::max(smax, fit[j].s);
    mmax = std::max(mmax, fit[j].mn);
  }
  out.d = float_to_fp16(static_cast<float>(smax / 63));
  out.dmin = float_to_fp16(static_cast<float>(mmax / 63));
  const float d = fp16_to_float(out.d), dmin = fp16_to_float(out.dmin);
  if (!std::isfinite(d) || !std::isfinite(dmin))
    throw InvalidArgument(
        "q4k::reference::quantize_row: a super-block's range exceeds what FP16 scales hold "
        "(max sub-block scale " +
        std::to_string(smax) + ")");
  std::uint8_t sc[kSubBlocks], m[kSubBlocks];
  for (int j = 0; j < kSubBlocks; ++j) {
    const float* xj = x + kSubBlockWeights * j;
    const int sc0 = d > 0 ? static_cast<int>(std::clamp(std::nearbyint(fit[j].s / d), 0.0, 63.0)) : 0;
    const int m0 = dmin > 0 ? static_cast<int>(std::clamp(std::nearbyint(fit[j].mn / dmin), 0.0, 63.0)) : 0;
    int best_sc = sc0, best_m = m0;
    double best = std::numeric_limits<double>::infinity();
    const int reach = no_search ? 0 : 1;
    for (int a = std::max(0, sc0 - reach); a <= std::min(63, sc0 + reach); ++a)
      for (int b = std::max(0, m0 - reach); b <= std::min(63, m0 + reach); ++b) {
        const double e = sub_block_sse(xj, d * static_cast<float>(a), dmin * static_cast<float>(b));
        if (e < best) best = e, best_sc = a, best_m = b;
      }
    sc[j] = static_cast<std::uint8_t>(best_sc);
    m[j] = static_cast<std::uint8_t>(best_m);
  }
  pack_scales_mins(sc, m, out.scales);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      const int lo = 64 * c + l, hi = lo + 32;
      const float Dl = d * static_cast<float>(sc[lo / 32]), Ml = dmin * static_cast<float>(m[lo / 32]);
      const float Dh = d * static_cast<float>(sc[hi / 32]), Mh = dmin * static_cast<float>(m[hi / 32]);
      out.qs[32 * c + l] = static_cast<std::uint8_t>(nearest_code(x[lo], Dl, Ml) | (nearest_code(x[hi], Dh, Mh) << 4));
    }
}

}  // namespace

void quantize_row(std::span<const float> x, std::span<Block> out) {
  check_row_args(x.size(), out.size(), "reference::quantize_row");
  // Mutation points: q4k-quant-accepts-nan (no finiteness check), q4k-quant-no-search (first candidate only).
  if (!POPPER_MUTANT("q4k-quant-accepts-nan"))
    for (std::size_t i = 0; i < x.size(); ++i)
      if (!std::isfinite(x[i]))
        throw InvalidArgument("q4k::reference::quantize_row: input " + std::to_string(i) + " is not finite");
  const bool no_search = POPPER_MUTANT("q4k-quant-no-search");
  for (std::size_t b = 0; b < x.size() / kBlockWeights; ++b)
    quantize_block(x.data() + b * kBlockWeights, out[b], no_search);
}

void dequantize_row(std::span<const Block> blocks, std::span<float> out) {
  check_row_args(out.size(), blocks.size(), "reference::dequantize_row");
  for (std::size_t b = 0; b < out.size() / kBlockWeights; ++b) {
    const Block& blk = blocks[b];
    const float d = fp16_to_float(blk.d), dmin = fp16_to_float(blk.dmin);
    for (int i = 0; i < kBlockWeights; ++i) {
      const ScaleMin sm = unpack_scale_min(blk.scales, i / kSubBlockWeights);
      const float scale = d * static_cast<float>(sm.scale);
      const float offset = dmin * static_cast<float>(sm.min);
      const float p = scale * static_cast<float>(quant(blk, i));
      out[b * kBlockWeights + static_cast<std::size_t>(i)] = p - offset;
    }
  }
}

Matrix quantize_matrix(std::int64_t rows, std::int64_t cols, std::span<const float> x) {
  check_matrix(rows, cols, static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols / kBlockWeights));
  const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  if (x.size() < n) throw BufferTooSmall("x", n, x.size());
  Matrix m{rows, cols, std::vector<Block>(n / kBlockWeights)};
  const std::size_t per_row = static_cast<std::size_t>(cols / kBlockWeights);
  // Rows are independent: the result does not depend on the thread count.
  parallel::run(static_cast<std::size_t>(rows), parallel::hardware_threads(), [&](std::size_t r0, std::size_t r1, int) {
    for (std::size_t r = r0; r < r1; ++r)
      quantize_row(x.subspan(r * static_cast<std::size_t>(cols), static_cast<std::size_t>(cols)),
                   std::span<Block>(m.blocks).subspan(r * per_row, per_row));
  });
  return m;
}

void gemv(std::span<const Block> w, std::int64_t rows, std::int64_t cols, std::span<const float> x,
          std::span<double> y) {
  check_gemv_args(rows, cols, w.size(), x.size(), y.size());
  const std::size_t nb = static_cast<std::size_t>(cols / kBlockWeights);
  std::vector<float> row(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    dequantize_row(w.subspan(static_cast<std::size_t>(r) * nb, nb), row);
    double acc = 0;
    for (std::int64_t i = 0; i < cols; ++i)
      acc += static_cast<double>(row[static_cast<std::size_t>(i)]) * x[static_cast<std::size_t>(i)];
    y[static_cast<std::size_t>(r)] = acc;
  }
}

void gemv_abs(std::span<const Block> w, std::int64_t rows, std::int64_t cols, std::span<const float> x,
              std::span<double> y) {
  check_gemv_args(rows, cols, w.size(), x.size(), y.size());
  const std::size_t nb = static_cast<std::size_t>(cols / kBlockWeights);
  std::vector<float> row(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    dequantize_row(w.subspan(static_cast<std::size_t>(r) * nb, nb), row);
    double acc = 0;
    for (std::int64_t i = 0; i < cols; ++i)
      acc += std::fabs(static_cast<double>(row[static_cast<std::size_t>(i)])) *
             std::fabs(static_cast<double>(x[static_cast<std::size_t>(i)]));
    y[static_cast<std::size_t>(r)] = acc;
  }
}

}  // namespace popper::q4k::reference
