// The two inner loops of every SAE row operation, chosen once at run time:
//   axpy: y[j] += a * x[j]      (gather, scatter, L^T)
//   dot:  sum_j a[j] * b[j]     (L, one row or four rows at a time)
// AVX2+FMA when the CPU has it (row_kernels_avx2.cpp), portable scalar
// otherwise. Each element of an axpy is computed the same way wherever a
// range starts, so tiled and untiled scatters agree bit for bit.
#pragma once
#include <cstddef>

namespace popper::sae {

struct RowKernels {
  void (*axpy)(double a, const double* x, double* y, std::size_t n);
  double (*dot)(const double* a, const double* b, std::size_t n);
  // w[c] = dot(l + c n, u, n) for c < q, with several rows in flight (more
  // concurrent memory streams over the DRAM-resident L_i).
  void (*rows_dot)(const double* l, std::size_t q, std::size_t n, const double* u, double* w);
  // y[j] += a[0] x[0][j]; ... ; y[j] += a[3] x[3][j], in that order per element
  // (the same arithmetic as four axpy calls, one pass over y).
  void (*axpy4)(const double* a, const double* const* x, double* y, std::size_t n);
  const char* name;
};

const RowKernels& row_kernels();

void axpy_scalar(double a, const double* x, double* y, std::size_t n);
double dot_scalar(const double* a, const double* b, std::size_t n);
void axpy_avx2(double a, const double* x, double* y, std::size_t n);  // call only if the CPU has AVX2+FMA
double dot_avx2(const double* a, const double* b, std::size_t n);
void axpy4_scalar(const double* a, const double* const* x, double* y, std::size_t n);
void axpy4_avx2(const double* a, const double* const* x, double* y, std::size_t n);
void rows_dot_scalar(const double* l, std::size_t q, std::size_t n, const double* u, double* w);
void rows_dot_avx2(const double* l, std::size_t q, std::size_t n, const double* u, double* w);

}  // namespace popper::sae
