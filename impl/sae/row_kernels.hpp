// The inner loops of every SAE row operation, chosen once per ISA:
//   axpy: y[j] += a * x[j]      (gather, scatter, L^T)
//   dot:  sum_j a[j] * b[j]     (L, one row or four rows at a time)
// AVX-512 (row_kernels_avx512.cpp), AVX2+FMA (row_kernels_avx2.cpp), portable
// scalar. Each element of an axpy is one fma(a, x, y) (one a*x + y on the
// scalar path) wherever a range starts, so tiled and untiled scatters agree
// bit for bit within one ISA; dot and rows_dot sum in a fixed per-ISA order.
#pragma once
#include <cstddef>

#include "impl/common/cpu_features.hpp"

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
  const char* name;  // "scalar" | "avx2" | "avx512"
  popper::cpu::Isa isa;
};

// The kernels for an ISA (Auto: the widest the CPU runs, capped by
// POPPER_ISA_MAX); an ISA the CPU lacks throws popper::Unsupported.
const RowKernels& row_kernels_for(popper::cpu::Isa isa);
const RowKernels& row_kernels();  // row_kernels_for(Auto)

void axpy_scalar(double a, const double* x, double* y, std::size_t n);
double dot_scalar(const double* a, const double* b, std::size_t n);
void axpy_avx2(double a, const double* x, double* y, std::size_t n);  // call only if the CPU has AVX2+FMA
double dot_avx2(const double* a, const double* b, std::size_t n);
void axpy4_scalar(const double* a, const double* const* x, double* y, std::size_t n);
void axpy4_avx2(const double* a, const double* const* x, double* y, std::size_t n);
void rows_dot_scalar(const double* l, std::size_t q, std::size_t n, const double* u, double* w);
void rows_dot_avx2(const double* l, std::size_t q, std::size_t n, const double* u, double* w);
// AVX-512 F (call only if the CPU has it).
void axpy_avx512(double a, const double* x, double* y, std::size_t n);
double dot_avx512(const double* a, const double* b, std::size_t n);
void axpy4_avx512(const double* a, const double* const* x, double* y, std::size_t n);
void rows_dot_avx512(const double* l, std::size_t q, std::size_t n, const double* u, double* w);

// Mutation points, one per path, each asked only when its path runs:
//   "sae-scalar-dot-drops-tail"  dot_scalar drops the n % 4 remainder
//   "sae-avx2-rows-dot-lane"     rows_dot_avx2's reduction drops its last lane
//   "sae-avx512-rows-dot-lane"   rows_dot_avx512's reduction drops its last lane
bool mutant_scalar_dot_drops_tail();
bool mutant_avx2_rows_dot_lane();
bool mutant_avx512_rows_dot_lane();

}  // namespace popper::sae
