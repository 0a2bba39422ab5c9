// Hand Q4_K GEMV and dequantization with AVX2 (formulas in cpu_q4k.hpp).
// Codes widened to 16 bits, times their sub-block's 6-bit scale, vpmaddwd
// against the 14-bit activations into 8 exact int32 lanes per block, which
// are accumulated in FP64 with d*s_b (the mins likewise): one reduction per row.
#include <immintrin.h>

#include "impl/q4k/cpu_q4k_kernels.hpp"

namespace popper::q4k::cpu::detail {
namespace {

// vpshufb patterns spreading byte j of each 16-byte lane into every 16-bit word.
struct ScaleShuffles {
  __m256i idx[kSubBlocks];
  ScaleShuffles() {
    for (int j = 0; j < kSubBlocks; ++j) idx[j] = _mm256_set1_epi16(static_cast<short>(0x8000 | j));
  }
};

// FP64 lanes of one row: d*s_b*S1 (8 int32 lanes as 2 x 4 doubles) and the mins (2 x 4).
struct RowAcc {
  __m256d s1a = _mm256_setzero_pd(), s1b = _mm256_setzero_pd(), ma = _mm256_setzero_pd(), mb = _mm256_setzero_pd();
  float finish() const {
    const __m256d v = _mm256_sub_pd(_mm256_add_pd(s1a, s1b), _mm256_add_pd(ma, mb));
    const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return static_cast<float>(_mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h))));
  }
};

void add_block(const Block& blk, const std::int16_t* xq, const double* scaled_sub_sum, double s_b, Mutation mut,
               const ScaleShuffles& shuf, RowAcc& acc) {
  alignas(16) std::uint8_t sm[16];
  decode_scales_mins_words(blk, sm, mut);
  const __m128i sm128 = _mm_load_si128(reinterpret_cast<const __m128i*>(sm));
  const __m256i smy = _mm256_broadcastsi128_si256(sm128);
  const __m256i low4 = _mm256_set1_epi16(15);
  __m256i part[4];
  for (int c = 0; c < 4; ++c) {
    const __m256i sc_lo = _mm256_shuffle_epi8(smy, shuf.idx[2 * c]),
                  sc_hi = _mm256_shuffle_epi8(smy, shuf.idx[2 * c + 1]);
    part[c] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i codes =
          _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.qs + 32 * c + 16 * h)));
      const __m256i lo = _mm256_mullo_epi16(_mm256_and_si256(codes, low4), sc_lo);
      const __m256i hi = _mm256_mullo_epi16(_mm256_srli_epi16(codes, 4), sc_hi);
      const __m256i xlo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 64 * c + 16 * h));
      const __m256i xhi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 64 * c + 32 + 16 * h));
      part[c] = _mm256_add_epi32(part[c], _mm256_add_epi32(_mm256_madd_epi16(lo, xlo), _mm256_madd_epi16(hi, xhi)));
    }
  }
  const __m256i s1 = _mm256_add_epi32(_mm256_add_epi32(part[0], part[1]), _mm256_add_epi32(part[2], part[3]));
  const __m256d ds = _mm256_set1_pd(static_cast<double>(fp16_to_float(blk.d)) * s_b);
  acc.s1a = _mm256_fmadd_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(s1)), ds, acc.s1a);
  acc.s1b = _mm256_fmadd_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(s1, 1)), ds, acc.s1b);
  const __m256d dmin = _mm256_set1_pd(static_cast<double>(fp16_to_float(blk.dmin)));
  const __m128i m32a = _mm_cvtepu8_epi32(_mm_srli_si128(sm128, 8)), m32b = _mm_cvtepu8_epi32(_mm_srli_si128(sm128, 12));
  acc.ma = _mm256_fmadd_pd(_mm256_mul_pd(_mm256_cvtepi32_pd(m32a), _mm256_loadu_pd(scaled_sub_sum)), dmin, acc.ma);
  acc.mb = _mm256_fmadd_pd(_mm256_mul_pd(_mm256_cvtepi32_pd(m32b), _mm256_loadu_pd(scaled_sub_sum + 4)), dmin, acc.mb);
}

}  // namespace

void gemv_rows_avx2(const GemvRows& a, std::size_t r0, std::size_t r1) {
  static const ScaleShuffles shuf;
  const std::size_t nb = static_cast<std::size_t>(a.nb);
  for (std::size_t r = r0; r < r1; ++r) {
    const Block* row = a.w + r * nb;
    RowAcc acc;
    for (std::size_t b = 0; b < nb; ++b)
      add_block(row[b], a.xq + b * kBlockWeights, a.scaled_sub_sum + b * kSubBlocks, a.scale[b], a.mut, shuf, acc);
    a.y[r] = acc.finish();
  }
}

// Per block: amax over |x| (a non-finite lane stops it), then per sub-block
// four times 8 values: FP64 x * inv (the scalar product), clamped to +-8191,
// converted in the current rounding mode (what nearbyint does; clamping first
// is the same since the bounds are integers), packed to int16 and split.
bool quantize_blocks_avx2(const float* x, std::size_t nb, double top, const ActivationsOut& out, bool check_finite) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256i max_finite = _mm256_set1_epi32(0x7F7FFFFF);
  const __m256d lo_bound = _mm256_set1_pd(-8191.0), hi_bound = _mm256_set1_pd(8191.0);
  for (std::size_t b = 0; b < nb; ++b) {
    const float* xb = x + b * kBlockWeights;
    __m256 vmax = _mm256_setzero_ps();
    __m256i bad = _mm256_setzero_si256();
    for (int i = 0; i < kBlockWeights; i += 8) {
      const __m256 a = _mm256_and_ps(_mm256_loadu_ps(xb + i), abs_mask);
      vmax = _mm256_max_ps(vmax, a);
      bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(_mm256_castps_si256(a), max_finite));
    }
    if (check_finite && !_mm256_testz_si256(bad, bad)) return false;
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    const double amax = static_cast<double>(_mm_cvtss_f32(m));
    const double inv = amax > 0 ? top / amax : 0.0;
    out.scale[b] = amax / top;
    const __m256d vinv = _mm256_set1_pd(inv);
    for (int j = 0; j < kSubBlocks; ++j) {
      const float* xs = xb + j * kSubBlockWeights;
      __m256i q32[4];
      for (int t = 0; t < 4; ++t) {
        const __m256 f = _mm256_loadu_ps(xs + 8 * t);
        auto convert = [&](__m128 h) {
          const __m256d v = _mm256_mul_pd(_mm256_cvtps_pd(h), vinv);
          return _mm256_cvtpd_epi32(_mm256_min_pd(_mm256_max_pd(v, lo_bound), hi_bound));
        };
        q32[t] = _mm256_set_m128i(convert(_mm256_extractf128_ps(f, 1)), convert(_mm256_castps256_ps128(f)));
      }
      const __m256i sum4 = _mm256_add_epi32(_mm256_add_epi32(q32[0], q32[1]), _mm256_add_epi32(q32[2], q32[3]));
      __m128i s = _mm_add_epi32(_mm256_castsi256_si128(sum4), _mm256_extracti128_si256(sum4, 1));
      s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
      s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
      const std::int32_t sum = _mm_cvtsi128_si32(s);
      out.sub_sum[b * kSubBlocks + static_cast<std::size_t>(j)] = sum;
      out.scaled_sub_sum[b * kSubBlocks + static_cast<std::size_t>(j)] = out.scale[b] * sum;
      // packs work within 128-bit lanes: 0xD8 puts the 64-bit quarters back in order.
      const __m256i q16a = _mm256_permute4x64_epi64(_mm256_packs_epi32(q32[0], q32[1]), 0xD8);
      const __m256i q16b = _mm256_permute4x64_epi64(_mm256_packs_epi32(q32[2], q32[3]), 0xD8);
      const std::size_t at = b * kBlockWeights + static_cast<std::size_t>(j * kSubBlockWeights);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.q + at), q16a);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.q + at + 16), q16b);
      const __m256i low7 = _mm256_set1_epi16(127);
      const __m256i hi = _mm256_packs_epi16(_mm256_srai_epi16(q16a, 7), _mm256_srai_epi16(q16b, 7));
      const __m256i lo = _mm256_packs_epi16(_mm256_and_si256(q16a, low7), _mm256_and_si256(q16b, low7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.hi + at), _mm256_permute4x64_epi64(hi, 0xD8));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.lo + at), _mm256_permute4x64_epi64(lo, 0xD8));
    }
  }
  return true;
}

// Separate multiply and subtract (no FMA): bit-identical to the reference.
void dequantize_avx2(const Block* blocks, std::size_t count, float* out, Mutation mut) {
  const __m256i low4 = _mm256_set1_epi32(15);
  for (std::size_t b = 0; b < count; ++b) {
    const Block& blk = blocks[b];
    std::uint8_t sc[kSubBlocks], m[kSubBlocks];
    decode_scales_mins(blk.scales, sc, m, mut);
    const float d = fp16_to_float(blk.d), dmin = fp16_to_float(blk.dmin);
    float* o = out + b * kBlockWeights;
    for (int c = 0; c < 4; ++c) {
      const __m256 scale_lo = _mm256_set1_ps(d * static_cast<float>(sc[2 * c]));
      const __m256 scale_hi = _mm256_set1_ps(d * static_cast<float>(sc[2 * c + 1]));
      const __m256 off_lo = _mm256_set1_ps(dmin * static_cast<float>(m[2 * c]));
      const __m256 off_hi = _mm256_set1_ps(dmin * static_cast<float>(m[2 * c + 1]));
      for (int h = 0; h < 4; ++h) {
        const __m256i codes =
            _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.qs + 32 * c + 8 * h)));
        const __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(codes, low4));
        const __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(codes, 4));
        _mm256_storeu_ps(o + 64 * c + 8 * h, _mm256_sub_ps(_mm256_mul_ps(scale_lo, lo), off_lo));
        _mm256_storeu_ps(o + 64 * c + 32 + 8 * h, _mm256_sub_ps(_mm256_mul_ps(scale_hi, hi), off_hi));
      }
    }
  }
}

}  // namespace popper::q4k::cpu::detail
