// Portable row kernels and the one-time dispatch (see row_kernels.hpp).
#include "sae/row_kernels.hpp"

#include "common/cpu_features.hpp"

namespace popper::sae {

void axpy_scalar(double a, const double* x, double* y, std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) y[j] += a * x[j];
}

double dot_scalar(const double* a, const double* b, std::size_t n) {
  // Four partial sums in a fixed order: vectorizable and deterministic.
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    s0 += a[j] * b[j];
    s1 += a[j + 1] * b[j + 1];
    s2 += a[j + 2] * b[j + 2];
    s3 += a[j + 3] * b[j + 3];
  }
  for (; j < n; ++j) s0 += a[j] * b[j];
  return (s0 + s1) + (s2 + s3);
}

void axpy4_scalar(const double* a, const double* const* x, double* y, std::size_t n) {
  for (std::size_t k = 0; k < 4; ++k) axpy_scalar(a[k], x[k], y, n);
}

void rows_dot_scalar(const double* l, std::size_t q, std::size_t n, const double* u, double* w) {
  for (std::size_t c = 0; c < q; ++c) w[c] = dot_scalar(l + c * n, u, n);
}

const RowKernels& row_kernels() {
  static const RowKernels k = [] {
    if (popper::cpu::auto_isa() != popper::cpu::Isa::Scalar) return RowKernels{axpy_avx2, dot_avx2, rows_dot_avx2, axpy4_avx2, "avx2"};
    return RowKernels{axpy_scalar, dot_scalar, rows_dot_scalar, axpy4_scalar, "scalar"};
  }();
  return k;
}

}  // namespace popper::sae
