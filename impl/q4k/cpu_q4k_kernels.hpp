// Internal interface between the ISA-neutral driver (cpu_gemv.cpp) and the
// ISA translation units (cpu_gemv_avx2.cpp, cpu_gemv_avx512.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "impl/q4k/q4k.hpp"

namespace popper::q4k::cpu::detail {

// Deliberate kernel faults for the mutation tests (contracts/q4k/q4k-gemv-v1.yaml
// `mutants:`). The driver decides once per call (POPPER_MUTANT is live only in
// popper_impl_mutants) and passes the value down, so no kernel loop compares strings.
enum class Mutation : std::uint8_t {
  None,
  ReverseSubBlocks,  // q4k-gemv-reverse-subblocks: sub-block j paired with the scale of 7 - j
  ZeroScale0,        // q4k-gemv-zero-scale: scale of sub-block 0 read as 0
  ScaleHiMisdecode,  // q4k-scale-hi-misdecode: high bits of sc_4..7 taken from the min's byte
};

// The 6-bit scales and mins of one block (format in q4k.hpp), with the mutation applied.
inline void decode_scales_mins(const std::uint8_t* s, std::uint8_t* sc, std::uint8_t* m, Mutation mut) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = static_cast<std::uint8_t>(s[j] & 63);
    m[j] = static_cast<std::uint8_t>(s[j + 4] & 63);
    const int hi_src = mut == Mutation::ScaleHiMisdecode ? j + 4 : j;
    sc[j + 4] = static_cast<std::uint8_t>((s[j + 8] & 15) | ((s[hi_src] >> 6) << 4));
    m[j + 4] = static_cast<std::uint8_t>((s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4));
  }
  if (mut == Mutation::ReverseSubBlocks)
    for (int j = 0; j < 4; ++j) {
      const std::uint8_t t = sc[j];
      sc[j] = sc[7 - j], sc[7 - j] = t;
      const std::uint8_t u = m[j];
      m[j] = m[7 - j], m[7 - j] = u;
    }
  if (mut == Mutation::ZeroScale0) sc[0] = 0;
}

// The same decode on 32-bit words: 16 bytes [sc_0..sc_7, m_0..m_7] (the hot path;
// the mutation tests take the byte decoder above).
inline void decode_scales_mins_words(const Block& blk, std::uint8_t* sm, Mutation mut) {
  if (mut != Mutation::None) {
    decode_scales_mins(blk.scales, sm, sm + 8, mut);
    return;
  }
  std::uint32_t u[3];
  std::memcpy(u, blk.scales, sizeof u);
  const std::uint32_t w[4] = {u[0] & 0x3F3F3F3Fu, (u[2] & 0x0F0F0F0Fu) | (((u[0] >> 6) & 0x03030303u) << 4),
                              u[1] & 0x3F3F3F3Fu, ((u[2] >> 4) & 0x0F0F0F0Fu) | (((u[1] >> 6) & 0x03030303u) << 4)};
  std::memcpy(sm, w, sizeof w);
}

// xq split for byte dot products (vpmaddubsw takes unsigned x signed bytes):
//   xq_i = 128 * hi_i + lo_i,  hi_i = floor(xq_i / 128) in [-64, 63],  lo_i in [0, 127].
// Per block, 256 hi bytes then 256 lo bytes, each in sub-block order
// 0, 2, 1, 3, 4, 6, 5, 7: a 64-byte load of the weights holds sub-blocks
// (0, 2) in its low nibbles and (1, 3) in its high ones (then 4..7), so the
// activations are stored in the order the nibbles come.
inline constexpr int kSplitOrder[kSubBlocks] = {0, 2, 1, 3, 4, 6, 5, 7};
// (natural_order: the q4k-gemv-split-order mutant, sub-blocks 0..7.)
inline void split_block(const std::int16_t* xq, std::int8_t* out, bool natural_order = false) {
  for (int s = 0; s < kSubBlocks; ++s)
    for (int l = 0; l < kSubBlockWeights; ++l) {
      const int v = xq[(natural_order ? s : kSplitOrder[s]) * kSubBlockWeights + l];
      out[s * kSubBlockWeights + l] = static_cast<std::int8_t>(v >> 7);  // floor (C++20: arithmetic shift)
      out[kBlockWeights + s * kSubBlockWeights + l] = static_cast<std::int8_t>(v & 127);
    }
}

// Computes y[r] for r in [r0, r1): W rows of nb blocks, activations in 14-bit
// fixed point (xq: nb*256 values, scale: nb, sub_sum: nb*8).
struct GemvRows {
  const Block* w;
  std::int64_t nb;
  const std::int16_t* xq;
  const std::int8_t* split;  // xq split (split_block), 512 bytes per block; AVX-512 kernels only
  const double* scale;
  const std::int32_t* sub_sum;
  const double* scaled_sub_sum;  // s_b * sub_sum, nb*8
  float* y;
  Mutation mut;
};
using GemvRowsFn = void (*)(const GemvRows&, std::size_t r0, std::size_t r1);
void gemv_rows_avx2(const GemvRows&, std::size_t r0, std::size_t r1);
void gemv_rows_avx512(const GemvRows&, std::size_t r0, std::size_t r1);
void gemv_rows_avx512_vnni(const GemvRows&, std::size_t r0, std::size_t r1);

// One row's contribution of block b given the exact integer sums.
inline double block_value(std::uint16_t d, std::uint16_t dmin, double s_b, std::int32_t s1, std::int32_t s2) {
  return s_b * (static_cast<double>(fp16_to_float(d)) * s1 - static_cast<double>(fp16_to_float(dmin)) * s2);
}
inline double block_value(const Block& blk, double s_b, std::int32_t s1, std::int32_t s2) {
  return block_value(blk.d, blk.dmin, s_b, s1, s2);
}

// S2 = sum_j m_j * sub_sum_j.
inline std::int32_t min_term(const std::uint8_t* m, const std::int32_t* sub_sum) {
  std::int32_t s2 = 0;
  for (int j = 0; j < kSubBlocks; ++j) s2 += static_cast<std::int32_t>(m[j]) * sub_sum[j];
  return s2;
}

// The packed layout (PackedWeights, cpu_q4k.hpp): 16 rows x 256 columns,
// the same 2304 bytes as their 16 blocks. Chunk k of a row is its code bytes
// qs[4k .. 4k+3]: low nibbles weights 64c + l (sub-block 2c), high nibbles
// 64c + 32 + l (sub-block 2c + 1), c = k / 8, l = 4 (k % 8) .. + 3.
struct PackedBlock {
  std::uint16_t d[16], dmin[16];  // row r's d and dmin at [r]
  std::uint32_t scales[3][16];    // word w of row r's 12 scale bytes at [w][r]
  std::uint8_t qs[32][16][4];     // chunk k of row r at [k][r] (64-byte aligned rows of 16 chunks)
};
static_assert(sizeof(PackedBlock) == 16 * kBlockBytes && sizeof(PackedBlock) % 64 == 0);
inline constexpr int kPackRows = 16;

// Mutation points of the packed kernels (contracts/q4k/q4k-gemv-v1.yaml), decided once per call.
enum class PackedMutation : std::uint8_t {
  None,
  Fp32Sum,               // q4k-packed-fp32-sum: the row sums rounded to FP32 after every block
  HighNibbleScale,       // q4k-packed-high-nibble-scale: AVX-512 weighs sub-block 2c + 1 with the scale of 2c
  Avx2HalfScales,        // q4k-packed-avx2-half-scales: AVX2 rows 8..15 take the scales of rows 0..7
  Avx2MinsHighOnly,      // q4k-packed-avx2-mins-high-only: AVX2's S2 leaves out the sub-block sums' low bytes
  Avx512MinsNoLowPiece,  // q4k-packed-avx512-mins-low-piece: AVX-512's S2 leaves out the sums' lowest 7-bit piece
  RaggedStore,           // q4k-packed-ragged-store: a ragged last group stores one row fewer
  Avx512OddGroup,        // q4k-packed-avx512-odd-group: AVX-512 leaves out a range's odd last group after pairs
};

// Computes y for row groups [g0, g1) of packed W (nb blocks per row). The
// activations in 14-bit fixed point (xq, scale, sub_sum: FixedPointActivations),
// and xq split into bytes in natural order, xq_i = 128 x_hi[i] + x_lo[i]
// (x_hi in [-64, 63], x_lo in [0, 127]) for the vector kernels.
struct PackedRows {
  const PackedBlock* w;
  std::int64_t nb, rows;
  const std::int16_t* xq;
  const std::int8_t* x_hi;
  const std::int8_t* x_lo;
  const double* scale;
  const std::int32_t* sub_sum;
  float* y;
  PackedMutation mut;
};
using PackedGroupsFn = void (*)(const PackedRows&, std::size_t g0, std::size_t g1);
void gemv_packed_avx2(const PackedRows&, std::size_t g0, std::size_t g1);
void gemv_packed_avx512(const PackedRows&, std::size_t g0, std::size_t g1);
void gemv_packed_avx512_vnni(const PackedRows&, std::size_t g0, std::size_t g1);

// Unnamed namespace: each ISA translation unit keeps its own copy of these
// helpers, so the linker never hands another path an AVX-512 build of them.
namespace {
// The vector kernels' software prefetch. They do enough arithmetic per line
// that the hardware prefetchers alone fall behind (on a Zen 4,
// big_32768x4096 at one thread: AVX-512 2.9-4.6 ms without, 1.7-2.5 ms with
// the block 4 ahead requested; AVX2 6.8 -> 3.2 ms). The requests are spread
// over the block's loop rather than issued as one burst of 36 per block (on
// an Intel Xeon, llama_ffn_11008x4096 at one thread: AVX2 1.46-1.51 ms with
// the burst, 1.22-1.23 ms spread). Each of the 36 lines of block
// i + kAheadBlocks is requested exactly once while block i is computed: its
// 4 header lines as the block starts, one chunk line per chunk step. A
// request for a line already on its way is not free: 64 requests a block,
// most of them repeats, made the AVX-512 kernel 20-25% slower cold on a Zen 4
// (big_32768x4096 one thread: 3.6-3.9 ms against 2.9 once per line).
// Near the end the last block is requested again, so every request stays
// inside the weights.
inline constexpr std::size_t kAheadBlocks = 2;
inline constexpr int kHeaderLines = static_cast<int>(offsetof(PackedBlock, qs) / 64);
static_assert(offsetof(PackedBlock, qs) % 64 == 0 && sizeof(PackedBlock) / 64 == kHeaderLines + 32);

inline const char* block_ahead(const PackedRows& a, std::size_t index) {
  const auto blocks = static_cast<std::size_t>((a.rows + kPackRows - 1) / kPackRows * a.nb);
  const std::size_t ahead = index + kAheadBlocks < blocks ? index + kAheadBlocks : blocks - 1;
  return reinterpret_cast<const char*>(a.w + ahead);
}

// Line `line` (0..35) of the block ahead.
inline void prefetch_line(const char* ahead, int line) { __builtin_prefetch(ahead + 64 * line, 0, 3); }

inline void prefetch_header(const char* ahead) {
  for (int line = 0; line < kHeaderLines; ++line) prefetch_line(ahead, line);
}

// The line of chunk step k (0..31) of the block ahead.
inline void prefetch_chunk(const char* ahead, int k) { prefetch_line(ahead, kHeaderLines + k); }

// Stores group g's 16 results, only the rows that exist.
inline void store_group(const PackedRows& a, std::size_t g, const float* v) {
  const std::int64_t r0 = static_cast<std::int64_t>(g) * kPackRows;
  std::int64_t n = a.rows - r0 < kPackRows ? a.rows - r0 : kPackRows;
  if (n < kPackRows && n > 1 && a.mut == PackedMutation::RaggedStore) --n;
  for (std::int64_t i = 0; i < n; ++i) a.y[r0 + i] = v[i];
}
}  // namespace

// quantize_activations over nb blocks of x with AVX2 (the scalar loop's
// values exactly: the same FP64 products, rounded in the current mode and
// clamped); `top` is 8191 (31 under the coarse-activations mutant). Returns
// false, leaving out partly written, at a block holding a non-finite value
// (unless !check_finite: the q4k-activations-unchecked mutant).
struct ActivationsOut {
  std::int16_t* q;
  double* scale;
  std::int32_t* sub_sum;
  double* scaled_sub_sum;
  std::int8_t* hi;
  std::int8_t* lo;
};
bool quantize_blocks_avx2(const float* x, std::size_t nb, double top, const ActivationsOut& out,
                          bool check_finite = true);

using DequantFn = void (*)(const Block* blocks, std::size_t count, float* out, Mutation mut);
void dequantize_avx2(const Block* blocks, std::size_t count, float* out, Mutation mut);
void dequantize_avx512(const Block* blocks, std::size_t count, float* out, Mutation mut);

}  // namespace popper::q4k::cpu::detail
