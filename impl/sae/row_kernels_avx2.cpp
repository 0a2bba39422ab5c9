// AVX2+FMA row kernels (compiled with -mavx2 -mfma; reached only through
// row_kernels() after a CPU check). Every axpy element is one fma(a, x, y),
// in the vector body and in the tail alike.
#include <immintrin.h>

#include <cmath>

#include "impl/sae/row_kernels.hpp"

namespace popper::sae {

void axpy_avx2(double a, const double* x, double* y, std::size_t n) {
  const __m256d va = _mm256_set1_pd(a);
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    _mm256_storeu_pd(y + j, _mm256_fmadd_pd(va, _mm256_loadu_pd(x + j), _mm256_loadu_pd(y + j)));
    _mm256_storeu_pd(y + j + 4, _mm256_fmadd_pd(va, _mm256_loadu_pd(x + j + 4), _mm256_loadu_pd(y + j + 4)));
  }
  for (; j + 4 <= n; j += 4)
    _mm256_storeu_pd(y + j, _mm256_fmadd_pd(va, _mm256_loadu_pd(x + j), _mm256_loadu_pd(y + j)));
  for (; j < n; ++j) y[j] = std::fma(a, x[j], y[j]);
}

double dot_avx2(const double* a, const double* b, std::size_t n) {
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd(), s2 = _mm256_setzero_pd(), s3 = _mm256_setzero_pd();
  std::size_t j = 0;
  for (; j + 16 <= n; j += 16) {
    s0 = _mm256_fmadd_pd(_mm256_loadu_pd(a + j), _mm256_loadu_pd(b + j), s0);
    s1 = _mm256_fmadd_pd(_mm256_loadu_pd(a + j + 4), _mm256_loadu_pd(b + j + 4), s1);
    s2 = _mm256_fmadd_pd(_mm256_loadu_pd(a + j + 8), _mm256_loadu_pd(b + j + 8), s2);
    s3 = _mm256_fmadd_pd(_mm256_loadu_pd(a + j + 12), _mm256_loadu_pd(b + j + 12), s3);
  }
  for (; j + 4 <= n; j += 4) s0 = _mm256_fmadd_pd(_mm256_loadu_pd(a + j), _mm256_loadu_pd(b + j), s0);
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)));
  double s = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; j < n; ++j) s = std::fma(a[j], b[j], s);
  return s;
}

void axpy4_avx2(const double* a, const double* const* x, double* y, std::size_t n) {
  const __m256d a0 = _mm256_set1_pd(a[0]), a1 = _mm256_set1_pd(a[1]), a2 = _mm256_set1_pd(a[2]),
                a3 = _mm256_set1_pd(a[3]);
  const double *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    __m256d v = _mm256_loadu_pd(y + j);
    v = _mm256_fmadd_pd(a0, _mm256_loadu_pd(x0 + j), v);
    v = _mm256_fmadd_pd(a1, _mm256_loadu_pd(x1 + j), v);
    v = _mm256_fmadd_pd(a2, _mm256_loadu_pd(x2 + j), v);
    v = _mm256_fmadd_pd(a3, _mm256_loadu_pd(x3 + j), v);
    _mm256_storeu_pd(y + j, v);
  }
  for (; j < n; ++j)
    y[j] = std::fma(a[3], x3[j], std::fma(a[2], x2[j], std::fma(a[1], x1[j], std::fma(a[0], x0[j], y[j]))));
}

namespace {
double lane_sum(__m256d v, bool drop_last = false) {
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, v);
  if (drop_last) lanes[3] = 0.0;  // the mutant
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}
}  // namespace

void rows_dot_avx2(const double* l, std::size_t q, std::size_t n, const double* u, double* w) {
  const bool drop = mutant_avx2_rows_dot_lane();
  std::size_t c = 0;
  for (; c + 4 <= q; c += 4) {
    const double *l0 = l + c * n, *l1 = l0 + n, *l2 = l1 + n, *l3 = l2 + n;
    __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd(), a2 = _mm256_setzero_pd(), a3 = _mm256_setzero_pd();
    std::size_t j = 0;
    for (; j + 4 <= n; j += 4) {
      const __m256d uj = _mm256_loadu_pd(u + j);
      a0 = _mm256_fmadd_pd(_mm256_loadu_pd(l0 + j), uj, a0);
      a1 = _mm256_fmadd_pd(_mm256_loadu_pd(l1 + j), uj, a1);
      a2 = _mm256_fmadd_pd(_mm256_loadu_pd(l2 + j), uj, a2);
      a3 = _mm256_fmadd_pd(_mm256_loadu_pd(l3 + j), uj, a3);
    }
    double s0 = lane_sum(a0, drop), s1 = lane_sum(a1, drop), s2 = lane_sum(a2, drop), s3 = lane_sum(a3, drop);
    for (; j < n; ++j) {
      s0 = std::fma(l0[j], u[j], s0);
      s1 = std::fma(l1[j], u[j], s1);
      s2 = std::fma(l2[j], u[j], s2);
      s3 = std::fma(l3[j], u[j], s3);
    }
    w[c] = s0, w[c + 1] = s1, w[c + 2] = s2, w[c + 3] = s3;
  }
  for (; c < q; ++c) w[c] = dot_avx2(l + c * n, u, n);
}

}  // namespace popper::sae
