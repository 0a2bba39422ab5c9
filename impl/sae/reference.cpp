// Dense Eigen oracle for the SAE Kronecker operator (see reference.hpp).
#include "impl/sae/reference.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Dense>

namespace popper::sae::reference {

namespace {
Eigen::Index ix(std::size_t v) { return static_cast<Eigen::Index>(v); }
}  // namespace

Eigen::MatrixXd dense_jbeta(const SaeKroneckerRows& rows, std::size_t row) {
  const std::size_t p = rows.p();
  Eigen::MatrixXd j = Eigen::MatrixXd::Zero(ix(p), ix(rows.beta_dim()));
  const auto& ph = *rows.a_phi();
  if (row >= rows.rows()) throw InvalidArgument("reference::dense_jbeta: row out of range");
  for (std::size_t s = ph.row_ptr[row]; s < ph.row_ptr[row + 1]; ++s)
    for (std::size_t c = 0; c < p; ++c) j(ix(c), ix(ph.block[s] * p + c)) += ph.weight[s];
  return j;
}

Eigen::MatrixXd dense_local_jac(const SaeKroneckerRows& rows, std::size_t row) {
  const std::size_t p = rows.p(), q = rows.q(row);
  const auto& lj = *rows.local_jac();
  Eigen::MatrixXd l(ix(q), ix(p));
  for (std::size_t c = 0; c < q; ++c)
    for (std::size_t j = 0; j < p; ++j) l(ix(c), ix(j)) = lj.values[lj.row_ptr[row] + c * p + j];
  return l;
}

Eigen::MatrixXd dense_factor(const LocalFactors& factors, std::size_t row) {
  const std::size_t q = factors.q.at(row);
  Eigen::MatrixXd r = Eigen::MatrixXd::Zero(ix(q), ix(q));
  for (std::size_t c = 0; c < q; ++c)
    for (std::size_t k = 0; k <= c; ++k) r(ix(c), ix(k)) = factors.values[factors.row_ptr[row] + c * q + k];
  return r;
}

Eigen::MatrixXd dense_schur_row(const SaeKroneckerRows& rows, const LocalFactors& factors, std::size_t row) {
  const Eigen::MatrixXd j = dense_jbeta(rows, row);
  const Eigen::MatrixXd l = dense_local_jac(rows, row);
  const Eigen::MatrixXd r = dense_factor(factors, row);
  const Eigen::MatrixXd z = r.triangularView<Eigen::Lower>().solve(l);
  const Eigen::MatrixXd m = Eigen::MatrixXd::Identity(ix(rows.p()), ix(rows.p())) - z.transpose() * z;
  return j.transpose() * m * j;
}

Eigen::MatrixXd dense_schur_system(const SaeKroneckerRows& rows, const LocalFactors& factors, double rho) {
  const auto n = ix(rows.beta_dim());
  Eigen::MatrixXd s = rho * Eigen::MatrixXd::Identity(n, n);
  for (std::size_t i = 0; i < rows.rows(); ++i) s += dense_schur_row(rows, factors, i);
  return s;
}

Eigen::VectorXd solve_dense(const Eigen::MatrixXd& s, const Eigen::VectorXd& b) {
  Eigen::LLT<Eigen::MatrixXd> llt(s);
  if (llt.info() != Eigen::Success) throw InvalidArgument("reference::solve_dense: matrix is not positive definite");
  return llt.solve(b);
}

}  // namespace popper::sae::reference
