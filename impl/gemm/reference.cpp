// Reference GEMM: the obviously-correct triple loop, wide accumulation.
//   C[i][j] = alpha * sum_p op(A)[i][p] * op(B)[p][j] + beta * C[i][j]
// beta == 0: C[i][j] is assigned, never read (NaN/Inf in C do not propagate).
#include "impl/gemm/reference.hpp"

namespace popper::gemm::reference {
namespace {

template <class T>
struct Wide;
template <>
struct Wide<float> {
  using type = double;
};
template <>
struct Wide<double> {
  using type = long double;
};

// Element (r, c) of a stored matrix in the given layout.
inline std::size_t at(Layout layout, std::int64_t r, std::int64_t c, std::int64_t ld) {
  return static_cast<std::size_t>(layout == Layout::RowMajor ? r * ld + c : c * ld + r);
}

}  // namespace

template <class T>
void gemm(const GemmShape& s0, T alpha, std::span<const T> a, std::span<const T> b, T beta, std::span<T> c) {
  check_gemm_args(s0, a.size(), b.size(), c.size());
  const GemmShape s = with_tight_ld(s0);
  using W = typename Wide<T>::type;
  for (std::int64_t i = 0; i < s.m; ++i) {
    for (std::int64_t j = 0; j < s.n; ++j) {
      W acc = 0;
      for (std::int64_t p = 0; p < s.k; ++p) {
        const T av = s.op_a == Op::NoTrans ? a[at(s.layout, i, p, s.lda)] : a[at(s.layout, p, i, s.lda)];
        const T bv = s.op_b == Op::NoTrans ? b[at(s.layout, p, j, s.ldb)] : b[at(s.layout, j, p, s.ldb)];
        acc += static_cast<W>(av) * static_cast<W>(bv);
      }
      T& cij = c[at(s.layout, i, j, s.ldc)];
      // alpha == 0: A and B are not referenced (BLAS semantics).
      const W scaled = alpha == T(0) ? W(0) : static_cast<W>(alpha) * acc;
      cij = beta == T(0) ? static_cast<T>(scaled) : static_cast<T>(scaled + static_cast<W>(beta) * static_cast<W>(cij));
    }
  }
}

template void gemm<float>(const GemmShape&, float, std::span<const float>, std::span<const float>, float,
                          std::span<float>);
template void gemm<double>(const GemmShape&, double, std::span<const double>, std::span<const double>, double,
                           std::span<double>);

}  // namespace popper::gemm::reference
