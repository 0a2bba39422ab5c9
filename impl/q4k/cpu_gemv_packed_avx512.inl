// AVX-512 body of the packed Q4_K GEMV (layout: PackedBlock in
// cpu_q4k_kernels.hpp; formulas in cpu_gemv_packed.cpp), included by
// cpu_gemv_packed_avx512.cpp and cpu_gemv_packed_vnni_avx512.cpp (POPPER_Q4K_VNNI).
//
// One 64-byte load holds chunk k (4 code bytes) of the group's 16 rows, one
// row per 32-bit lane; the activations of those columns are one 32-bit
// broadcast, so every lane's dot product is its own row's:
//   VNNI:   vpdpbusd (codes u8 x activation bytes s8, 4 products into int32)
//           per sub-block into H and L (the x_hi and x_lo halves, |.| < 2^17),
//           S_j = 128 H + L, S1 += sc_j S_j (vpmulld);
//   no VNNI: vpmaddubsw into int16 (|8 chunks| <= 30480: no saturation),
//           vpmaddwd by the sub-block scale into int32, S1 = 128 sum_H + sum_L.
// With VNNI the high nibbles are masked in place (16 q, <= 240 as u8) and the
// sub-block's S shifted back by 4, exact; vpmaddubsw would saturate on 16 q.
// S2 = sum_j m_j sub_sum_j by byte dot products over 7-bit pieces of the
// sub-block sums (min_pieces), fewer instructions than a vpmulld per j, which
// one core overlaps better with a cold stream; then the scalar kernel's FP64
// steps on 2 x 8 rows, in the same order, so the bits are the scalar kernel's.
//
// GCC 12 reports the deliberately undefined upper lanes of its AVX-512 cast
// and convert intrinsics (_mm512_undefined_*) as maybe-uninitialized.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "impl/q4k/cpu_q4k_kernels.hpp"

namespace popper::q4k::cpu::detail {
namespace {

inline __m512i broadcast32(const std::int8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm512_set1_epi32(v);
}

// Byte p of every 32-bit lane, zero-extended: into the lane (VNNI) or into both of its 16-bit halves.
inline __m512i byte_of_lanes(__m512i v, int p) {
#if POPPER_Q4K_VNNI
  return _mm512_and_si512(_mm512_srli_epi32(v, 8 * p), _mm512_set1_epi32(0xFF));
#else
  const __m512i b = _mm512_and_si512(_mm512_srli_epi32(v, 8 * p), _mm512_set1_epi32(0xFF));
  return _mm512_or_si512(b, _mm512_slli_epi32(b, 16));
#endif
}

// FP64 of 16 FP16 values as two vectors of 8 (vcvtph2ps is exact).
inline void fp16_to_f64(const std::uint16_t* h, __m512d& lo, __m512d& hi) {
  const __m512 f = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(h)));
  lo = _mm512_cvtps_pd(_mm512_castps512_ps256(f));
  hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1)));
}

// acc + the sum of the 4 products u8 x s8 in each 32-bit lane (u: bytes m_j
// <= 63, so without VNNI the int16 pairs of vpmaddubsw cannot saturate).
inline __m512i dot4(__m512i acc, __m512i u, __m512i s) {
#if POPPER_Q4K_VNNI
  return _mm512_dpbusd_epi32(acc, u, s);
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
#endif
}

// Block b's sub-block sums (they depend on x only) as signed bytes for dot4,
// at pieces[6b .. 6b+5]: sub_sum_j = 2^14 c2_j + 2^7 c1_j + c0_j (c0, c1 in
// [0, 127]; |sub_sum| <= 32 * 2^13, so c2 in [-16, 16]); word 2p + h holds
// piece p of sub-blocks 4h .. 4h+3, byte i that of 4h + i, as the m_j of a
// lane are held. So S2 = 2^14 sum(m c2) + 2^7 sum(m c1) + sum(m c0), exact.
// Built once per call, not per row group.
const std::int32_t* min_pieces(const PackedRows& a) {
  thread_local std::vector<std::int32_t> pieces;
  pieces.resize(static_cast<std::size_t>(6 * a.nb));
  for (std::int64_t b = 0; b < a.nb; ++b) {
    const std::int32_t* sub_sum = a.sub_sum + b * kSubBlocks;
    for (int p = 0; p < 3; ++p)
      for (int h = 0; h < 2; ++h) {
        std::uint32_t word = 0;
        for (int i = 0; i < 4; ++i) {
          const std::int32_t ss = sub_sum[4 * h + i];
          // Mutation point (q4k-packed-avx512-mins-low-piece): piece 0 is left out.
          const bool dropped = p == 0 && a.mut == PackedMutation::Avx512MinsNoLowPiece;
          const std::int32_t piece = dropped ? 0 : p == 2 ? ss >> 14 : (ss >> (7 * p)) & 127;
          word |= (static_cast<std::uint32_t>(piece) & 0xFF) << (8 * i);
        }
        pieces[static_cast<std::size_t>(6 * b + 2 * p + h)] = static_cast<std::int32_t>(word);
      }
  }
  return pieces.data();
}

// The contribution of sub-blocks 2c and 2c + 1 (chunks 8c .. 8c + 7) of
// blocks pb[0 .. S) to their S1, added into s1 (VNNI) or into sum_h and sum_l
// (without). The S blocks are the same column block of S row groups; each
// chunk's activation broadcasts serve all of them.
template <int S>
inline void sub_block_pairs(const PackedBlock* const (&pb)[S], int c, const std::int8_t* xh, const std::int8_t* xl,
                            const __m512i (&sc_a)[S], const __m512i (&sc_b)[S], __m512i (&s1)[S], __m512i (&sum_h)[S],
                            __m512i (&sum_l)[S], const char* const (&ahead)[S]) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  __m512i h0[S], l0[S], h1[S], l1[S];
  for (int s = 0; s < S; ++s) h0[s] = l0[s] = h1[s] = l1[s] = _mm512_setzero_si512();
  for (int kk = 0; kk < 8; ++kk) {
    const int at = 64 * c + 4 * kk;
    const __m512i bh0 = broadcast32(xh + at), bl0 = broadcast32(xl + at), bh1 = broadcast32(xh + at + 32),
                  bl1 = broadcast32(xl + at + 32);
    for (int s = 0; s < S; ++s) {
      const __m512i v = _mm512_load_si512(pb[s]->qs[8 * c + kk]);
      prefetch_chunk(ahead[s], 8 * c + kk);
      const __m512i lo = _mm512_and_si512(v, low4);
#if POPPER_Q4K_VNNI
      const __m512i hi = _mm512_andnot_si512(low4, v);  // 16 q
      h0[s] = _mm512_dpbusd_epi32(h0[s], lo, bh0);
      l0[s] = _mm512_dpbusd_epi32(l0[s], lo, bl0);
      h1[s] = _mm512_dpbusd_epi32(h1[s], hi, bh1);
      l1[s] = _mm512_dpbusd_epi32(l1[s], hi, bl1);
#else
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
      h0[s] = _mm512_add_epi16(h0[s], _mm512_maddubs_epi16(lo, bh0));
      l0[s] = _mm512_add_epi16(l0[s], _mm512_maddubs_epi16(lo, bl0));
      h1[s] = _mm512_add_epi16(h1[s], _mm512_maddubs_epi16(hi, bh1));
      l1[s] = _mm512_add_epi16(l1[s], _mm512_maddubs_epi16(hi, bl1));
#endif
    }
  }
  for (int s = 0; s < S; ++s) {
#if POPPER_Q4K_VNNI
    const __m512i sa = _mm512_add_epi32(_mm512_slli_epi32(h0[s], 7), l0[s]);
    const __m512i sb = _mm512_srai_epi32(_mm512_add_epi32(_mm512_slli_epi32(h1[s], 7), l1[s]), 4);
    s1[s] = _mm512_add_epi32(s1[s], _mm512_add_epi32(_mm512_mullo_epi32(sa, sc_a[s]), _mm512_mullo_epi32(sb, sc_b[s])));
    (void)sum_h, (void)sum_l;
#else
    sum_h[s] = _mm512_add_epi32(sum_h[s],
                                _mm512_add_epi32(_mm512_madd_epi16(h0[s], sc_a[s]), _mm512_madd_epi16(h1[s], sc_b[s])));
    sum_l[s] = _mm512_add_epi32(sum_l[s],
                                _mm512_add_epi32(_mm512_madd_epi16(l0[s], sc_a[s]), _mm512_madd_epi16(l1[s], sc_b[s])));
    (void)s1;
#endif
  }
}

// y for row groups g[0 .. S), block after block, the S groups' blocks b
// computed together: S streams of weights in flight on one core.
template <int S>
void row_groups(const PackedRows& a, const std::int32_t* pieces, const std::size_t (&g)[S]) {
  const __m512i m6 = _mm512_set1_epi32(0x3F3F3F3F), m4 = _mm512_set1_epi32(0x0F0F0F0F),
                m2 = _mm512_set1_epi32(0x30303030);
  const bool high_nibble_scale = a.mut == PackedMutation::HighNibbleScale;
  const auto nb = static_cast<std::size_t>(a.nb);
  __m512d acc_lo[S], acc_hi[S];  // rows 0..7, 8..15 of each group
  for (int s = 0; s < S; ++s) acc_lo[s] = acc_hi[s] = _mm512_setzero_pd();
  for (std::int64_t b = 0; b < a.nb; ++b) {
    const PackedBlock* pb[S];
    const char* ahead[S];
    // The scale words of 16 rows (format in q4k.hpp): bytes j of sc03 / m03 are sc_j / m_j (j < 4),
    // of sc47 / m47 sc_{j+4} / m_{j+4}.
    __m512i sc03[S], m03[S], sc47[S], m47[S], s1[S], sum_h[S], sum_l[S];
    for (int s = 0; s < S; ++s) {
      const std::size_t index = g[s] * nb + static_cast<std::size_t>(b);
      pb[s] = a.w + index;
      ahead[s] = block_ahead(a, index);
      prefetch_header(ahead[s]);
      const __m512i u0 = _mm512_load_si512(pb[s]->scales[0]), u1 = _mm512_load_si512(pb[s]->scales[1]),
                    u2 = _mm512_load_si512(pb[s]->scales[2]);
      sc03[s] = _mm512_and_si512(u0, m6), m03[s] = _mm512_and_si512(u1, m6);
      sc47[s] = _mm512_or_si512(_mm512_and_si512(u2, m4), _mm512_and_si512(_mm512_srli_epi32(u0, 2), m2));
      m47[s] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u2, 4), m4),
                               _mm512_and_si512(_mm512_srli_epi32(u1, 2), m2));
      s1[s] = sum_h[s] = sum_l[s] = _mm512_setzero_si512();
    }
    const std::int8_t* xh = a.x_hi + b * kBlockWeights;
    const std::int8_t* xl = a.x_lo + b * kBlockWeights;
    for (int c = 0; c < 4; ++c) {
      __m512i sc_a[S], sc_b[S];
      for (int s = 0; s < S; ++s) {
        const __m512i words = c < 2 ? sc03[s] : sc47[s];
        sc_a[s] = byte_of_lanes(words, 2 * (c % 2));
        sc_b[s] = high_nibble_scale ? sc_a[s] : byte_of_lanes(words, 2 * (c % 2) + 1);
      }
      sub_block_pairs<S>(pb, c, xh, xl, sc_a, sc_b, s1, sum_h, sum_l, ahead);
    }
    const std::int32_t* pc = pieces + 6 * b;
    const __m512d s_b = _mm512_set1_pd(a.scale[b]);
    for (int s = 0; s < S; ++s) {
#if !POPPER_Q4K_VNNI
      s1[s] = _mm512_add_epi32(_mm512_slli_epi32(sum_h[s], 7), sum_l[s]);
#endif
      __m512i s2p[3];
      for (int p = 0; p < 3; ++p)
        s2p[p] = dot4(dot4(_mm512_setzero_si512(), m03[s], _mm512_set1_epi32(pc[2 * p])), m47[s],
                      _mm512_set1_epi32(pc[2 * p + 1]));
      const __m512i s2 =
          _mm512_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(s2p[2], 14), _mm512_slli_epi32(s2p[1], 7)), s2p[0]);
      // acc += s_b * (d * S1 - dmin * S2), each operation rounded as the scalar kernel rounds it.
      __m512d d_lo, d_hi, dm_lo, dm_hi;
      fp16_to_f64(pb[s]->d, d_lo, d_hi);
      fp16_to_f64(pb[s]->dmin, dm_lo, dm_hi);
      const __m512d s1_lo = _mm512_cvtepi32_pd(_mm512_castsi512_si256(s1[s])),
                    s1_hi = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(s1[s], 1));
      const __m512d s2_lo = _mm512_cvtepi32_pd(_mm512_castsi512_si256(s2)),
                    s2_hi = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(s2, 1));
      acc_lo[s] = _mm512_add_pd(
          acc_lo[s], _mm512_mul_pd(s_b, _mm512_sub_pd(_mm512_mul_pd(d_lo, s1_lo), _mm512_mul_pd(dm_lo, s2_lo))));
      acc_hi[s] = _mm512_add_pd(
          acc_hi[s], _mm512_mul_pd(s_b, _mm512_sub_pd(_mm512_mul_pd(d_hi, s1_hi), _mm512_mul_pd(dm_hi, s2_hi))));
      if (a.mut == PackedMutation::Fp32Sum)
        acc_lo[s] = _mm512_cvtps_pd(_mm512_cvtpd_ps(acc_lo[s])),
        acc_hi[s] = _mm512_cvtps_pd(_mm512_cvtpd_ps(acc_hi[s]));
    }
  }
  for (int s = 0; s < S; ++s) {
    alignas(64) float out[kPackRows];
    _mm256_store_ps(out, _mm512_cvtpd_ps(acc_lo[s]));
    _mm256_store_ps(out + 8, _mm512_cvtpd_ps(acc_hi[s]));
    store_group(a, g[s], out);
  }
}

}  // namespace

void POPPER_Q4K_PACKED_FN(const PackedRows& a, std::size_t g0, std::size_t g1) {
  const std::int32_t* pieces = min_pieces(a);
  // Two streams of weights, group i of the range's first half beside group i
  // of its second half. With this much arithmetic per line, one stream reads
  // a cold matrix at 65-72% of the speed of a plain one-stream read on a Zen 4,
  // two at 85-95% (big_32768x4096, one thread: 0.74-0.97 of the time, median
  // 0.82 over 19 processes; LLC-resident shapes 3-5% faster too). Neighbouring
  // groups as the pair were never faster than one stream (1.0-1.2x its time):
  // the halves are far apart on purpose.
  const std::size_t half = (g1 - g0) / 2;
  for (std::size_t i = 0; i < half; ++i) row_groups<2>(a, pieces, {g0 + i, g0 + half + i});
  // Mutation point (q4k-packed-avx512-odd-group): a range's odd last group is left out after pairs ran.
  if (half > 0 && a.mut == PackedMutation::Avx512OddGroup) return;
  for (std::size_t g = g0 + 2 * half; g < g1; ++g) row_groups<1>(a, pieces, {g});
}

}  // namespace popper::q4k::cpu::detail
