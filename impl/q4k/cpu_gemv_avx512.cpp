// Hand Q4_K GEMV, AVX-512 F/BW without VNNI (body in cpu_gemv_avx512.inl),
// and the AVX-512 dequantization. Called only after the CPU check.
#define POPPER_Q4K_VNNI 0
#define POPPER_Q4K_ROWS_FN gemv_rows_avx512
#include "impl/q4k/cpu_gemv_avx512.inl"

namespace popper::q4k::cpu::detail {

// w_i = (d*sc_j)*q_i - dmin*m_j: one multiply and one subtract per lane,
// never fused, so the bits equal reference::dequantize_row.
void dequantize_avx512(const Block* blocks, std::size_t count, float* out, Mutation mut) {
  const __m512i low4 = _mm512_set1_epi32(15);
  for (std::size_t b = 0; b < count; ++b) {
    const Block& blk = blocks[b];
    std::uint8_t sc[kSubBlocks], m[kSubBlocks];
    decode_scales_mins(blk.scales, sc, m, mut);
    float d, dmin;
    block_scales(blk, d, dmin);
    float* o = out + b * kBlockWeights;
    for (int c = 0; c < 4; ++c) {
      const __m512 scale_lo = _mm512_set1_ps(d * static_cast<float>(sc[2 * c]));
      const __m512 scale_hi = _mm512_set1_ps(d * static_cast<float>(sc[2 * c + 1]));
      const __m512 off_lo = _mm512_set1_ps(dmin * static_cast<float>(m[2 * c]));
      const __m512 off_hi = _mm512_set1_ps(dmin * static_cast<float>(m[2 * c + 1]));
      for (int h = 0; h < 2; ++h) {
        const __m512i codes =
            _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.qs + 32 * c + 16 * h)));
        const __m512 lo = _mm512_cvtepi32_ps(_mm512_and_si512(codes, low4));
        const __m512 hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(codes, 4));
        _mm512_storeu_ps(o + 64 * c + 16 * h, _mm512_sub_ps(_mm512_mul_ps(scale_lo, lo), off_lo));
        _mm512_storeu_ps(o + 64 * c + 32 + 16 * h, _mm512_sub_ps(_mm512_mul_ps(scale_hi, hi), off_hi));
      }
    }
  }
}

}  // namespace popper::q4k::cpu::detail
