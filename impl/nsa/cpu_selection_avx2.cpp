// AVX2 + FMA path of the hand kernel (see cpu_selection_kernels.hpp): tiles
// of 8 selected keys (lanes = keys), each chunk of 16 BF16 per key transposed
// 8x8 as dword pairs, widened to FP32 and FMA'd with every head's query;
// P.V with FP32 accumulators per Dv chunk. Called only after
// common/cpu_features.hpp reports AVX2 and FMA.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "impl/nsa/cpu_selection_kernels.hpp"

namespace popper::nsa::detail {

namespace {

// exp(x) to ~1 ulp (Cephes), 2^n through the exponent field; results below
// the smallest normal (x < -87.3) are flushed to 0. NaN stays NaN.
inline __m256 exp_ps(__m256 x0) {
  const __m256 x = _mm256_min_ps(_mm256_set1_ps(88.3f), _mm256_max_ps(_mm256_set1_ps(-87.3f), x0));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 out = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
  return _mm256_blendv_ps(out, _mm256_setzero_ps(), _mm256_cmp_ps(x0, _mm256_set1_ps(-87.3f), _CMP_LT_OQ));
}

inline __m256i lane_mask(std::int64_t n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<std::int64_t>(n, 8))), idx);
}

inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

inline float hsum(__m256 v) {
  __m128 m = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_add_ps(m, _mm_movehl_ps(m, m));
  m = _mm_add_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

inline __m256 load_tail(const float* x, std::int64_t n, float fill) {
  if (n >= 8) return _mm256_loadu_ps(x);
  alignas(32) float buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = i < n ? x[i] : fill;
  return _mm256_load_ps(buf);
}

inline void store_tail(float* x, std::int64_t n, __m256 v) {
  if (n >= 8) return _mm256_storeu_ps(x, v);
  _mm256_maskstore_ps(x, lane_mask(n), v);
}

// 16 BF16 of a key row from element c0 (zero past d; never reads past d).
inline __m256i load_chunk(const bf16* row, int c0, int d) {
  if (d - c0 >= 16) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + c0));
  alignas(32) bf16 buf[16] = {};
  std::memcpy(buf, row + c0, static_cast<std::size_t>(d - c0) * sizeof(bf16));
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(buf));
}

// r[i] = row i (8 dwords) -> r[c] = column c.
inline void transpose8(__m256i r[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
    u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
    u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
    u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    r[c] = _mm256_permute2x128_si256(u[c], u[c + 4], 0x20);
    r[c + 4] = _mm256_permute2x128_si256(u[c], u[c + 4], 0x31);
  }
}

template <int NH>
void scores(const RowTask& t, const KernelParams& kp, float* s, std::int64_t ld, float* qf, float* maxima) {
  const int d = kp.dim, chunks = (d + 15) / 16, qld = chunks * 16;
  for (int h = 0; h < NH; ++h)
    for (int e = 0; e < qld; ++e) qf[h * qld + e] = e < d ? float_from_bf16(t.q[h][e]) : 0.0f;
  const __m256 scale = _mm256_set1_ps(kp.scale);
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
  __m256 mx[NH];
  for (int h = 0; h < NH; ++h) mx[h] = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  KeyCursor keys(t.spans, t.n_spans, t.k, t.k_stride, kp.overread_span_end);
  const bf16* rows[8];
  std::int64_t idx = 0;
  for (int n = keys.fill(rows, 8); n > 0; n = keys.fill(rows, 8)) {
    __m256 acc[NH];
    for (int h = 0; h < NH; ++h) acc[h] = _mm256_setzero_ps();
    for (int c = 0; c < chunks; ++c) {
      __m256i r[8];
      for (int i = 0; i < 8; ++i) r[i] = i < n ? load_chunk(rows[i], 16 * c, d) : _mm256_setzero_si256();
      transpose8(r);
      const int np = std::min(8, (d - 16 * c + 1) / 2);
      for (int p = 0; p < np; ++p) {
        const __m256 even = _mm256_castsi256_ps(_mm256_slli_epi32(r[p], 16));
        const __m256 odd = _mm256_castsi256_ps(_mm256_and_si256(r[p], high));
        for (int h = 0; h < NH; ++h) {
          acc[h] = _mm256_fmadd_ps(even, _mm256_set1_ps(qf[h * qld + 16 * c + 2 * p]), acc[h]);
          acc[h] = _mm256_fmadd_ps(odd, _mm256_set1_ps(qf[h * qld + 16 * c + 2 * p + 1]), acc[h]);
        }
      }
    }
    for (int h = 0; h < NH; ++h) {
      const __m256 sc = _mm256_mul_ps(acc[h], scale);
      store_tail(s + h * ld + idx, n, sc);
      mx[h] =
          _mm256_max_ps(mx[h], n >= 8 ? sc : load_tail(s + h * ld + idx, n, -std::numeric_limits<float>::infinity()));
    }
    idx += n;
  }
  for (int h = 0; h < NH; ++h) maxima[h] = hmax(mx[h]);
}

float max_of(const float* x, std::int64_t len) {
  __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (std::int64_t i = 0; i < len; i += 8)
    m = _mm256_max_ps(m, load_tail(x + i, len - i, -std::numeric_limits<float>::infinity()));
  return hmax(m);
}

float log_sum_exp(const float* x, std::int64_t len, float m) {
  __m256 sum = _mm256_setzero_ps();
  const __m256 mv = _mm256_set1_ps(m);
  for (std::int64_t i = 0; i < len; i += 8)  // padding lanes hold -inf: exp(-inf) = 0
    sum = _mm256_add_ps(sum,
                        exp_ps(_mm256_sub_ps(load_tail(x + i, len - i, -std::numeric_limits<float>::infinity()), mv)));
  return m + std::log(hsum(sum));
}

void probabilities(float* x, std::int64_t len, float lse) {
  const __m256 lv = _mm256_set1_ps(lse);
  for (std::int64_t i = 0; i < len; i += 8)
    store_tail(x + i, len - i, exp_ps(_mm256_sub_ps(load_tail(x + i, len - i, 0.0f), lv)));
}

template <int NH, int NV>
void weighted_values(const RowTask& t, const KernelParams& kp, const float* s, std::int64_t ld) {
  const int dv = kp.dim_v;
  for (int c0 = 0; c0 < dv; c0 += 8 * NV) {
    __m256 acc[NH][NV];
    for (int h = 0; h < NH; ++h)
      for (int x = 0; x < NV; ++x) acc[h][x] = _mm256_setzero_ps();
    KeyCursor values(t.spans, t.n_spans, t.v, t.v_stride, false);
    const bf16* row = nullptr;
    for (std::int64_t i = 0; values.fill(&row, 1) == 1; ++i) {
      __m256 vv[NV];
      for (int x = 0; x < NV; ++x) {
        const int e0 = c0 + 8 * x;
        if (dv - e0 >= 8) {
          vv[x] = _mm256_castsi256_ps(_mm256_slli_epi32(
              _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + e0))), 16));
        } else {
          alignas(32) float buf[8] = {};
          for (int e = 0; e < dv - e0; ++e) buf[e] = float_from_bf16(row[e0 + e]);
          vv[x] = _mm256_load_ps(buf);
        }
      }
      for (int h = 0; h < NH; ++h) {
        const __m256 pw = _mm256_set1_ps(s[h * ld + i]);
        for (int x = 0; x < NV; ++x) acc[h][x] = _mm256_fmadd_ps(pw, vv[x], acc[h][x]);
      }
    }
    for (int h = 0; h < NH; ++h)
      for (int x = 0; x < NV; ++x) {
        const int e0 = c0 + 8 * x;
        if (e0 < dv) store_tail(t.o[h] + e0, dv - e0, acc[h][x]);
      }
  }
}

template <int NH>
void run_task(const RowTask& t, const KernelParams& kp, float* scratch) {
  const std::int64_t ld = score_stride(t.length);
  float maxima[NH];
  scores<NH>(t, kp, scratch, ld, scratch + NH * ld, maxima);
  for (int h = 0; h < NH; ++h) {
    float* s = scratch + h * ld;
    const float lse = log_sum_exp(s, t.length, maxima[h]);
    if (t.lse[h]) *t.lse[h] = lse;
    if (!kp.pass2_tile_lse) {
      probabilities(s, t.length, lse);
    } else {
      for (std::int64_t t0 = 0; t0 < t.length; t0 += kPass2Tile) {
        const std::int64_t n = std::min(kPass2Tile, t.length - t0);
        probabilities(s + t0, n, log_sum_exp(s + t0, n, max_of(s + t0, n)));
      }
    }
  }
  constexpr int NV = NH <= 2 ? 4 : NH <= 4 ? 2 : 1;  // NH * NV <= 8 accumulators
  weighted_values<NH, NV>(t, kp, scratch, ld);
}

}  // namespace

void row_avx2(const RowTask& t, const KernelParams& kp, float* scratch) {
  switch (t.heads) {
    case 1: run_task<1>(t, kp, scratch); break;
    case 2: run_task<2>(t, kp, scratch); break;
    case 3: run_task<3>(t, kp, scratch); break;
    case 4: run_task<4>(t, kp, scratch); break;
    case 5: run_task<5>(t, kp, scratch); break;
    case 6: run_task<6>(t, kp, scratch); break;
    case 7: run_task<7>(t, kp, scratch); break;
    default: run_task<8>(t, kp, scratch); break;
  }
}

void softmax_rows_avx2(float* s, int rows, std::int64_t len, std::int64_t ld, float* lse) {
  for (int r = 0; r < rows; ++r) {
    float* x = s + r * ld;
    lse[r] = log_sum_exp(x, len, max_of(x, len));
    probabilities(x, len, lse[r]);
  }
}

}  // namespace popper::nsa::detail
