// BF16 storage (contract bf16_conversion): FP32 -> BF16 round to nearest even
// on the integer bits, NaN kept NaN (quieted); BF16 -> FP32 exact. The
// AVX512-BF16 path (vcvtne2ps2bf16) lives in cpu_bf16_avx512bf16.cpp.
#include "impl/common/cpu_features.hpp"
#include "impl/fused/driver.hpp"
#include "popper/mutant.hpp"

namespace popper::fused {
namespace detail {
void to_bf16_avx512bf16(const float* x, std::uint16_t* out, std::int64_t n);
}

std::uint16_t to_bf16_scalar(float x) {
  std::uint32_t b;
  __builtin_memcpy(&b, &x, sizeof b);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((b >> 16) | 0x0040u);  // NaN, quiet
  if (POPPER_MUTANT("bf16-truncate")) return static_cast<std::uint16_t>(b >> 16);
  const std::uint32_t rounding = 0x7FFFu + ((b >> 16) & 1u);  // ties to even
  return static_cast<std::uint16_t>((b + rounding) >> 16);
}

void to_bf16(std::span<const float> x, std::span<std::uint16_t> out, Isa isa) {
  detail::require_len("out", out.size(), static_cast<std::int64_t>(x.size()));
  const Isa use = popper::cpu::resolve(isa, "fused::to_bf16");
  if (use == Isa::Avx512 && popper::cpu::has_avx512_bf16() && !POPPER_MUTANT("bf16-truncate")) {
    detail::to_bf16_avx512bf16(x.data(), out.data(), static_cast<std::int64_t>(x.size()));
    return;
  }
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = to_bf16_scalar(x[i]);
}

void from_bf16(std::span<const std::uint16_t> x, std::span<float> out) {
  detail::require_len("out", out.size(), static_cast<std::int64_t>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = from_bf16_scalar(x[i]);
}

}  // namespace popper::fused
