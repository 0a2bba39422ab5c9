// Reference GEMM (the oracle every other tier is compared against):
//
//   C[i][j] = alpha * sum_p op(A)[i][p] * op(B)[p][j] + beta * C[i][j]
//
// Straightforward triple loop; the dot product is accumulated in a wider type
// (double for float, long double for double) so the oracle's own rounding
// error is far below the tolerance of the kernels it judges. beta == 0 writes
// C without reading it. Arguments are checked (check_gemm_args) first.
#pragma once
#include <span>

#include "impl/gemm/gemm.hpp"

namespace popper::gemm::reference {

template <class T>
void gemm(const GemmShape& s, T alpha, std::span<const T> a, std::span<const T> b, T beta, std::span<T> c);

extern template void gemm<float>(const GemmShape&, float, std::span<const float>, std::span<const float>, float,
                                 std::span<float>);
extern template void gemm<double>(const GemmShape&, double, std::span<const double>, std::span<const double>, double,
                                  std::span<double>);

}  // namespace popper::gemm::reference
