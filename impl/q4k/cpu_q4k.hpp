// Hand tier on the CPU (contracts/q4k/q4k-gemv-v1.yaml): Q4_K GEMV with
// on-the-fly dequantization in the integer domain, and a vectorized
// dequantization.
//
// GEMV y = W x. The activation x is put in 14-bit fixed point once per call,
// per super-block b (the 256 columns one weight block covers):
//   s_b = max_{i in b} |x_i| / 8191,   xq_i = round(x_i / s_b) in [-8191, 8191]
// Then for row r and block b, with the block's d, dmin, sc_j, m_j, q_i:
//   S1 = sum_j sc_j sum_{i in j} q_i xq_i      exact in int32 (|S1| <= 256*15*63*8191 < 2^31)
//   S2 = sum_j m_j  sum_{i in j} xq_i          exact in int32
//   y_r = sum_b s_b (d S1 - dmin S2)           in FP64, blocks in order; rounded to FP32 once
// so the only approximation is the fixed-point activation (|x_i - s_b xq_i| <= s_b/2)
// plus a few FP64 roundings: the bound in the contract. S1 and S2 are exact
// integers whatever the lane order, so scalar, AVX2 and AVX-512 give the same
// bits, and rows are split over threads whole, so any thread count does too.
//
// ISA: Auto picks the widest the CPU runs (AVX-512 [+VNNI] > AVX2 > scalar),
// capped by POPPER_ISA_MAX; an ISA the CPU lacks throws popper::Unsupported.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "impl/common/cpu_features.hpp"
#include "impl/common/huge_pages.hpp"
#include "impl/q4k/q4k.hpp"

namespace popper::q4k::cpu {

using popper::cpu::Isa;

struct CpuOptions {
  int threads = 1;  // >= 1
  Isa isa = Isa::Auto;
};

// x in 14-bit fixed point per 256-column block (see above).
struct FixedPointActivations {
  static constexpr int kMax = 8191;
  std::int64_t cols = 0;
  std::vector<std::int16_t> q;         // cols values
  std::vector<double> scale;           // s_b, cols / 256 values
  std::vector<std::int32_t> sub_sum;   // sum of q over each 32-value sub-block, cols / 32 values
  std::vector<double> scaled_sub_sum;  // s_b * sub_sum (for the vector kernels)
  std::vector<std::int8_t> split;  // q_i = 128 split[i] + split[cols + i] (in [-64, 63] and [0, 127]; packed kernels)
};
// cols = x.size() (a multiple of 256); throws InvalidArgument for non-finite x.
// Every ISA gives the same values (AVX2 and AVX-512 take the vector path).
void quantize_activations(std::span<const float> x, FixedPointActivations& out, Isa isa = Isa::Auto);

// y = W x. Checks sizes (check_gemv_args) and the ISA before any work.
void gemv(std::span<const Block> w, std::int64_t rows, std::int64_t cols, std::span<const float> x, std::span<float> y,
          const CpuOptions& opts = {});
// Same with x already in fixed point (reused across GEMVs that share x).
void gemv(std::span<const Block> w, std::int64_t rows, std::int64_t cols, const FixedPointActivations& x,
          std::span<float> y, const CpuOptions& opts = {});

// W repacked once for the GEMV (the GGUF stays standard; this is the layout
// weights are kept in while they are served). Rows in groups of kGroupRows,
// per group and block b one PackedBlock (cpu_q4k_kernels.hpp): the 16 rows'
// d, dmin, scale words and codes interleaved in 4-byte chunks, so one 64-byte
// load holds the same 8 columns of 16 rows and the kernels multiply them by
// one broadcast of the activations; a ragged last group is padded with zero
// blocks (never stored to y). Bytes per row and block: 144, as the plain layout.
//
// GEMV over it: per row the same exact S1, S2 and the FP64 sum in block order
// as the scalar plain kernel,
//   y_r = fl32( sum_b s_b (d S1 - dmin S2) ),  each product and sum rounded in that order,
// so every ISA path and thread count gives the bits of
// gemv(w, rows, cols, x, y, {1, Isa::Scalar}).
class PackedWeights {
 public:
  static constexpr std::int64_t kGroupRows = 16;
  PackedWeights() = default;
  // Checks the shape (check_matrix) before reading W.
  PackedWeights(std::span<const Block> w, std::int64_t rows, std::int64_t cols);
  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  std::int64_t groups() const { return (rows_ + kGroupRows - 1) / kGroupRows; }
  std::size_t bytes() const { return data_.size() * sizeof(Chunk); }
  // W in the standard layout again, block for block (the repack's round trip).
  std::vector<Block> unpack() const;
  const void* data() const { return data_.data(); }

 private:
  struct alignas(64) Chunk {
    unsigned char b[64];
  };
  std::int64_t rows_ = 0, cols_ = 0;
  // 64-byte aligned PackedBlocks, group-major; streamed whole by every GEMV, so on huge pages.
  std::vector<Chunk, memory::HugePageAllocator<Chunk>> data_;
};

// y = W x over packed weights. Checks x, y and the ISA before any work.
void gemv(const PackedWeights& w, std::span<const float> x, std::span<float> y, const CpuOptions& opts = {});
void gemv(const PackedWeights& w, const FixedPointActivations& x, std::span<float> y, const CpuOptions& opts = {});

// Vectorized dequantization, bit-identical to reference::dequantize_row.
void dequantize_row(std::span<const Block> blocks, std::span<float> out, Isa isa = Isa::Auto);

// The evidence tag of the path an ISA request runs ("cpu:avx512", "cpu:avx512+vnni", "cpu:avx2", "cpu:scalar").
std::string backend_tag(Isa isa);

}  // namespace popper::q4k::cpu
