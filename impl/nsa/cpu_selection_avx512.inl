// AVX-512 body of the hand kernel, included by cpu_selection_avx512.cpp
// (kBf16Dot = false: BF16 widened to FP32, FMA) and cpu_selection_avx512bf16.cpp
// (kBf16Dot = true: VDPBF16PS on BF16 pairs; each pair product is exact in
// FP32, so only the FP32 sums round). See cpu_selection_kernels.hpp.
//
// Scores: tiles of 16 selected keys (lanes = keys). Each key row chunk of 32
// BF16 is one zmm of 16 dword pairs; a 16x16 dword transpose turns the tile
// into 16 vectors "pair p of every key", which every head of the task
// multiplies with its broadcast query pair p: the tile is loaded once for all
// heads. P.V: blocks of 64 keys whose V rows stay in L1 while each Dv chunk's
// h x NV zmm accumulators run over them.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "impl/nsa/cpu_selection_kernels.hpp"

namespace popper::nsa::detail::POPPER_NSA_AVX512_NS {

namespace {

// exp(x) to ~1 ulp: x = n ln2 + r, |r| <= ln2/2, Cephes' degree-6 polynomial,
// 2^n by VSCALEFPS (exact, underflows to 0). NaN stays NaN.
inline __m512 exp_ps(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(88.7f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 y = _mm512_set1_ps(1.9875691500e-4f);
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.3981999507e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(8.3334519073e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(4.1665795894e-2f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.6666665459e-1f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(5.0000001201e-1f));
  y = _mm512_fmadd_ps(y, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(y, n);
}

inline __mmask16 lanes(std::int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1u); }

// BF16 x16 -> FP32 x16 (exact: the BF16 bits are the high half).
inline __m512 widen(__m256i x) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(x), 16)); }

// r[i] = row i (16 dwords) -> r[c] = column c (dword c of every row).
inline void transpose16(__m512i r[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);      // column 4L+0 of rows i..i+3 in 128-bit lane L
    u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);  // column 4L+1
    u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  __m512i v[16];
  for (int c = 0; c < 4; ++c) {
    v[c] = _mm512_shuffle_i32x4(u[c], u[c + 4], 0x88);           // rows 0-7, columns c and c+8
    v[c + 4] = _mm512_shuffle_i32x4(u[c], u[c + 4], 0xDD);       // rows 0-7, columns c+4 and c+12
    v[c + 8] = _mm512_shuffle_i32x4(u[c + 8], u[c + 12], 0x88);  // rows 8-15
    v[c + 12] = _mm512_shuffle_i32x4(u[c + 8], u[c + 12], 0xDD);
  }
  for (int c = 0; c < 8; ++c) {
    r[c] = _mm512_shuffle_i32x4(v[c], v[c + 8], 0x88);      // column c (c < 4) or c + 0 for v[4..7] -> 4..7
    r[c + 8] = _mm512_shuffle_i32x4(v[c], v[c + 8], 0xDD);  // column c + 8
  }
}

// One pair-column p of a tile into the accumulators of NH heads.
template <int NH>
inline void accumulate_pair(__m512 acc[NH], __m512i col, const std::uint32_t* qpairs, const float* qf, int p, int ld) {
  if constexpr (kBf16Dot) {
#ifdef __AVX512BF16__
    (void)qf;
    for (int h = 0; h < NH; ++h)
      acc[h] =
          _mm512_dpbf16_ps(acc[h], (__m512bh)col, (__m512bh)_mm512_set1_epi32(static_cast<int>(qpairs[h * ld + p])));
#endif
  } else {
    (void)qpairs;
    const __m512 even = _mm512_castsi512_ps(_mm512_slli_epi32(col, 16));
    const __m512 odd = _mm512_castsi512_ps(_mm512_and_si512(col, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
    for (int h = 0; h < NH; ++h) {
      acc[h] = _mm512_fmadd_ps(even, _mm512_set1_ps(qf[h * 2 * ld + 2 * p]), acc[h]);
      acc[h] = _mm512_fmadd_ps(odd, _mm512_set1_ps(qf[h * 2 * ld + 2 * p + 1]), acc[h]);
    }
  }
}

// Pass 1: S[h][i] = scale * q_h . k_i for all selected keys; returns the row maxima.
template <int NH>
void scores(const RowTask& t, const KernelParams& kp, float* s, std::int64_t ld, float* qarea, float* maxima) {
  const int d = kp.dim, chunks = (d + 31) / 32;
  const int pairs_ld = chunks * 16;  // dwords per head
  auto* qpairs = reinterpret_cast<std::uint32_t*>(qarea);
  float* qf = qarea;  // FP32 queries: 2 * pairs_ld floats per head (same area, other layout)
  for (int h = 0; h < NH; ++h) {
    if constexpr (kBf16Dot) {
      std::fill(qpairs + h * pairs_ld, qpairs + (h + 1) * pairs_ld, 0u);
      std::memcpy(qpairs + h * pairs_ld, t.q[h], static_cast<std::size_t>(d) * sizeof(bf16));
    } else {
      for (int e = 0; e < 2 * pairs_ld; ++e) qf[h * 2 * pairs_ld + e] = e < d ? float_from_bf16(t.q[h][e]) : 0.0f;
    }
  }
  const __m512 scale = _mm512_set1_ps(kp.scale);
  __m512 mx[NH];
  for (int h = 0; h < NH; ++h) mx[h] = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  KeyCursor keys(t.spans, t.n_spans, t.k, t.k_stride, kp.overread_span_end);
  const bf16* rows[16];
  std::int64_t idx = 0;
  for (int n = keys.fill(rows, 16); n > 0; n = keys.fill(rows, 16)) {
    __m512 acc[NH];
    for (int h = 0; h < NH; ++h) acc[h] = _mm512_setzero_ps();
    for (int c = 0; c < chunks; ++c) {
      const int nd = std::min(32, d - 32 * c);
      const __mmask32 m = nd >= 32 ? __mmask32(0xFFFFFFFFu) : __mmask32((1u << nd) - 1u);
      __m512i r[16];
      for (int i = 0; i < 16; ++i)
        r[i] = i < n ? _mm512_maskz_loadu_epi16(m, rows[i] + 32 * c) : _mm512_setzero_si512();
      transpose16(r);
      const int np = (nd + 1) / 2;
      if (np == 16) {
        for (int p = 0; p < 16; ++p) accumulate_pair<NH>(acc, r[p], qpairs + 16 * c, qf + 32 * c, p, pairs_ld);
      } else {
        for (int p = 0; p < np; ++p) accumulate_pair<NH>(acc, r[p], qpairs + 16 * c, qf + 32 * c, p, pairs_ld);
      }
    }
    const __mmask16 mn = lanes(n);
    for (int h = 0; h < NH; ++h) {
      const __m512 sc = _mm512_mul_ps(acc[h], scale);
      _mm512_mask_storeu_ps(s + h * ld + idx, mn, sc);
      mx[h] = _mm512_mask_max_ps(mx[h], mn, mx[h], sc);
    }
    idx += n;
  }
  for (int h = 0; h < NH; ++h) maxima[h] = _mm512_reduce_max_ps(mx[h]);
}

// lse = m + log sum exp(x - m) over x[0..len).
float log_sum_exp(const float* x, std::int64_t len, float m) {
  __m512 sum = _mm512_setzero_ps();
  const __m512 mv = _mm512_set1_ps(m);
  for (std::int64_t i = 0; i < len; i += 16) {
    const __mmask16 k = lanes(len - i);
    sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(k, exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), mv))));
  }
  return m + std::log(_mm512_reduce_add_ps(sum));
}

// x <- exp(x - lse) in place.
void probabilities(float* x, std::int64_t len, float lse) {
  const __m512 lv = _mm512_set1_ps(lse);
  for (std::int64_t i = 0; i < len; i += 16) {
    const __mmask16 k = lanes(len - i);
    _mm512_mask_storeu_ps(x + i, k, exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), lv)));
  }
}

float max_of(const float* x, std::int64_t len) {
  __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (std::int64_t i = 0; i < len; i += 16)
    m = _mm512_mask_max_ps(m, lanes(len - i), m, _mm512_maskz_loadu_ps(lanes(len - i), x + i));
  return _mm512_reduce_max_ps(m);
}

// Pass 2: blocks of kValueBlock keys (their V rows stay in L1 while every Dv
// chunk uses them); per chunk NH x NV zmm accumulators, carried from block to
// block through O itself in FP32, so each output lane is one sequential FMA
// chain over the keys in selection order.
constexpr int kValueBlock = 64;

template <int NH, int NV>
void weighted_values(const RowTask& t, const KernelParams& kp, const float* s, std::int64_t ld) {
  const int dv = kp.dim_v;
  KeyCursor values(t.spans, t.n_spans, t.v, t.v_stride, false);
  const bf16* rows[kValueBlock];
  std::int64_t i0 = 0;
  for (int n = values.fill(rows, kValueBlock); n > 0; i0 += n, n = values.fill(rows, kValueBlock)) {
    for (int c0 = 0; c0 < dv; c0 += 16 * NV) {
      __m512 acc[NH][NV];
      __mmask16 vm[NV];
      for (int x = 0; x < NV; ++x) {
        vm[x] = lanes(std::max(0, dv - (c0 + 16 * x)));
        for (int h = 0; h < NH; ++h)
          acc[h][x] = i0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(vm[x], t.o[h] + c0 + 16 * x);
      }
      for (int i = 0; i < n; ++i) {
        __m512 vv[NV];
        for (int x = 0; x < NV; ++x) vv[x] = widen(_mm256_maskz_loadu_epi16(vm[x], rows[i] + c0 + 16 * x));
        for (int h = 0; h < NH; ++h) {
          const __m512 pw = _mm512_set1_ps(s[h * ld + i0 + i]);
          for (int x = 0; x < NV; ++x) acc[h][x] = _mm512_fmadd_ps(pw, vv[x], acc[h][x]);
        }
      }
      for (int h = 0; h < NH; ++h)
        for (int x = 0; x < NV; ++x)
          if (vm[x]) _mm512_mask_storeu_ps(t.o[h] + c0 + 16 * x, vm[x], acc[h][x]);
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
    const float lse = log_sum_exp(s, t.length, maxima[h]);  // pass 1
    if (t.lse[h]) *t.lse[h] = lse;
    if (!kp.pass2_tile_lse) {
      probabilities(s, t.length, lse);  // pass 2 reuses pass 1's lse for every tile
    } else {
      for (std::int64_t t0 = 0; t0 < t.length; t0 += kPass2Tile) {  // the mutant: a fresh m, lse per tile
        const std::int64_t n = std::min(kPass2Tile, t.length - t0);
        probabilities(s + t0, n, log_sum_exp(s + t0, n, max_of(s + t0, n)));
      }
    }
  }
  constexpr int NV = NH <= 2 ? 8 : NH <= 4 ? 4 : 2;  // NH * NV <= 16 accumulators
  weighted_values<NH, NV>(t, kp, scratch, ld);
}

}  // namespace

void row(const RowTask& t, const KernelParams& kp, float* scratch) {
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

void softmax(float* s, int rows, std::int64_t len, std::int64_t ld, float* lse) {
  for (int r = 0; r < rows; ++r) {
    float* x = s + r * ld;
    lse[r] = log_sum_exp(x, len, max_of(x, len));
    probabilities(x, len, lse[r]);
  }
}

}  // namespace popper::nsa::detail::POPPER_NSA_AVX512_NS
