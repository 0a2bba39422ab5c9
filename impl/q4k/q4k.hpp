// Q4_K under contract (contracts/q4k/q4k-gemv-v1.yaml): the GGUF / ggml
// super-block format and the checks every entry point runs first.
//
// One block holds 256 weights in 144 bytes (0.5625 B/weight):
//   bytes 0..1    d     FP16, scale of the 6-bit sub-block scales
//   bytes 2..3    dmin  FP16, scale of the 6-bit sub-block mins
//   bytes 4..15   scales[12]: sc_j, m_j (j = 0..7), 6 bits each:
//                   j < 4:  sc_j = s[j] & 63            m_j = s[j+4] & 63
//                   j >= 4: sc_j = (s[j+4] & 15) | (s[j-4] >> 6) << 4
//                           m_j  = (s[j+4] >> 4) | (s[j]   >> 6) << 4
//   bytes 16..143 qs[128]: weight 64c + l (c = 0..3, l = 0..31) is the low
//                 nibble of qs[32c + l]; weight 64c + 32 + l its high nibble.
// Weight i of sub-block j = i / 32 (q_i in 0..15) dequantizes, in FP32 with
// each operation rounded separately (no fused multiply-add), as
//   w_i = (d * sc_j) * q_i - (dmin * m_j)
// which is exactly what ggml's dequantize_row_q4_K computes.
//
// A matrix W (rows x cols, cols a multiple of 256) is stored row-major as
// rows * cols / 256 blocks: row r is blocks [r * cols/256, (r+1) * cols/256).
// That is ggml's layout for a tensor with ne[0] = cols, ne[1] = rows.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace popper::q4k {

inline constexpr int kBlockWeights = 256;
inline constexpr int kSubBlocks = 8;
inline constexpr int kSubBlockWeights = 32;
inline constexpr int kScaleBytes = 12;
inline constexpr int kBlockBytes = 144;

struct Block {
  std::uint16_t d;     // FP16 bits
  std::uint16_t dmin;  // FP16 bits
  std::uint8_t scales[kScaleBytes];
  std::uint8_t qs[kBlockWeights / 2];
};
static_assert(sizeof(Block) == kBlockBytes, "Q4_K block must be 144 bytes");

// IEEE binary16 <-> binary32. fp16_to_float is exact for all 65536 patterns
// (inline: the kernels call it per block); float_to_fp16 rounds to nearest
// even (overflow to infinity, NaN kept NaN).
inline float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  const std::uint32_t man = h & 0x3FFu;
  if (exp == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (man << 13));        // inf / NaN (payload kept)
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (man << 13));  // rebias 15 -> 127
  // Zero or subnormal half: man * 2^-24, exact in binary32.
  const float v = static_cast<float>(man) * 0x1p-24f;
  return sign ? -v : v;
}
std::uint16_t float_to_fp16(float f);

// The 6-bit sub-block scale and min j (0..7) from the 12 packed bytes.
struct ScaleMin {
  std::uint8_t scale;
  std::uint8_t min;
};
ScaleMin unpack_scale_min(const std::uint8_t (&scales)[kScaleBytes], int j);
// Inverse of unpack_scale_min for sc[j], m[j] in 0..63 (InvalidArgument otherwise).
void pack_scales_mins(const std::uint8_t (&sc)[kSubBlocks], const std::uint8_t (&m)[kSubBlocks],
                      std::uint8_t (&out)[kScaleBytes]);

// 4-bit code of weight i (0..255) of a block.
inline std::uint8_t quant(const Block& b, int i) {
  const int c = i / 64, l = i % 64;
  const std::uint8_t byte = b.qs[32 * c + (l % 32)];
  return l < 32 ? static_cast<std::uint8_t>(byte & 15) : static_cast<std::uint8_t>(byte >> 4);
}

// Bytes W occupies: rows * cols / 256 * 144.
inline std::size_t matrix_bytes(std::int64_t rows, std::int64_t cols) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols / kBlockWeights) * kBlockBytes;
}

// A quantized matrix with its shape (what quantize_matrix returns and the
// GEMV entries accept through view()).
struct Matrix {
  std::int64_t rows = 0, cols = 0;
  std::vector<Block> blocks;
};

// Checks before any memory is touched (every entry point calls these):
//   rows, cols >= 0 and cols % 256 == 0             else InvalidArgument
//   w.size() >= rows * cols / 256                    else BufferTooSmall("W", ...)
//   x.size() >= cols, y.size() >= rows               else BufferTooSmall("x" / "y", ...)
void check_matrix(std::int64_t rows, std::int64_t cols, std::size_t block_count);
void check_gemv_args(std::int64_t rows, std::int64_t cols, std::size_t block_count, std::size_t x_len,
                     std::size_t y_len);
// n % 256 == 0 and the block span holds n / 256 blocks.
void check_row_args(std::size_t n, std::size_t block_count, const char* what);

}  // namespace popper::q4k
