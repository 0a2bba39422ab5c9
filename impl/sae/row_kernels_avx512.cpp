// AVX-512 F row kernels (compiled with AVX-512 flags; reached only through
// row_kernels_for() after a CPU check). Every axpy element is one fma(a, x, y)
// in the vector body and in the masked tail alike, so a tiled scatter gives
// the untiled bits. dot / rows_dot: 8-wide partial sums, reduced in a fixed
// lane order, then the tail with scalar fma.
#include <immintrin.h>

#include <cmath>

#include "impl/sae/row_kernels.hpp"

namespace popper::sae {

namespace {
__mmask8 tail_mask(std::size_t n) { return static_cast<__mmask8>((1u << n) - 1u); }

// (((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))), lanes = 8 or 7 (the mutant).
double lane_sum(__m512d v, int lanes) {
  alignas(64) double x[8];
  _mm512_store_pd(x, v);
  if (lanes < 8) x[7] = 0.0;
  return ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]));
}
}  // namespace

void axpy_avx512(double a, const double* x, double* y, std::size_t n) {
  const __m512d va = _mm512_set1_pd(a);
  std::size_t j = 0;
  for (; j + 16 <= n; j += 16) {
    _mm512_storeu_pd(y + j, _mm512_fmadd_pd(va, _mm512_loadu_pd(x + j), _mm512_loadu_pd(y + j)));
    _mm512_storeu_pd(y + j + 8, _mm512_fmadd_pd(va, _mm512_loadu_pd(x + j + 8), _mm512_loadu_pd(y + j + 8)));
  }
  for (; j + 8 <= n; j += 8)
    _mm512_storeu_pd(y + j, _mm512_fmadd_pd(va, _mm512_loadu_pd(x + j), _mm512_loadu_pd(y + j)));
  if (j < n) {
    const __mmask8 m = tail_mask(n - j);
    _mm512_mask_storeu_pd(y + j, m,
                          _mm512_fmadd_pd(va, _mm512_maskz_loadu_pd(m, x + j), _mm512_maskz_loadu_pd(m, y + j)));
  }
}

double dot_avx512(const double* a, const double* b, std::size_t n) {
  __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd(), s2 = _mm512_setzero_pd(), s3 = _mm512_setzero_pd();
  std::size_t j = 0;
  for (; j + 32 <= n; j += 32) {
    s0 = _mm512_fmadd_pd(_mm512_loadu_pd(a + j), _mm512_loadu_pd(b + j), s0);
    s1 = _mm512_fmadd_pd(_mm512_loadu_pd(a + j + 8), _mm512_loadu_pd(b + j + 8), s1);
    s2 = _mm512_fmadd_pd(_mm512_loadu_pd(a + j + 16), _mm512_loadu_pd(b + j + 16), s2);
    s3 = _mm512_fmadd_pd(_mm512_loadu_pd(a + j + 24), _mm512_loadu_pd(b + j + 24), s3);
  }
  for (; j + 8 <= n; j += 8) s0 = _mm512_fmadd_pd(_mm512_loadu_pd(a + j), _mm512_loadu_pd(b + j), s0);
  double s = lane_sum(_mm512_add_pd(_mm512_add_pd(s0, s1), _mm512_add_pd(s2, s3)), 8);
  for (; j < n; ++j) s = std::fma(a[j], b[j], s);
  return s;
}

void axpy4_avx512(const double* a, const double* const* x, double* y, std::size_t n) {
  const __m512d a0 = _mm512_set1_pd(a[0]), a1 = _mm512_set1_pd(a[1]), a2 = _mm512_set1_pd(a[2]),
                a3 = _mm512_set1_pd(a[3]);
  const double *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m512d v = _mm512_loadu_pd(y + j);
    v = _mm512_fmadd_pd(a0, _mm512_loadu_pd(x0 + j), v);
    v = _mm512_fmadd_pd(a1, _mm512_loadu_pd(x1 + j), v);
    v = _mm512_fmadd_pd(a2, _mm512_loadu_pd(x2 + j), v);
    v = _mm512_fmadd_pd(a3, _mm512_loadu_pd(x3 + j), v);
    _mm512_storeu_pd(y + j, v);
  }
  if (j < n) {
    const __mmask8 m = tail_mask(n - j);
    __m512d v = _mm512_maskz_loadu_pd(m, y + j);
    v = _mm512_fmadd_pd(a0, _mm512_maskz_loadu_pd(m, x0 + j), v);
    v = _mm512_fmadd_pd(a1, _mm512_maskz_loadu_pd(m, x1 + j), v);
    v = _mm512_fmadd_pd(a2, _mm512_maskz_loadu_pd(m, x2 + j), v);
    v = _mm512_fmadd_pd(a3, _mm512_maskz_loadu_pd(m, x3 + j), v);
    _mm512_mask_storeu_pd(y + j, m, v);
  }
}

void rows_dot_avx512(const double* l, std::size_t q, std::size_t n, const double* u, double* w) {
  const int lanes = mutant_avx512_rows_dot_lane() ? 7 : 8;
  std::size_t c = 0;
  for (; c + 4 <= q; c += 4) {
    const double *l0 = l + c * n, *l1 = l0 + n, *l2 = l1 + n, *l3 = l2 + n;
    __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd(), a2 = _mm512_setzero_pd(), a3 = _mm512_setzero_pd();
    std::size_t j = 0;
    for (; j + 8 <= n; j += 8) {
      const __m512d uj = _mm512_loadu_pd(u + j);
      a0 = _mm512_fmadd_pd(_mm512_loadu_pd(l0 + j), uj, a0);
      a1 = _mm512_fmadd_pd(_mm512_loadu_pd(l1 + j), uj, a1);
      a2 = _mm512_fmadd_pd(_mm512_loadu_pd(l2 + j), uj, a2);
      a3 = _mm512_fmadd_pd(_mm512_loadu_pd(l3 + j), uj, a3);
    }
    double s0 = lane_sum(a0, lanes), s1 = lane_sum(a1, lanes), s2 = lane_sum(a2, lanes), s3 = lane_sum(a3, lanes);
    for (; j < n; ++j) {
      s0 = std::fma(l0[j], u[j], s0);
      s1 = std::fma(l1[j], u[j], s1);
      s2 = std::fma(l2[j], u[j], s2);
      s3 = std::fma(l3[j], u[j], s3);
    }
    w[c] = s0, w[c + 1] = s1, w[c + 2] = s2, w[c + 3] = s3;
  }
  for (; c < q; ++c) {
    const double* lc = l + c * n;
    __m512d acc = _mm512_setzero_pd();
    std::size_t j = 0;
    for (; j + 8 <= n; j += 8) acc = _mm512_fmadd_pd(_mm512_loadu_pd(lc + j), _mm512_loadu_pd(u + j), acc);
    double s = lane_sum(acc, lanes);
    for (; j < n; ++j) s = std::fma(lc[j], u[j], s);
    w[c] = s;
  }
}

}  // namespace popper::sae
