// Hand Q4_K GEMV over packed weights (PackedWeights, cpu_q4k.hpp): the
// repack and its inverse, the ISA-neutral driver and the scalar path.
//
// Every path computes, per row, the exact integers S1, S2 of each block and
//   y_r = fl32( sum_b s_b (d_b S1_b - dmin_b S2_b) )   (FP64, blocks in order)
// with the roundings of the scalar plain kernel (cpu_gemv.cpp), so its bits.
#include <algorithm>
#include <cstring>
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

using detail::kPackRows;
using detail::PackedBlock;
using detail::PackedMutation;
using detail::PackedRows;
static_assert(PackedWeights::kGroupRows == kPackRows);

// Row blocks below which a second thread costs more than it saves: about 4 us
// of kernel time per thread against ~1 us to hand a range to a spinning
// worker (parallel.hpp). The decode canary's 128 x 1024 K and V projections
// (512 row blocks) run on one thread, its 1024 x 1024 ones on two.
constexpr std::int64_t kMinRowBlocksPerThread = 1024;

// A mutant of one ISA's kernel is asked only when that kernel runs: a hit
// on another path would make the audit count it survived where its path
// never ran (an AVX2-only CPU).
PackedMutation active_packed_mutation(Isa isa) {
  if (POPPER_MUTANT("q4k-packed-fp32-sum")) return PackedMutation::Fp32Sum;
  if (isa == Isa::Avx512 && POPPER_MUTANT("q4k-packed-high-nibble-scale")) return PackedMutation::HighNibbleScale;
  if (isa == Isa::Avx2 && POPPER_MUTANT("q4k-packed-avx2-half-scales")) return PackedMutation::Avx2HalfScales;
  if (isa == Isa::Avx2 && POPPER_MUTANT("q4k-packed-avx2-mins-high-only")) return PackedMutation::Avx2MinsHighOnly;
  if (isa == Isa::Avx512 && POPPER_MUTANT("q4k-packed-avx512-mins-low-piece"))
    return PackedMutation::Avx512MinsNoLowPiece;
  if (POPPER_MUTANT("q4k-packed-ragged-store")) return PackedMutation::RaggedStore;
  if (isa == Isa::Avx512 && POPPER_MUTANT("q4k-packed-avx512-odd-group")) return PackedMutation::Avx512OddGroup;
  return PackedMutation::None;
}

void gemv_packed_scalar(const PackedRows& a, std::size_t g0, std::size_t g1) {
  for (std::size_t g = g0; g < g1; ++g) {
    const PackedBlock* group = a.w + g * static_cast<std::size_t>(a.nb);
    double acc[kPackRows] = {};
    for (std::int64_t b = 0; b < a.nb; ++b) {
      const PackedBlock& pb = group[b];
      const std::int16_t* xq = a.xq + b * kBlockWeights;
      for (int r = 0; r < kPackRows; ++r) {
        std::uint8_t s[kScaleBytes], sc[kSubBlocks], m[kSubBlocks];
        for (int w = 0; w < 3; ++w) std::memcpy(s + 4 * w, &pb.scales[w][r], 4);
        detail::decode_scales_mins(s, sc, m, detail::Mutation::None);
        std::int32_t s1 = 0;
        for (int k = 0; k < 32; ++k) {
          const int c = k / 8, l = 4 * (k % 8);
          for (int t = 0; t < 4; ++t) {
            const std::uint8_t byte = pb.qs[k][r][t];
            s1 += sc[2 * c] * (byte & 15) * xq[64 * c + l + t] + sc[2 * c + 1] * (byte >> 4) * xq[64 * c + 32 + l + t];
          }
        }
        const std::int32_t s2 = detail::min_term(m, a.sub_sum + b * kSubBlocks);
        acc[r] += detail::block_value(pb.d[r], pb.dmin[r], a.scale[b], s1, s2);
        if (a.mut == PackedMutation::Fp32Sum) acc[r] = static_cast<float>(acc[r]);
      }
    }
    float out[kPackRows];
    for (int r = 0; r < kPackRows; ++r) out[r] = static_cast<float>(acc[r]);
    detail::store_group(a, g, out);
  }
}

}  // namespace

PackedWeights::PackedWeights(std::span<const Block> w, std::int64_t rows, std::int64_t cols) {
  check_matrix(rows, cols, w.size());
  rows_ = rows, cols_ = cols;
  const std::int64_t nb = cols / kBlockWeights;
  data_.resize(static_cast<std::size_t>(groups() * nb) * sizeof(PackedBlock) / sizeof(Chunk));  // zero: padding rows
  auto* out = reinterpret_cast<PackedBlock*>(data_.data());
  // Mutation point (q4k-pack-ragged-row): the last row of a ragged last group is not copied.
  const std::int64_t copied = POPPER_MUTANT("q4k-pack-ragged-row") && rows % kPackRows > 1 ? rows - 1 : rows;
  // Mutation point (q4k-gemv-zero-scale): the packed GEMV reads the scale of
  // sub-block 0 as 0 on every path, since the repack writes it so.
  const bool zero_scale = POPPER_MUTANT("q4k-gemv-zero-scale");
  for (std::int64_t r = 0; r < copied; ++r)
    for (std::int64_t b = 0; b < nb; ++b) {
      const Block& blk = w[static_cast<std::size_t>(r * nb + b)];
      PackedBlock& pb = out[(r / kPackRows) * nb + b];
      const auto i = static_cast<std::size_t>(r % kPackRows);
      pb.d[i] = blk.d, pb.dmin[i] = blk.dmin;
      std::uint8_t scales[kScaleBytes];
      std::memcpy(scales, blk.scales, kScaleBytes);
      if (zero_scale) scales[0] &= 0xC0;  // its 6 low bits; the 2 high ones belong to sub-block 4
      for (int k = 0; k < 3; ++k) std::memcpy(&pb.scales[k][i], scales + 4 * k, 4);
      for (int k = 0; k < 32; ++k) std::memcpy(pb.qs[k][i], blk.qs + 4 * k, 4);
    }
}

std::vector<Block> PackedWeights::unpack() const {
  const std::int64_t nb = cols_ / kBlockWeights;
  std::vector<Block> w(static_cast<std::size_t>(rows_ * nb));
  const auto* in = reinterpret_cast<const PackedBlock*>(data_.data());
  for (std::int64_t r = 0; r < rows_; ++r)
    for (std::int64_t b = 0; b < nb; ++b) {
      Block& blk = w[static_cast<std::size_t>(r * nb + b)];
      const PackedBlock& pb = in[(r / kPackRows) * nb + b];
      const auto i = static_cast<std::size_t>(r % kPackRows);
      blk.d = pb.d[i], blk.dmin = pb.dmin[i];
      for (int k = 0; k < 3; ++k) std::memcpy(blk.scales + 4 * k, &pb.scales[k][i], 4);
      for (int k = 0; k < 32; ++k) std::memcpy(blk.qs + 4 * k, pb.qs[k][i], 4);
    }
  return w;
}

void gemv(const PackedWeights& w, const FixedPointActivations& x, std::span<float> y, const CpuOptions& opts) {
  const std::int64_t rows = w.rows(), cols = w.cols();
  if (x.cols != cols || x.q.size() != static_cast<std::size_t>(cols) || x.split.size() != 2 * x.q.size())
    throw InvalidArgument("q4k::cpu::gemv: activations hold " + std::to_string(x.cols) + " columns, W has " +
                          std::to_string(cols));
  if (y.size() < static_cast<std::size_t>(rows)) throw BufferTooSmall("y", static_cast<std::size_t>(rows), y.size());
  if (opts.threads < 1) throw InvalidArgument("q4k::cpu::gemv: threads must be >= 1");
  const Isa isa = popper::cpu::resolve(opts.isa, "q4k::cpu::gemv");
  detail::PackedGroupsFn fn = &gemv_packed_scalar;
  if (isa == Isa::Avx512)
    fn = popper::cpu::has_avx512_vnni() ? &detail::gemv_packed_avx512_vnni : &detail::gemv_packed_avx512;
  else if (isa == Isa::Avx2) fn = &detail::gemv_packed_avx2;
  if (rows == 0) return;
  if (cols == 0) {
    std::fill(y.begin(), y.begin() + rows, 0.0f);
    return;
  }
  const PackedRows args{static_cast<const PackedBlock*>(w.data()),
                        cols / kBlockWeights,
                        rows,
                        x.q.data(),
                        x.split.data(),
                        x.split.data() + cols,
                        x.scale.data(),
                        x.sub_sum.data(),
                        y.data(),
                        active_packed_mutation(isa)};
  const std::int64_t by_size = std::max<std::int64_t>(1, rows * args.nb / kMinRowBlocksPerThread);
  const int threads =
      parallel::exact_threads() ? opts.threads : static_cast<int>(std::min<std::int64_t>(opts.threads, by_size));
  // Mutation point (q4k-gemv-worker-dependent): workers other than the first sum their rows in FP32.
  const bool worker_dependent = POPPER_MUTANT("q4k-gemv-worker-dependent");
  parallel::run(static_cast<std::size_t>(w.groups()), threads, [&](std::size_t g0, std::size_t g1, int worker) {
    if (worker_dependent && worker > 0) {
      PackedRows mutated = args;
      mutated.mut = PackedMutation::Fp32Sum;
      fn(mutated, g0, g1);
      return;
    }
    fn(args, g0, g1);
  });
}

void gemv(const PackedWeights& w, std::span<const float> x, std::span<float> y, const CpuOptions& opts) {
  check_gemv_args(w.rows(), w.cols(), static_cast<std::size_t>(w.rows() * (w.cols() / kBlockWeights)), x.size(),
                  y.size());
  thread_local FixedPointActivations xq;
  quantize_activations(x.first(static_cast<std::size_t>(w.cols())), xq, opts.isa);
  gemv(w, xq, y, opts);
}

}  // namespace popper::q4k::cpu
