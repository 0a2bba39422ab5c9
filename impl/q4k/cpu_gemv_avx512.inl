// AVX-512 body of the hand Q4_K GEMV (formulas in cpu_q4k.hpp), included by
// cpu_gemv_avx512.cpp (vpmaddwd + vpaddd) and cpu_gemv_vnni_avx512.cpp
// (POPPER_Q4K_VNNI: vpdpwssd).
//
// Per block: the 12 scale bytes are decoded with 32-bit word operations into
// 16 bytes [sc_0..sc_7, m_0..m_7]. The 4-bit codes stay bytes: vpmaddubsw
// dots them with the activations split into bytes (xq = 128 hi + lo,
// split_block), vpmaddwd weights the int16 pair sums by the sub-block scales,
// and S1 = 128 * (hi sums) + (lo sums) in int32 lanes, exact (bounds at
// add_block). Per 64 codes: two byte and two word multiplies and one
// shuffle, where the 16-bit form (codes widened, multiplied by the scale,
// dotted with xq) needed three shuffles; 15-22% faster on cache-resident
// weights, no faster from DRAM at one thread (the row stream is the limit).
// The lanes are converted to FP64 and accumulated with d*s_b; the mins with
// dmin * m_j * (s_b * sum of xq over sub-block j).
// No per-block horizontal sum: one reduction per row.
//
// GCC 12 reports the deliberately undefined upper lanes of its AVX-512 cast
// and convert intrinsics (_mm512_undefined_*) as maybe-uninitialized.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "impl/q4k/cpu_q4k_kernels.hpp"

namespace popper::q4k::cpu::detail {
namespace {

inline __m512i dot_accumulate(__m512i acc, __m512i a, __m512i b) {
#if POPPER_Q4K_VNNI
  return _mm512_dpwssd_epi32(acc, a, b);
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
#endif
}

// vpshufb patterns for the k-th 64-byte half of the nibbles (k = 0: low
// nibbles of bytes 0..63, 1: their high nibbles, 2, 3: the same of bytes
// 64..127): words 0..15 get the scale of sub-block kSplitOrder[2k], words
// 16..31 that of kSplitOrder[2k + 1] (zero high byte).
struct ScaleShuffles {
  __m512i idx[4];
  ScaleShuffles() {
    for (int k = 0; k < 4; ++k) {
      alignas(64) std::int16_t w[32];
      for (int i = 0; i < 32; ++i) w[i] = static_cast<std::int16_t>(0x8000 | kSplitOrder[2 * k + i / 16]);
      idx[k] = _mm512_load_si512(w);
    }
  }
};

inline __m128i scales_and_mins(const Block& blk, Mutation mut) {
  alignas(16) std::uint8_t sm[16];
  decode_scales_mins_words(blk, sm, mut);
  return _mm_load_si128(reinterpret_cast<const __m128i*>(sm));
}

// d and dmin (the block's first 4 bytes, two FP16) as floats, with AVX-512F's vcvtph2ps.
inline void block_scales(const Block& blk, float& d, float& dmin) {
  std::uint32_t bits;
  std::memcpy(&bits, &blk, sizeof bits);
  const __m128 v =
      _mm512_castps512_ps128(_mm512_cvtph_ps(_mm256_castsi128_si256(_mm_cvtsi32_si128(static_cast<int>(bits)))));
  d = _mm_cvtss_f32(v);
  dmin = _mm_cvtss_f32(_mm_shuffle_ps(v, v, 1));
}

}  // namespace

namespace {

// Accumulators of one row: FP64 lanes of d*s_b*S1 (8) and of the mins (8).
struct RowAcc {
  __m512d s1 = _mm512_setzero_pd(), min = _mm512_setzero_pd();
  float finish() const { return static_cast<float>(_mm512_reduce_add_pd(_mm512_sub_pd(s1, min))); }
};

// Adds one block given its decoded scales/mins `sm` ([sc_0..sc_7, m_0..m_7]) and d, dmin.
// Each 64-byte load of the codes gives two halves of 64 nibbles; vpmaddubsw
// multiplies them by the activations' high and low bytes (pairs summed in
// int16: |15*127*2| < 2^15), vpmaddwd by the sub-blocks' scales (int32), so
// S1 = 128 * hi_acc + lo_acc, exact: |hi_acc| <= 4*2*1920*63 < 2^20, |lo_acc| < 2^21.
inline void add_block(const Block& blk, __m128i sm, float d, float dmin, const std::int8_t* xs,
                      const double* scaled_sub_sum, double s_b, const ScaleShuffles& shuf, RowAcc& acc) {
  const __m512i low4 = _mm512_set1_epi8(15);
  const __m512i smz = _mm512_broadcast_i32x4(sm);
  __m512i hi_acc = _mm512_setzero_si512(), lo_acc = _mm512_setzero_si512();
  for (int r = 0; r < 2; ++r) {
    // Two 256-bit loads, not one 512-bit: the codes sit 16 bytes past a
    // 64-byte boundary (blocks are 144 bytes), and on Zen 4 the split
    // 512-bit loads read the weights from DRAM 8-12% slower (1 thread,
    // alternating runs: issue_16384x4096 1.65 -> 1.52 ms, big 3.83 -> 3.28;
    // four 128-bit loads were 10-15% slower than either).
    const __m512i bytes = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 64 * r))),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 64 * r + 32)), 1);
    const __m512i nib[2] = {_mm512_and_si512(bytes, low4), _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low4)};
    for (int t = 0; t < 2; ++t) {
      const int k = 2 * r + t;
      const __m512i sc = _mm512_shuffle_epi8(smz, shuf.idx[k]);
      hi_acc = dot_accumulate(hi_acc, _mm512_maddubs_epi16(nib[t], _mm512_loadu_si512(xs + 64 * k)), sc);
      lo_acc =
          dot_accumulate(lo_acc, _mm512_maddubs_epi16(nib[t], _mm512_loadu_si512(xs + kBlockWeights + 64 * k)), sc);
    }
  }
  const __m512i s1 = _mm512_add_epi32(_mm512_slli_epi32(hi_acc, 7), lo_acc);
  const __m256i s1_8 = _mm256_add_epi32(_mm512_castsi512_si256(s1), _mm512_extracti64x4_epi64(s1, 1));  // |.| < 2^28
  acc.s1 = _mm512_fmadd_pd(_mm512_cvtepi32_pd(s1_8), _mm512_set1_pd(static_cast<double>(d) * s_b), acc.s1);
  const __m512d mins = _mm512_cvtepi64_pd(_mm512_cvtepu8_epi64(_mm_srli_si128(sm, 8)));
  acc.min = _mm512_fmadd_pd(_mm512_mul_pd(mins, _mm512_loadu_pd(scaled_sub_sum)),
                            _mm512_set1_pd(static_cast<double>(dmin)), acc.min);
}

// The scales of four consecutive blocks decoded at once, one block per 128-bit
// lane: in = [u0, u1, u2, *] (the 12 scale bytes as words) gives
//   [u0 & 0x3F.., (u2 & 0x0F..) | ((u0 >> 6) & 0x03..) << 4, u1 & 0x3F.., ((u2 >> 4) & 0x0F..) | ((u1 >> 6) & 0x03..)
//   << 4]
// = [sc_0..3, sc_4..7, m_0..3, m_4..7], the same bytes as decode_scales_mins_words.
inline __m512i decode_four(const Block* blk) {
  __m512i in = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[0].scales)));
  in = _mm512_inserti32x4(in, _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[1].scales)), 1);
  in = _mm512_inserti32x4(in, _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[2].scales)), 2);
  in = _mm512_inserti32x4(in, _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[3].scales)), 3);
  const __m512i a = _mm512_shuffle_epi32(in, static_cast<_MM_PERM_ENUM>(0x98));  // [u0, u2, u1, u2]
  const __m512i b = _mm512_shuffle_epi32(in, static_cast<_MM_PERM_ENUM>(0x50));  // [u0, u0, u1, u1]
  const __m512i low = _mm512_and_si512(_mm512_srlv_epi32(a, _mm512_set4_epi32(4, 0, 0, 0)),
                                       _mm512_set4_epi32(0x0F0F0F0F, 0x3F3F3F3F, 0x0F0F0F0F, 0x3F3F3F3F));
  const __m512i high = _mm512_and_si512(_mm512_srli_epi32(b, 2), _mm512_set4_epi32(0x30303030, 0, 0x30303030, 0));
  return _mm512_or_si512(low, high);
}

// d and dmin of four consecutive blocks: [d0, dmin0, d1, dmin1, d2, dmin2, d3, dmin3].
inline __m256 scales_four(const Block* blk) {
  std::uint32_t bits[4];
  for (int k = 0; k < 4; ++k) std::memcpy(&bits[k], &blk[k], sizeof bits[k]);
  const __m128i h = _mm_set_epi32(static_cast<int>(bits[3]), static_cast<int>(bits[2]), static_cast<int>(bits[1]),
                                  static_cast<int>(bits[0]));
  return _mm512_castps512_ps256(_mm512_cvtph_ps(_mm256_castsi128_si256(h)));
}

}  // namespace

void POPPER_Q4K_ROWS_FN(const GemvRows& a, std::size_t r0, std::size_t r1) {
  static const ScaleShuffles shuf;
  const std::size_t nb = static_cast<std::size_t>(a.nb);
  for (std::size_t r = r0; r < r1; ++r) {
    const Block* row = a.w + r * nb;
    RowAcc acc;
    std::size_t b = 0;
    if (a.mut == Mutation::None)
      for (; b + 4 <= nb; b += 4) {
        const __m512i sm4 = decode_four(row + b);
        alignas(32) float dm[8];
        _mm256_store_ps(dm, scales_four(row + b));
        add_block(row[b], _mm512_castsi512_si128(sm4), dm[0], dm[1], a.split + 2 * b * kBlockWeights,
                  a.scaled_sub_sum + b * kSubBlocks, a.scale[b], shuf, acc);
        add_block(row[b + 1], _mm512_extracti32x4_epi32(sm4, 1), dm[2], dm[3], a.split + 2 * (b + 1) * kBlockWeights,
                  a.scaled_sub_sum + (b + 1) * kSubBlocks, a.scale[b + 1], shuf, acc);
        add_block(row[b + 2], _mm512_extracti32x4_epi32(sm4, 2), dm[4], dm[5], a.split + 2 * (b + 2) * kBlockWeights,
                  a.scaled_sub_sum + (b + 2) * kSubBlocks, a.scale[b + 2], shuf, acc);
        add_block(row[b + 3], _mm512_extracti32x4_epi32(sm4, 3), dm[6], dm[7], a.split + 2 * (b + 3) * kBlockWeights,
                  a.scaled_sub_sum + (b + 3) * kSubBlocks, a.scale[b + 3], shuf, acc);
      }
    for (; b < nb; ++b) {  // the tail, and every block of a mutation test
      float d, dmin;
      block_scales(row[b], d, dmin);
      add_block(row[b], scales_and_mins(row[b], a.mut), d, dmin, a.split + 2 * b * kBlockWeights,
                a.scaled_sub_sum + b * kSubBlocks, a.scale[b], shuf, acc);
    }
    a.y[r] = acc.finish();
  }
}

}  // namespace popper::q4k::cpu::detail
