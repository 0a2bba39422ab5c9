// Hand Q4_K GEMV and dequantization: ISA-neutral driver and the scalar path
// (formulas in cpu_q4k.hpp).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "impl/common/cpu_features.hpp"
#include "impl/common/parallel.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"
#include "impl/q4k/cpu_q4k.hpp"
#include "impl/q4k/cpu_q4k_kernels.hpp"

namespace popper::q4k::cpu {
namespace {

using detail::GemvRows;
using detail::Mutation;

Mutation active_mutation() {
  if (POPPER_MUTANT("q4k-gemv-reverse-subblocks")) return Mutation::ReverseSubBlocks;
  if (POPPER_MUTANT("q4k-gemv-zero-scale")) return Mutation::ZeroScale0;
  if (POPPER_MUTANT("q4k-scale-hi-misdecode")) return Mutation::ScaleHiMisdecode;
  return Mutation::None;
}

void gemv_rows_scalar(const GemvRows& a, std::size_t r0, std::size_t r1) {
  for (std::size_t r = r0; r < r1; ++r) {
    const Block* row = a.w + r * static_cast<std::size_t>(a.nb);
    double acc = 0;
    for (std::int64_t b = 0; b < a.nb; ++b) {
      const Block& blk = row[b];
      std::uint8_t sc[kSubBlocks], m[kSubBlocks];
      detail::decode_scales_mins(blk.scales, sc, m, a.mut);
      const std::int16_t* xq = a.xq + b * kBlockWeights;
      std::int32_t s1 = 0;
      for (int c = 0; c < 4; ++c) {
        std::int32_t lo = 0, hi = 0;
        for (int l = 0; l < 32; ++l) {
          const std::uint8_t byte = blk.qs[32 * c + l];
          lo += (byte & 15) * xq[64 * c + l];
          hi += (byte >> 4) * xq[64 * c + 32 + l];
        }
        s1 += sc[2 * c] * lo + sc[2 * c + 1] * hi;
      }
      const std::int32_t s2 = detail::min_term(m, a.sub_sum + b * kSubBlocks);
      acc += detail::block_value(blk, a.scale[b], s1, s2);
    }
    a.y[r] = static_cast<float>(acc);
  }
}

// The mutant of FALSIFY-Q4K-005: the scalar path with an FP32 row accumulator.
void gemv_rows_fp32_accumulator(const GemvRows& a, std::size_t r0, std::size_t r1) {
  for (std::size_t r = r0; r < r1; ++r) {
    const Block* row = a.w + r * static_cast<std::size_t>(a.nb);
    float acc = 0;
    for (std::int64_t b = 0; b < a.nb; ++b) {
      std::uint8_t sc[kSubBlocks], m[kSubBlocks];
      detail::decode_scales_mins(row[b].scales, sc, m, a.mut);
      std::int32_t s1 = 0;
      for (int i = 0; i < kBlockWeights; ++i) s1 += sc[i / 32] * quant(row[b], i) * a.xq[b * kBlockWeights + i];
      acc += static_cast<float>(
          detail::block_value(row[b], a.scale[b], s1, detail::min_term(m, a.sub_sum + b * kSubBlocks)));
    }
    a.y[r] = acc;
  }
}

void dequantize_scalar(const Block* blocks, std::size_t count, float* out, Mutation mut) {
  for (std::size_t b = 0; b < count; ++b) {
    const Block& blk = blocks[b];
    std::uint8_t sc[kSubBlocks], m[kSubBlocks];
    detail::decode_scales_mins(blk.scales, sc, m, mut);
    const float d = fp16_to_float(blk.d), dmin = fp16_to_float(blk.dmin);
    for (int i = 0; i < kBlockWeights; ++i) {
      const int j = i / kSubBlockWeights;
      const float scale = d * static_cast<float>(sc[j]);
      const float offset = dmin * static_cast<float>(m[j]);
      const float p = scale * static_cast<float>(quant(blk, i));
      out[b * kBlockWeights + static_cast<std::size_t>(i)] = p - offset;
    }
  }
}

}  // namespace

std::string backend_tag(Isa isa) { return popper::cpu::backend_tag(popper::cpu::resolve(isa, "q4k::cpu")); }

void quantize_activations(std::span<const float> x, FixedPointActivations& out, Isa isa) {
  if (x.size() % kBlockWeights != 0)
    throw InvalidArgument("q4k::cpu::quantize_activations: length " + std::to_string(x.size()) +
                          " is not a multiple of 256");
  const Isa resolved = popper::cpu::resolve(isa, "q4k::cpu::quantize_activations");
  const std::size_t nb = x.size() / kBlockWeights;
  out.cols = static_cast<std::int64_t>(x.size());
  out.q.resize(x.size());
  out.scale.resize(nb);
  out.sub_sum.resize(nb * kSubBlocks);
  out.scaled_sub_sum.resize(nb * kSubBlocks);
  out.split.resize(2 * x.size());
  // Mutation point (q4k-gemv-coarse-activations): 6-bit instead of 14-bit fixed point.
  const double top = POPPER_MUTANT("q4k-gemv-coarse-activations") ? 31.0 : double(FixedPointActivations::kMax);
  const detail::ActivationsOut o{out.q.data(),       out.scale.data(),
                                 out.sub_sum.data(), out.scaled_sub_sum.data(),
                                 out.split.data(),   out.split.data() + x.size()};
  // The vector path stops at a non-finite value; the scalar loop below then names it.
  // Mutation point (q4k-activations-unchecked): the vector path quantizes non-finite values.
  if (resolved != Isa::Scalar &&
      detail::quantize_blocks_avx2(x.data(), nb, top, o, !POPPER_MUTANT("q4k-activations-unchecked")))
    return;
  for (std::size_t b = 0; b < nb; ++b) {
    double amax = 0;
    for (int i = 0; i < kBlockWeights; ++i) {
      const float v = x[b * kBlockWeights + static_cast<std::size_t>(i)];
      if (!std::isfinite(v))
        throw InvalidArgument("q4k::cpu::gemv: x[" + std::to_string(b * kBlockWeights + static_cast<std::size_t>(i)) +
                              "] is not finite");
      amax = std::max(amax, std::fabs(static_cast<double>(v)));
    }
    const double inv = amax > 0 ? top / amax : 0.0;
    out.scale[b] = amax / top;
    for (int j = 0; j < kSubBlocks; ++j) {
      std::int32_t sum = 0;
      for (int l = 0; l < kSubBlockWeights; ++l) {
        const std::size_t i = b * kBlockWeights + static_cast<std::size_t>(kSubBlockWeights * j + l);
        const double qv = std::clamp(std::nearbyint(static_cast<double>(x[i]) * inv),
                                     -double(FixedPointActivations::kMax), double(FixedPointActivations::kMax));
        out.q[i] = static_cast<std::int16_t>(qv);
        o.hi[i] = static_cast<std::int8_t>(out.q[i] >> 7);  // floor (C++20: arithmetic shift)
        o.lo[i] = static_cast<std::int8_t>(out.q[i] & 127);
        sum += out.q[i];
      }
      out.sub_sum[b * kSubBlocks + static_cast<std::size_t>(j)] = sum;
      out.scaled_sub_sum[b * kSubBlocks + static_cast<std::size_t>(j)] = out.scale[b] * sum;
    }
  }
}

void gemv(std::span<const Block> w, std::int64_t rows, std::int64_t cols, const FixedPointActivations& x,
          std::span<float> y, const CpuOptions& opts) {
  check_gemv_args(rows, cols, w.size(), static_cast<std::size_t>(x.cols), y.size());
  if (x.cols != cols || x.q.size() != static_cast<std::size_t>(cols))
    throw InvalidArgument("q4k::cpu::gemv: activations hold " + std::to_string(x.cols) + " columns, W has " +
                          std::to_string(cols));
  if (opts.threads < 1) throw InvalidArgument("q4k::cpu::gemv: threads must be >= 1");
  const Isa isa = popper::cpu::resolve(opts.isa, "q4k::cpu::gemv");
  detail::GemvRowsFn fn = &gemv_rows_scalar;
  if (isa == Isa::Avx512)
    fn = popper::cpu::has_avx512_vnni() ? &detail::gemv_rows_avx512_vnni : &detail::gemv_rows_avx512;
  else if (isa == Isa::Avx2) fn = &detail::gemv_rows_avx2;
  if (rows == 0) return;
  if (cols == 0) {
    std::fill(y.begin(), y.begin() + rows, 0.0f);
    return;
  }
  // The AVX-512 kernels read xq split into bytes: made here, once per call,
  // so the other paths (and the instruction-count gate) pay nothing.
  // Mutation point (q4k-gemv-split-order): activations left in sub-block order 0..7.
  thread_local std::vector<std::int8_t> split;
  if (isa == Isa::Avx512) {
    split.resize(2 * static_cast<std::size_t>(cols));
    const bool natural = POPPER_MUTANT("q4k-gemv-split-order");
    for (std::int64_t b = 0; b < cols / kBlockWeights; ++b)
      detail::split_block(x.q.data() + b * kBlockWeights, split.data() + 2 * b * kBlockWeights, natural);
  }
  const GemvRows args{w.data(),         cols / kBlockWeights,    x.q.data(), split.data(),     x.scale.data(),
                      x.sub_sum.data(), x.scaled_sub_sum.data(), y.data(),   active_mutation()};
  // Mutation point (q4k-gemv-worker-dependent): workers after the first use an FP32 accumulator.
  const bool worker_dependent = POPPER_MUTANT("q4k-gemv-worker-dependent");
  parallel::run(static_cast<std::size_t>(rows), opts.threads, [&](std::size_t r0, std::size_t r1, int worker) {
    if (worker_dependent && worker > 0) gemv_rows_fp32_accumulator(args, r0, r1);
    else fn(args, r0, r1);
  });
}

void gemv(std::span<const Block> w, std::int64_t rows, std::int64_t cols, std::span<const float> x, std::span<float> y,
          const CpuOptions& opts) {
  check_gemv_args(rows, cols, w.size(), x.size(), y.size());
  thread_local FixedPointActivations xq;
  quantize_activations(x.first(static_cast<std::size_t>(cols)), xq, opts.isa);
  gemv(w, rows, cols, xq, y, opts);
}

void dequantize_row(std::span<const Block> blocks, std::span<float> out, Isa isa) {
  check_row_args(out.size(), blocks.size(), "cpu::dequantize_row");
  const Isa resolved = popper::cpu::resolve(isa, "q4k::cpu::dequantize_row");
  detail::DequantFn fn = &dequantize_scalar;
  if (resolved == Isa::Avx512) fn = &detail::dequantize_avx512;
  else if (resolved == Isa::Avx2) fn = &detail::dequantize_avx2;
  fn(blocks.data(), out.size() / kBlockWeights, out.data(), active_mutation());
}

}  // namespace popper::q4k::cpu
