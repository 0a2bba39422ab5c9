// AVX-512 body of the hand Q4_K GEMV (formulas in cpu_q4k.hpp), included by
// cpu_gemv_avx512.cpp (vpmaddwd + vpaddd) and cpu_gemv_vnni_avx512.cpp
// (POPPER_Q4K_VNNI: vpdpwssd).
//
// Per block: the 12 scale bytes are decoded with 32-bit word operations into
// 16 bytes [sc_0..sc_7, m_0..m_7]; each 4-bit code is widened to 16 bits,
// multiplied by its sub-block's scale (<= 945, fits int16) and dotted with the
// 14-bit activations into int32 lanes (exact: every partial sum is bounded by
// 256*15*63*8191 < 2^31). The lanes are converted to FP64 and accumulated
// with d*s_b; the mins with dmin * m_j * (s_b * sum of xq over sub-block j).
// No per-block horizontal sum: one reduction per row.
//
// GCC 12 reports the deliberately undefined upper lanes of its AVX-512 cast
// and convert intrinsics (_mm512_undefined_*) as maybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstring>

#include "q4k/cpu_q4k_kernels.hpp"

namespace popper::q4k::cpu::detail {
namespace {

inline __m512i dot_accumulate(__m512i acc, __m512i a, __m512i b) {
#if POPPER_Q4K_VNNI
  return _mm512_dpwssd_epi32(acc, a, b);
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
#endif
}

// vpshufb patterns that spread byte j of a 16-byte lane into every 16-bit word (zero high byte).
struct ScaleShuffles {
  __m512i idx[kSubBlocks];
  ScaleShuffles() {
    for (int j = 0; j < kSubBlocks; ++j) idx[j] = _mm512_set1_epi16(static_cast<short>(0x8000 | j));
  }
};

inline __m128i scales_and_mins(const Block& blk, Mutation mut) {
  if (mut != Mutation::None) {  // the mutation tests take the scalar decoder
    alignas(16) std::uint8_t sm[16];
    decode_scales_mins(blk.scales, sm, sm + 8, mut);
    return _mm_load_si128(reinterpret_cast<const __m128i*>(sm));
  }
  std::uint32_t u[3];
  std::memcpy(u, blk.scales, sizeof u);
  const std::uint32_t sc_lo = u[0] & 0x3F3F3F3Fu;
  const std::uint32_t m_lo = u[1] & 0x3F3F3F3Fu;
  const std::uint32_t sc_hi = (u[2] & 0x0F0F0F0Fu) | (((u[0] >> 6) & 0x03030303u) << 4);
  const std::uint32_t m_hi = ((u[2] >> 4) & 0x0F0F0F0Fu) | (((u[1] >> 6) & 0x03030303u) << 4);
  return _mm_set_epi32(static_cast<int>(m_hi), static_cast<int>(m_lo), static_cast<int>(sc_hi), static_cast<int>(sc_lo));
}

// d and dmin (the block's first 4 bytes, two FP16) as floats, with AVX-512F's vcvtph2ps.
inline void block_scales(const Block& blk, float& d, float& dmin) {
  std::uint32_t bits;
  std::memcpy(&bits, &blk, sizeof bits);
  const __m128 v = _mm512_castps512_ps128(_mm512_cvtph_ps(_mm256_castsi128_si256(_mm_cvtsi32_si128(static_cast<int>(bits)))));
  d = _mm_cvtss_f32(v);
  dmin = _mm_cvtss_f32(_mm_shuffle_ps(v, v, 1));
}

}  // namespace

namespace {

// Accumulators of one row: FP64 lanes of d*s_b*S1 (16) and of the mins (8).
struct RowAcc {
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd(), min = _mm512_setzero_pd();
  float finish() const { return static_cast<float>(_mm512_reduce_add_pd(_mm512_sub_pd(_mm512_add_pd(lo, hi), min))); }
};

// Adds block `blk` (activations x[8] = the block's 256 xq as 8 x 32 int16) to acc.
inline void add_block(const Block& blk, const __m512i* x, const double* scaled_sub_sum, double s_b, Mutation mut,
                      const ScaleShuffles& shuf, RowAcc& acc) {
  const __m512i low4 = _mm512_set1_epi16(15);
  const __m128i sm = scales_and_mins(blk, mut);
  const __m512i smz = _mm512_broadcast_i32x4(sm);
  __m512i part[4];
  for (int c = 0; c < 4; ++c) {
    const __m512i codes = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * c)));
    const __m512i lo = _mm512_mullo_epi16(_mm512_and_si512(codes, low4), _mm512_shuffle_epi8(smz, shuf.idx[2 * c]));
    const __m512i hi = _mm512_mullo_epi16(_mm512_srli_epi16(codes, 4), _mm512_shuffle_epi8(smz, shuf.idx[2 * c + 1]));
    part[c] = dot_accumulate(dot_accumulate(_mm512_setzero_si512(), lo, x[2 * c]), hi, x[2 * c + 1]);
  }
  const __m512i s1 = _mm512_add_epi32(_mm512_add_epi32(part[0], part[1]), _mm512_add_epi32(part[2], part[3]));
  float d, dmin;
  block_scales(blk, d, dmin);
  const __m512d ds = _mm512_set1_pd(static_cast<double>(d) * s_b);
  acc.lo = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(s1)), ds, acc.lo);
  acc.hi = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(s1, 1)), ds, acc.hi);
  const __m512d mins = _mm512_cvtepi64_pd(_mm512_cvtepu8_epi64(_mm_srli_si128(sm, 8)));
  acc.min = _mm512_fmadd_pd(_mm512_mul_pd(mins, _mm512_loadu_pd(scaled_sub_sum)), _mm512_set1_pd(static_cast<double>(dmin)),
                            acc.min);
}

}  // namespace

// Two rows at a time share each block's activations in registers.
void POPPER_Q4K_ROWS_FN(const GemvRows& a, std::size_t r0, std::size_t r1) {
  static const ScaleShuffles shuf;
  const std::size_t nb = static_cast<std::size_t>(a.nb);
  std::size_t r = r0;
  for (; r + 1 < r1; r += 2) {
    const Block* row0 = a.w + r * nb;
    const Block* row1 = row0 + nb;
    RowAcc acc0, acc1;
    for (std::size_t b = 0; b < nb; ++b) {
      __m512i x[8];
      for (int k = 0; k < 8; ++k) x[k] = _mm512_loadu_si512(a.xq + b * kBlockWeights + 32 * k);
      add_block(row0[b], x, a.scaled_sub_sum + b * kSubBlocks, a.scale[b], a.mut, shuf, acc0);
      add_block(row1[b], x, a.scaled_sub_sum + b * kSubBlocks, a.scale[b], a.mut, shuf, acc1);
    }
    a.y[r] = acc0.finish();
    a.y[r + 1] = acc1.finish();
  }
  for (; r < r1; ++r) {
    const Block* row = a.w + r * nb;
    RowAcc acc;
    for (std::size_t b = 0; b < nb; ++b) {
      __m512i x[8];
      for (int k = 0; k < 8; ++k) x[k] = _mm512_loadu_si512(a.xq + b * kBlockWeights + 32 * k);
      add_block(row[b], x, a.scaled_sub_sum + b * kSubBlocks, a.scale[b], a.mut, shuf, acc);
    }
    a.y[r] = acc.finish();
  }
}

}  // namespace popper::q4k::cpu::detail
