// Packed Q4_K GEMV with AVX2 (layout: PackedBlock in cpu_q4k_kernels.hpp;
// formulas in cpu_gemv_packed.cpp). Each 64-byte chunk row of a group is two
// 8-row halves; a 32-byte load holds chunk k of 8 rows, one row per 32-bit
// lane, dotted with a 32-bit broadcast of the activation bytes (one for both
// halves): vpmaddubsw into int16 per sub-block (8 chunks: |.| <= 30480, no
// saturation), vpmaddwd by the sub-block scale into int32, S1 = 128 sum_H +
// sum_L; S2 = sum_j m_j sub_sum_j (vpmaddwd on 16-bit pieces); then the
// scalar kernel's FP64 steps in its order, so its bits. FP16 d and dmin are
// widened with integer operations (AVX2 CPUs need not have F16C): exact,
// subnormals included.
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "impl/q4k/cpu_q4k_kernels.hpp"

namespace popper::q4k::cpu::detail {
namespace {

inline __m256i broadcast32(const std::int8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_set1_epi32(v);
}

// Byte p of every 32-bit lane, zero-extended into both 16-bit halves of the
// lane. The shuffle controls are constants: p is known only at run time in
// block_sums' loop, and built there from p they took a sixth of the kernel's
// time (Zen 3, an L2-resident 256 x 4096).
alignas(32) constexpr std::int8_t kByteOfLanes[4][32] = {
    {0, -128, 0, -128, 4, -128, 4, -128, 8, -128, 8, -128, 12, -128, 12, -128,
     0, -128, 0, -128, 4, -128, 4, -128, 8, -128, 8, -128, 12, -128, 12, -128},
    {1, -128, 1, -128, 5, -128, 5, -128, 9, -128, 9, -128, 13, -128, 13, -128,
     1, -128, 1, -128, 5, -128, 5, -128, 9, -128, 9, -128, 13, -128, 13, -128},
    {2, -128, 2, -128, 6, -128, 6, -128, 10, -128, 10, -128, 14, -128, 14, -128,
     2, -128, 2, -128, 6, -128, 6, -128, 10, -128, 10, -128, 14, -128, 14, -128},
    {3, -128, 3, -128, 7, -128, 7, -128, 11, -128, 11, -128, 15, -128, 15, -128,
     3, -128, 3, -128, 7, -128, 7, -128, 11, -128, 11, -128, 15, -128, 15, -128}};
inline __m256i byte_of_lanes16(__m256i v, int p) {
  return _mm256_shuffle_epi8(v, _mm256_load_si256(reinterpret_cast<const __m256i*>(kByteOfLanes[p])));
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
    const __m256i m6 = _mm256_set1_epi32(0x3F3F3F3F), m4 = _mm256_set1_epi32(0x0F0F0F0F),
                  m2 = _mm256_set1_epi32(0x30303030);
    const auto word = [&](int k) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(&w[k][8 * half])); };
    const __m256i u0 = word(0), u1 = word(1), u2 = word(2);
    sc03 = _mm256_and_si256(u0, m6), m03 = _mm256_and_si256(u1, m6);
    sc47 = _mm256_or_si256(_mm256_and_si256(u2, m4), _mm256_and_si256(_mm256_srli_epi32(u0, 2), m2));
    m47 =
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u2, 4), m4), _mm256_and_si256(_mm256_srli_epi32(u1, 2), m2));
  }
};

// x_hi and x_lo sums (int16, per half a / b) of one sub-block of the group's
// 16 rows: the low (kHigh false) or high nibbles of chunks 8c..8c+7. Four
// accumulators and the activation broadcasts shared by both halves fit the 16
// ymm registers, so the loop neither spills nor moves registers; all eight
// sums of a chunk column at once spilled two and took twice the instructions
// per weight (6% slower on an L2-resident shape). Unrolled 4, not 8: fully
// unrolled, GCC 12 shares the two passes' loads and spills them.
template <bool kHigh>
inline void sub_block_sums(const PackedBlock& pb, int c, const std::int8_t* xh, const std::int8_t* xl, __m256i (&hs)[2],
                           __m256i (&ls)[2], const char* ahead) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256i ha = _mm256_setzero_si256(), hb = ha, la = ha, lb = ha;
#pragma GCC unroll 4
  for (int kk = 0; kk < 8; ++kk) {
    const std::uint8_t* chunk = pb.qs[8 * c + kk][0];
    // Once per line, in the second pass over it: with the request in the
    // first, GCC 12 left the second's loop rolled (8% more instructions).
    if constexpr (kHigh) prefetch_chunk(ahead, 8 * c + kk);
    __m256i va = _mm256_load_si256(reinterpret_cast<const __m256i*>(chunk));
    __m256i vb = _mm256_load_si256(reinterpret_cast<const __m256i*>(chunk + 32));
    if constexpr (kHigh) va = _mm256_srli_epi16(va, 4), vb = _mm256_srli_epi16(vb, 4);
    va = _mm256_and_si256(va, low4), vb = _mm256_and_si256(vb, low4);
    const int at = 64 * c + (kHigh ? 32 : 0) + 4 * kk;
    const __m256i bh = broadcast32(xh + at), bl = broadcast32(xl + at);
    ha = _mm256_add_epi16(ha, _mm256_maddubs_epi16(va, bh));
    hb = _mm256_add_epi16(hb, _mm256_maddubs_epi16(vb, bh));
    la = _mm256_add_epi16(la, _mm256_maddubs_epi16(va, bl));
    lb = _mm256_add_epi16(lb, _mm256_maddubs_epi16(vb, bl));
  }
  hs[0] = ha, hs[1] = hb, ls[0] = la, ls[1] = lb;
}

// S1 and S2 of the group's 16 rows (two halves of 8) of one block. Per
// sub-block the int16 sums (8 chunks: |.| <= 30480) are weighted by sc_j.
inline void block_sums(const PackedBlock& pb, const ScalesMins (&sm)[2], const std::int8_t* xh, const std::int8_t* xl,
                       const std::int32_t* pairs, __m256i (&s1)[2], __m256i (&s2)[2], const char* ahead) {
  __m256i sum_h[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()}, sum_l[2] = {sum_h[0], sum_h[0]};
  const auto weigh = [&](const __m256i(&hs)[2], const __m256i(&ls)[2], int byte) {
    for (int h = 0; h < 2; ++h) {
      const __m256i sc = byte_of_lanes16(byte < 4 ? sm[h].sc03 : sm[h].sc47, byte % 4);
      sum_h[h] = _mm256_add_epi32(sum_h[h], _mm256_madd_epi16(hs[h], sc));
      sum_l[h] = _mm256_add_epi32(sum_l[h], _mm256_madd_epi16(ls[h], sc));
    }
  };
  for (int c = 0; c < 4; ++c) {
    __m256i hs[2], ls[2];
    sub_block_sums<false>(pb, c, xh, xl, hs, ls, ahead);
    weigh(hs, ls, 2 * c);
    sub_block_sums<true>(pb, c, xh, xl, hs, ls, ahead);
    weigh(hs, ls, 2 * c + 1);
  }
  // S2 = sum_j m_j sub_sum_j on vpmaddwd, the sub-block sums' 16-bit pieces
  // from `pairs` (min_pairs).
  const auto pair = [&](int k) { return _mm256_set1_epi32(pairs[k]); };
  const __m256i hi[4] = {pair(0), pair(1), pair(2), pair(3)}, lo[4] = {pair(4), pair(5), pair(6), pair(7)};
  const __m256i even = _mm256_set1_epi32(0x00FF00FF);
  for (int h = 0; h < 2; ++h) {
    s1[h] = _mm256_add_epi32(_mm256_slli_epi32(sum_h[h], 7), sum_l[h]);
    const __m256i m[4] = {_mm256_and_si256(sm[h].m03, even), _mm256_and_si256(_mm256_srli_epi32(sm[h].m03, 8), even),
                          _mm256_and_si256(sm[h].m47, even), _mm256_and_si256(_mm256_srli_epi32(sm[h].m47, 8), even)};
    __m256i s2h = _mm256_madd_epi16(m[0], hi[0]), s2l = _mm256_madd_epi16(m[0], lo[0]);
    for (int k = 1; k < 4; ++k) {
      s2h = _mm256_add_epi32(s2h, _mm256_madd_epi16(m[k], hi[k]));
      s2l = _mm256_add_epi32(s2l, _mm256_madd_epi16(m[k], lo[k]));
    }
    s2[h] = _mm256_add_epi32(_mm256_slli_epi32(s2h, 8), s2l);
  }
}

// acc += s_b * (d * S1 - dmin * S2) for 4 rows, rounded as the scalar kernel rounds it.
inline __m256d add_block(__m256d acc, __m128 d, __m128 dmin, __m128i s1, __m128i s2, __m256d s_b) {
  const __m256d t = _mm256_sub_pd(_mm256_mul_pd(_mm256_cvtps_pd(d), _mm256_cvtepi32_pd(s1)),
                                  _mm256_mul_pd(_mm256_cvtps_pd(dmin), _mm256_cvtepi32_pd(s2)));
  return _mm256_add_pd(acc, _mm256_mul_pd(s_b, t));
}

// Block b's sub-block sums (they depend on x only) as vpmaddwd operands, at
// pairs[8b .. 8b+7]: sub_sum_j = 256 hi_j + lo_j (lo_j in [0, 255], |hi_j| <=
// 1024: both int16), paired as the m_j of a lane are, (m_0, m_2), (m_1, m_3),
// (m_4, m_6), (m_5, m_7) in its two 16-bit halves; four hi words, then four
// lo. So S2 = 256 sum(m hi) + sum(m lo), exact. Built once per call, not in
// every row group from scalars (3% of the kernel's time there).
const std::int32_t* min_pairs(const PackedRows& a) {
  thread_local std::vector<std::int32_t> pairs;
  pairs.resize(static_cast<std::size_t>(8 * a.nb));
  for (std::int64_t b = 0; b < a.nb; ++b) {
    const std::int32_t* sub_sum = a.sub_sum + b * kSubBlocks;
    std::int32_t* out = pairs.data() + 8 * b;
    for (int k = 0; k < 4; ++k) {
      const int j0 = k % 2 + 4 * (k / 2), j1 = j0 + 2;
      out[k] = static_cast<std::int32_t>((static_cast<std::uint32_t>(sub_sum[j0] >> 8) & 0xFFFF) |
                                         static_cast<std::uint32_t>(sub_sum[j1] >> 8) << 16);
      // Mutation point (q4k-packed-avx2-mins-high-only): the low bytes are left out.
      out[4 + k] = a.mut == PackedMutation::Avx2MinsHighOnly ? 0 : (sub_sum[j0] & 0xFF) | (sub_sum[j1] & 0xFF) << 16;
    }
  }
  return pairs.data();
}

}  // namespace

void gemv_packed_avx2(const PackedRows& a, std::size_t g0, std::size_t g1) {
  const std::int32_t* pairs = min_pairs(a);
  for (std::size_t g = g0; g < g1; ++g) {
    const PackedBlock* group = a.w + g * static_cast<std::size_t>(a.nb);
    __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
    for (std::int64_t b = 0; b < a.nb; ++b) {
      const PackedBlock& pb = group[b];
      const char* ahead = block_ahead(a, g * static_cast<std::size_t>(a.nb) + static_cast<std::size_t>(b));
      prefetch_header(ahead);
      const __m256d s_b = _mm256_set1_pd(a.scale[b]);
      // Mutation point (q4k-packed-avx2-half-scales): rows 8..15 read the scale words of rows 0..7.
      const ScalesMins sm[2] = {ScalesMins(pb.scales, 0),
                                ScalesMins(pb.scales, a.mut == PackedMutation::Avx2HalfScales ? 0 : 1)};
      __m256i s1[2], s2[2];
      block_sums(pb, sm, a.x_hi + b * kBlockWeights, a.x_lo + b * kBlockWeights, pairs + 8 * b, s1, s2, ahead);
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
