// Portable row kernels and the dispatch per ISA (see row_kernels.hpp).
#include "impl/sae/row_kernels.hpp"

#include "popper/mutant.hpp"

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
  if (j < n && mutant_scalar_dot_drops_tail()) return (s0 + s1) + (s2 + s3);
  for (; j < n; ++j) s0 += a[j] * b[j];
  return (s0 + s1) + (s2 + s3);
}

void axpy4_scalar(const double* a, const double* const* x, double* y, std::size_t n) {
  for (std::size_t k = 0; k < 4; ++k) axpy_scalar(a[k], x[k], y, n);
}

void rows_dot_scalar(const double* l, std::size_t q, std::size_t n, const double* u, double* w) {
  for (std::size_t c = 0; c < q; ++c) w[c] = dot_scalar(l + c * n, u, n);
}

bool mutant_scalar_dot_drops_tail() {
  static const bool on = POPPER_MUTANT("sae-scalar-dot-drops-tail");
  return on;
}
bool mutant_avx2_rows_dot_lane() {
  static const bool on = POPPER_MUTANT("sae-avx2-rows-dot-lane");
  return on;
}
bool mutant_avx512_rows_dot_lane() {
  static const bool on = POPPER_MUTANT("sae-avx512-rows-dot-lane");
  return on;
}

const RowKernels& row_kernels_for(popper::cpu::Isa isa) {
  static const RowKernels scalar{axpy_scalar,  dot_scalar, rows_dot_scalar,
                                 axpy4_scalar, "scalar",   popper::cpu::Isa::Scalar};
  static const RowKernels avx2{axpy_avx2, dot_avx2, rows_dot_avx2, axpy4_avx2, "avx2", popper::cpu::Isa::Avx2};
  static const RowKernels avx512{axpy_avx512,  dot_avx512, rows_dot_avx512,
                                 axpy4_avx512, "avx512",   popper::cpu::Isa::Avx512};
  switch (popper::cpu::resolve(isa, "sae row kernels")) {
    case popper::cpu::Isa::Avx512: return avx512;
    case popper::cpu::Isa::Avx2: return avx2;
    default: return scalar;
  }
}

const RowKernels& row_kernels() { return row_kernels_for(popper::cpu::Isa::Auto); }

}  // namespace popper::sae
