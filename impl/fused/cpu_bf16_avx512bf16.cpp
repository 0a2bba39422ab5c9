// FP32 -> BF16 with AVX512-BF16 (vcvtneps2bf16: round to nearest even, NaN
// quieted). The instruction treats denormal inputs as zero, so lanes with a
// zero exponent take the integer round-to-nearest-even instead: the result is
// the same as the portable path for every bit pattern (KANI-FUSED-001).
// Called only after cpu_features reports AVX512-BF16.
// GCC 12 warns falsely about the undefined pass-through operand inside the
// AVX-512 intrinsics (_mm512_undefined_ps); the warning is not about our code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

namespace popper::fused::detail {

void to_bf16_avx512bf16(const float* x, std::uint16_t* out, std::int64_t n) {
  const __m512i exp_mask = _mm512_set1_epi32(0x7F800000);
  const __m512i round_base = _mm512_set1_epi32(0x7FFF);
  const __m512i one = _mm512_set1_epi32(1);
  for (std::int64_t i = 0; i < n; i += 16) {
    const int cnt = n - i < 16 ? static_cast<int>(n - i) : 16;
    const __mmask16 m = static_cast<__mmask16>((1u << cnt) - 1u);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __m256bh h = _mm512_cvtneps_pbh(v);
    __m256i r;
    __builtin_memcpy(&r, &h, sizeof r);
    const __m512i bits = _mm512_castps_si512(v);
    const __mmask16 tiny = _mm512_testn_epi32_mask(bits, exp_mask);  // zero or denormal
    if (tiny) {
      const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), one);
      const __m512i rne = _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_add_epi32(round_base, lsb)), 16);
      r = _mm256_mask_blend_epi16(tiny, r, _mm512_cvtepi32_epi16(rne));
    }
    _mm256_mask_storeu_epi16(out + i, m, r);
  }
}

}  // namespace popper::fused::detail
