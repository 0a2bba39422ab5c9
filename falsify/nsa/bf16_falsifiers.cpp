// BF16 storage (contracts/nsa/nsa-selection-v1.yaml: KANI-NSA-004): the
// conversion rounds to nearest even, checked against an independent rule in
// FP64 (pick the nearer of the two BF16 neighbours, ties to the even one;
// above the largest BF16 the upper neighbour is 2^128, i.e. +-Inf).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "impl/nsa/nsa.hpp"
#include "popper/binding.hpp"

namespace {

// The magnitude a BF16 pattern stands for, with 0x7F80 (Inf) read as 2^128 so it can be a rounding neighbour.
double magnitude(std::uint32_t hi15) {
  if (hi15 == 0x7F80u) return std::ldexp(1.0, 128);
  const std::uint32_t bits = hi15 << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return static_cast<double>(f);
}

}  // namespace

POPPER_HARNESS("KANI-NSA-004", [](const popper::Params& p) {
  const std::uint32_t lows[] = {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu};
  const std::uint32_t bound = static_cast<std::uint32_t>(p.bound());
  long checked = 0;
  for (std::uint32_t hi = 0; hi < bound; ++hi)
    for (const std::uint32_t lo : lows) {
      const std::uint32_t bits = hi << 16 | lo;
      float x;
      std::memcpy(&x, &bits, sizeof x);
      const popper::nsa::bf16 got = popper::nsa::bf16_from_float(x);
      ++checked;
      const std::uint32_t sign = hi & 0x8000u, mag = hi & 0x7FFFu;
      if (std::isnan(x)) {
        ASSERT_TRUE(std::isnan(popper::nsa::float_from_bf16(got))) << std::hex << bits << ": NaN lost";
        ASSERT_EQ(got & 0x8000u, sign) << std::hex << bits << ": NaN sign lost";
        continue;
      }
      std::uint32_t want = mag;  // round toward zero first, then decide on the neighbour above
      if (mag < 0x7F80u) {
        const double ax = std::fabs(static_cast<double>(x)), below = magnitude(mag), above = magnitude(mag + 1);
        const double d_below = ax - below, d_above = above - ax;
        if (d_above < d_below || (d_above == d_below && (mag & 1u))) want = mag + 1;
      }
      ASSERT_EQ(got, static_cast<popper::nsa::bf16>(sign | want))
          << std::hex << "float bits 0x" << bits << ": got 0x" << got << ", round-to-nearest-even gives 0x"
          << (sign | want);
    }
  std::printf("  %ld float patterns checked\n", checked);
});
