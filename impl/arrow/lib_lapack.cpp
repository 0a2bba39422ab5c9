// The library tier: the same dense per-atom solve as the oracle, through
// LAPACKE_dpotrf (lower) and LAPACKE_dpotrs. dpotrf's info = j > 0 names the
// first non-PD leading minor; with unknowns ordered [t_0..t_{n-1}, beta] the
// leading minors of the t-part are block diagonal, so column j-1 < n d means
// row (j-1)/d failed, any later column means the Schur complement failed.
#include <cmath>

#include <lapacke.h>

#include "impl/arrow/kernels.hpp"

namespace popper::arrow::lapack {

ArrowResult solve_dense(const AtomView& a, double rho_t, double rho_beta) {
  if (auto f = first_nonfinite_field(a)) return Failure{ArrowFailure{NonFiniteValue{*f}}};
  std::vector<double> H, x;
  reference::assemble_dense(a, rho_t, rho_beta, H, x);
  const auto N = static_cast<lapack_int>(x.size());
  const lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', N, H.data(), N);
  if (info > 0) {
    const auto col = static_cast<std::size_t>(info - 1);
    if (col < a.rows * a.d) return Failure{ArrowFailure{row_failure(a, col / a.d, rho_t)}};
    return Failure{ArrowFailure{schur_failure(a, rho_t, rho_beta)}};
  }
  if (info < 0) return Failure{ArrowFailure{NonFiniteValue{ArrowField::result}}};  // unreachable: args are checked
  if (N > 0 && LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'L', N, 1, H.data(), N, x.data(), N) != 0)
    return Failure{ArrowFailure{NonFiniteValue{ArrowField::result}}};
  double log_det = 0.0;
  bool finite = true;
  for (lapack_int j = 0; j < N; ++j) {
    log_det += 2.0 * std::log(H[static_cast<std::size_t>(j) * static_cast<std::size_t>(N + 1)]);
    finite = finite && std::isfinite(x[static_cast<std::size_t>(j)]);
  }
  if (!finite || !std::isfinite(log_det)) return Failure{ArrowFailure{NonFiniteValue{ArrowField::result}}};
  ArrowSolution s;
  const std::size_t nt = a.rows * a.d;
  s.delta_t.assign(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(nt));
  s.delta_beta.assign(x.begin() + static_cast<std::ptrdiff_t>(nt), x.end());
  s.log_det = log_det;
  return s;
}

}  // namespace popper::arrow::lapack
