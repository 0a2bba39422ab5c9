// The oracle: assemble one atom's dense bordered Hessian
//   H = [[blockdiag(D_i + rho_t I), B], [B^T, C + rho_beta I]]   (order [t_0..t_{n-1}, beta])
// and solve H delta = -g with Eigen's LLT; log det H = 2 sum log diag(L).
// A failed LLT is classified by factoring each D_i + rho_t I alone: the first
// non-PD block is the failing row, otherwise the Schur complement failed.
#include <cmath>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include "impl/arrow/kernels.hpp"

namespace popper::arrow::reference {

void assemble_dense(const AtomView& a, double rho_t, double rho_beta, std::vector<double>& H,
                    std::vector<double>& rhs) {
  const std::size_t n = a.rows, d = a.d, k = a.k, nt = n * d, N = nt + k;
  H.assign(N * N, 0.0);
  rhs.assign(N, 0.0);
  auto at = [&](std::size_t i, std::size_t j) -> double& { return H[i + j * N]; };
  for (std::size_t i = 0; i < n; ++i) {
    const double* Di = a.D + i * d * d;
    const double* Bi = a.B + i * d * k;
    const std::size_t o = i * d;
    for (std::size_t c = 0; c < d; ++c)
      for (std::size_t r = c; r < d; ++r) {  // lower triangle mirrored
        at(o + r, o + c) = Di[r + c * d] + (r == c ? rho_t : 0.0);
        at(o + c, o + r) = at(o + r, o + c);
      }
    for (std::size_t c = 0; c < k; ++c)
      for (std::size_t r = 0; r < d; ++r) {
        at(o + r, nt + c) = Bi[r + c * d];
        at(nt + c, o + r) = Bi[r + c * d];
      }
    for (std::size_t r = 0; r < d; ++r) rhs[o + r] = -a.g_t[o + r];
  }
  for (std::size_t c = 0; c < k; ++c) {
    for (std::size_t r = c; r < k; ++r) {
      at(nt + r, nt + c) = a.hbb[r + c * k] + (r == c ? rho_beta : 0.0);
      at(nt + c, nt + r) = at(nt + r, nt + c);
    }
    rhs[nt + c] = -a.g_b[c];
  }
}

ArrowResult solve_dense(const AtomView& a, double rho_t, double rho_beta) {
  if (auto f = first_nonfinite_field(a)) return Failure{ArrowFailure{NonFiniteValue{*f}}};
  std::vector<double> Hs, rhs;
  assemble_dense(a, rho_t, rho_beta, Hs, rhs);
  const auto N = static_cast<Eigen::Index>(rhs.size());
  const Eigen::Map<const Eigen::MatrixXd> H(Hs.data(), N, N);
  const Eigen::LLT<Eigen::MatrixXd> llt(H);
  if (llt.info() != Eigen::Success) {
    const auto d = static_cast<Eigen::Index>(a.d);
    for (std::size_t i = 0; i < a.rows; ++i) {
      const auto o = static_cast<Eigen::Index>(i) * d;
      const Eigen::LLT<Eigen::MatrixXd> block(H.block(o, o, d, d));
      if (block.info() != Eigen::Success) return Failure{ArrowFailure{row_failure(a, i, rho_t)}};
    }
    return Failure{ArrowFailure{schur_failure(a, rho_t, rho_beta)}};
  }
  const Eigen::VectorXd x = llt.solve(Eigen::Map<const Eigen::VectorXd>(rhs.data(), N));
  const Eigen::MatrixXd& L = llt.matrixLLT();
  double log_det = 0.0;
  for (Eigen::Index j = 0; j < N; ++j) log_det += 2.0 * std::log(L(j, j));
  ArrowSolution s;
  const std::size_t nt = a.rows * a.d;
  s.delta_t.assign(x.data(), x.data() + nt);
  s.delta_beta.assign(x.data() + nt, x.data() + N);
  s.log_det = log_det;
  if (!x.allFinite() || !std::isfinite(log_det)) return Failure{ArrowFailure{NonFiniteValue{ArrowField::result}}};
  return s;
}

}  // namespace popper::arrow::reference
