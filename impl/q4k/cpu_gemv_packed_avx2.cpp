// Packed Q4_K GEMV with AVX2 (layout: PackedBlock in cpu_q4k_kernels.hpp;
// formulas in cpu_gemv_packed.cpp). Each 64-byte chunk row of a group is two
// 8-row halves; a 32-byte load holds chunk k of 8 rows, one row per 32-bit
// lane, dotted with a 32-bit broadcast of the activation bytes (one for both halves):
// vpmaddubsw into int16 per sub-block (8 chunks: |.| <= 30480, no
// saturation), vpmaddwd by the sub-block scale into int32, S1 = 128 sum_H +
// sum_L; S2 = sum_j m_j sub_sum_j (vpmulld); then the scalar kernel's FP64
// steps in its order, so its bits. FP16 d and dmin are widened with integer
// operations (AVX2 CPUs need not have F16C): exact, subnormals included.
#include <immintrin.h>

#include <cstring>

#include "impl/q4k/cpu_q4k_kernels.hpp"

namespace popper::q4k::cpu::detail {
namespace {

inline __m256i broadcast32(const std::int8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_set1_epi32(v);
}

// Byte p of every 32-bit lane, zero-extended into both 16-bit halves of the lane.
inline __m256i byte_of_lanes16(__m256i v, int p) {
  const __m256i b = _mm256_and_si256(_mm256_srli_epi32(v, 8 * p), _mm256_set1_epi32(0xFF));
  return _mm256_or_si256(b, _mm256_slli_epi32(b, 16));
}

// 8 FP16 values exactly as FP32: the exponent and mantissa moved to FP32's
// place and scaled by 2^112 (exact for normal and subnormal halves), infinity
// and NaN given FP32's all-ones exponent, then the sign.
inline __m256 fp16x8_to_f32(const std::uint16_t* h) {
  const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
  const __m256i em = _mm256_slli_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0x7FFF)), 13);
  const __m256i special = _mm256_cmpeq_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0x7C00)), _mm256_set1_epi32(0x7C00));
  const __m256 finite = _mm256_mul_ps(_mm256_castsi256_ps(em), _mm256_set1_ps(0x1p112f));
  const __m256 inf_nan = _mm256_castsi256_ps(_mm256_or_si256(em, _mm256_set1_epi32(0x7F800000)));
  const __m256 f = _mm256_blendv_ps(finite, inf_nan, _mm256_castsi256_ps(special));
  return _mm256_or_ps(f, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0x8000)), 16)));
}

// The 6-bit scales (sc) and mins (m) of 8 rows, one row per 32-bit lane:
// byte j of sc03 / m03 is sc_j / m_j (j < 4), of sc47 / m47 sc_{j+4} / m_{j+4}.
struct ScalesMins {
  __m256i sc03, sc47, m03, m47;
  explicit ScalesMins(const std::uint32_t (&w)[3][16], int half) {
    const __m256i m6 = _mm256_set1_epi32(0x3F3F3F3F), m4 = _mm256_set1_epi32(0x0F0F0F0F), m2 = _mm256_set1_epi32(0x30303030);
    const auto word = [&](int k) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(&w[k][8 * half])); };
    const __m256i u0 = word(0), u1 = word(1), u2 = word(2);
    sc03 = _mm256_and_si256(u0, m6), m03 = _mm256_and_si256(u1, m6);
    sc47 = _mm256_or_si256(_mm256_and_si256(u2, m4), _mm256_and_si256(_mm256_srli_epi32(u0, 2), m2));
    m47 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u2, 4), m4), _mm256_and_si256(_mm256_srli_epi32(u1, 2), m2));
  }
};

// S1 and S2 of the group's 16 rows (two halves of 8) of one block. The
// activation broadcasts of a chunk serve both halves.
inline void block_sums(const PackedBlock& pb, const ScalesMins (&sm)[2], const std::int8_t* xh, const std::int8_t* xl,
                       const std::int32_t* sub_sum, __m256i (&s1)[2], __m256i (&s2)[2]) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256i sum_h[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()}, sum_l[2] = {sum_h[0], sum_h[0]};
  for (int c = 0; c < 4; ++c) {
    // Per half (a, b) the x_hi and x_lo sums of sub-blocks 2c (0) and 2c + 1 (1), int16.
    __m256i h0a = _mm256_setzero_si256(), l0a = h0a, h1a = h0a, l1a = h0a, h0b = h0a, l0b = h0a, h1b = h0a, l1b = h0a;
#pragma GCC unroll 1  // unrolled, 8 accumulators and their operands spill 16 ymm registers
    for (int kk = 0; kk < 8; ++kk) {
      const std::uint8_t* chunk = pb.qs[8 * c + kk][0];
      const __m256i va = _mm256_load_si256(reinterpret_cast<const __m256i*>(chunk));
      const __m256i vb = _mm256_load_si256(reinterpret_cast<const __m256i*>(chunk + 32));
      const int at = 64 * c + 4 * kk;
      const __m256i loa = _mm256_and_si256(va, low4), lob = _mm256_and_si256(vb, low4);
      const __m256i bh0 = broadcast32(xh + at), bl0 = broadcast32(xl + at);
      h0a = _mm256_add_epi16(_mm256_maddubs_epi16(loa, bh0), h0a);
      h0b = _mm256_add_epi16(_mm256_maddubs_epi16(lob, bh0), h0b);
      l0a = _mm256_add_epi16(_mm256_maddubs_epi16(loa, bl0), l0a);
      l0b = _mm256_add_epi16(_mm256_maddubs_epi16(lob, bl0), l0b);
      const __m256i hia = _mm256_and_si256(_mm256_srli_epi16(va, 4), low4), hib = _mm256_and_si256(_mm256_srli_epi16(vb, 4), low4);
      const __m256i bh1 = broadcast32(xh + at + 32), bl1 = broadcast32(xl + at + 32);
      h1a = _mm256_add_epi16(_mm256_maddubs_epi16(hia, bh1), h1a);
      h1b = _mm256_add_epi16(_mm256_maddubs_epi16(hib, bh1), h1b);
      l1a = _mm256_add_epi16(_mm256_maddubs_epi16(hia, bl1), l1a);
      l1b = _mm256_add_epi16(_mm256_maddubs_epi16(hib, bl1), l1b);
    }
    const __m256i h0[2] = {h0a, h0b}, l0[2] = {l0a, l0b}, h1[2] = {h1a, h1b}, l1[2] = {l1a, l1b};
    for (int h = 0; h < 2; ++h) {
      const __m256i words = c < 2 ? sm[h].sc03 : sm[h].sc47;
      const __m256i sc_a = byte_of_lanes16(words, 2 * (c % 2)), sc_b = byte_of_lanes16(words, 2 * (c % 2) + 1);
      sum_h[h] = _mm256_add_epi32(sum_h[h], _mm256_add_epi32(_mm256_madd_epi16(h0[h], sc_a), _mm256_madd_epi16(h1[h], sc_b)));
      sum_l[h] = _mm256_add_epi32(sum_l[h], _mm256_add_epi32(_mm256_madd_epi16(l0[h], sc_a), _mm256_madd_epi16(l1[h], sc_b)));
    }
  }
  for (int h = 0; h < 2; ++h) {
    s1[h] = _mm256_add_epi32(_mm256_slli_epi32(sum_h[h], 7), sum_l[h]);
    s2[h] = _mm256_setzero_si256();
    for (int j = 0; j < kSubBlocks; ++j) {
      const __m256i mj = _mm256_and_si256(_mm256_srli_epi32(j < 4 ? sm[h].m03 : sm[h].m47, 8 * (j % 4)), _mm256_set1_epi32(0xFF));
      s2[h] = _mm256_add_epi32(s2[h], _mm256_mullo_epi32(mj, _mm256_set1_epi32(sub_sum[j])));
    }
  }
}

// acc += s_b * (d * S1 - dmin * S2) for 4 rows, rounded as the scalar kernel rounds it.
inline __m256d add_block(__m256d acc, __m128 d, __m128 dmin, __m128i s1, __m128i s2, __m256d s_b) {
  const __m256d t = _mm256_sub_pd(_mm256_mul_pd(_mm256_cvtps_pd(d), _mm256_cvtepi32_pd(s1)),
                                  _mm256_mul_pd(_mm256_cvtps_pd(dmin), _mm256_cvtepi32_pd(s2)));
  return _mm256_add_pd(acc, _mm256_mul_pd(s_b, t));
}

}  // namespace

void gemv_packed_avx2(const PackedRows& a, std::size_t g0, std::size_t g1) {
  for (std::size_t g = g0; g < g1; ++g) {
    const PackedBlock* group = a.w + g * static_cast<std::size_t>(a.nb);
    __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
    for (std::int64_t b = 0; b < a.nb; ++b) {
      const PackedBlock& pb = group[b];
      prefetch_block(a, g * static_cast<std::size_t>(a.nb) + static_cast<std::size_t>(b + kPrefetchBlocks));
      const __m256d s_b = _mm256_set1_pd(a.scale[b]);
      // Mutation point (q4k-packed-avx2-half-scales): rows 8..15 read the scale words of rows 0..7.
      const ScalesMins sm[2] = {ScalesMins(pb.scales, 0), ScalesMins(pb.scales, a.mut == PackedMutation::Avx2HalfScales ? 0 : 1)};
      __m256i s1[2], s2[2];
      block_sums(pb, sm, a.x_hi + b * kBlockWeights, a.x_lo + b * kBlockWeights, a.sub_sum + b * kSubBlocks, s1, s2);
      for (int h = 0; h < 2; ++h) {
        const __m256 d = fp16x8_to_f32(pb.d + 8 * h), dmin = fp16x8_to_f32(pb.dmin + 8 * h);
        acc[2 * h] = add_block(acc[2 * h], _mm256_castps256_ps128(d), _mm256_castps256_ps128(dmin),
                               _mm256_castsi256_si128(s1[h]), _mm256_castsi256_si128(s2[h]), s_b);
        acc[2 * h + 1] = add_block(acc[2 * h + 1], _mm256_extractf128_ps(d, 1), _mm256_extractf128_ps(dmin, 1),
                                   _mm256_extracti128_si256(s1[h], 1), _mm256_extracti128_si256(s2[h], 1), s_b);
      }
      if (a.mut == PackedMutation::Fp32Sum)
        for (auto& q : acc) q = _mm256_cvtps_pd(_mm256_cvtpd_ps(q));
    }
    alignas(32) float out[kPackRows];
    for (int q = 0; q < 4; ++q) _mm_store_ps(out + 4 * q, _mm256_cvtpd_ps(acc[q]));
    store_group(a, g, out);
  }
}

}  // namespace popper::q4k::cpu::detail
