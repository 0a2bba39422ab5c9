// Q4_K format primitives: FP16 conversion, 6-bit scale packing, argument checks.
#include <bit>
#include <cmath>
#include <string>

#include "popper/error.hpp"
#include "popper/mutant.hpp"
#include "impl/q4k/q4k.hpp"

namespace popper::q4k {

std::uint16_t float_to_fp16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t ax = x & 0x7FFFFFFFu;
  if (ax >= 0x7F800000u) {  // inf or NaN
    const std::uint16_t nan = ax > 0x7F800000u ? static_cast<std::uint16_t>(0x200u | ((ax >> 13) & 0x3FFu)) : 0;
    return static_cast<std::uint16_t>(sign | 0x7C00u | nan);
  }
  if (ax >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // >= 65520: rounds to inf
  if (ax < 0x38800000u) {
    // Result is subnormal (or zero): round ax * 2^24 to an integer, ties to even.
    const float scaled = std::bit_cast<float>(ax) * 0x1p24f;  // exact: a power-of-two scaling
    const float r = std::nearbyint(scaled);                   // default rounding mode: ties to even
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(r));
  }
  // Normal: drop 13 mantissa bits with round-to-nearest-even.
  const std::uint32_t rebias = ax - (112u << 23);
  const std::uint32_t lsb = (rebias >> 13) & 1u;
  // Mutation point (q4k-fp16-truncate): drop the low bits instead of rounding.
  const std::uint32_t rounded = POPPER_MUTANT("q4k-fp16-truncate") ? rebias : rebias + 0xFFFu + lsb;
  return static_cast<std::uint16_t>(sign | (rounded >> 13));
}

ScaleMin unpack_scale_min(const std::uint8_t (&s)[kScaleBytes], int j) {
  if (j < 4) return {static_cast<std::uint8_t>(s[j] & 63), static_cast<std::uint8_t>(s[j + 4] & 63)};
  // Mutation point (q4k-scale-hi-misdecode): the two high bits of the scale of
  // sub-blocks 4..7 taken from the min's byte.
  const int hi_src = POPPER_MUTANT("q4k-scale-hi-misdecode") ? j : j - 4;
  return {static_cast<std::uint8_t>((s[j + 4] & 15) | ((s[hi_src] >> 6) << 4)),
          static_cast<std::uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4))};
}

void pack_scales_mins(const std::uint8_t (&sc)[kSubBlocks], const std::uint8_t (&m)[kSubBlocks],
                      std::uint8_t (&out)[kScaleBytes]) {
  for (int j = 0; j < kSubBlocks; ++j)
    if (sc[j] > 63 || m[j] > 63)
      throw InvalidArgument("q4k::pack_scales_mins: sub-block " + std::to_string(j) + " scale " +
                            std::to_string(sc[j]) + " / min " + std::to_string(m[j]) + " exceeds 6 bits");
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<std::uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<std::uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<std::uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
}

void check_matrix(std::int64_t rows, std::int64_t cols, std::size_t block_count) {
  if (rows < 0 || cols < 0)
    throw InvalidArgument("q4k: negative shape rows=" + std::to_string(rows) + " cols=" + std::to_string(cols));
  if (cols % kBlockWeights != 0)
    throw InvalidArgument("q4k: cols=" + std::to_string(cols) + " is not a multiple of 256 (one Q4_K super-block)");
  const std::size_t need = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols / kBlockWeights);
  if (block_count < need) throw BufferTooSmall("W", need, block_count);
}

void check_gemv_args(std::int64_t rows, std::int64_t cols, std::size_t block_count, std::size_t x_len,
                     std::size_t y_len) {
  check_matrix(rows, cols, block_count);
  // Mutation point (q4k-check-x-off-by-one): accept an x one element short.
  const std::size_t slack = POPPER_MUTANT("q4k-check-x-off-by-one") && cols > 0 ? 1 : 0;
  if (x_len + slack < static_cast<std::size_t>(cols)) throw BufferTooSmall("x", static_cast<std::size_t>(cols), x_len);
  if (y_len < static_cast<std::size_t>(rows)) throw BufferTooSmall("y", static_cast<std::size_t>(rows), y_len);
}

void check_row_args(std::size_t n, std::size_t block_count, const char* what) {
  if (n % kBlockWeights != 0)
    throw InvalidArgument(std::string("q4k::") + what + ": length " + std::to_string(n) +
                          " is not a multiple of 256 (one Q4_K super-block)");
  if (block_count < n / kBlockWeights) throw BufferTooSmall("blocks", n / kBlockWeights, block_count);
}

}  // namespace popper::q4k
