// One Schur row, y_beta += S_i x_beta with S_i = J_b,i^T (I - L_i^T A_i^{-1} L_i) J_b,i,
// in the seed's five steps, O(m_i p + q_i p + q_i^2):
//   u = J_b,i x (gather); w = L_i u; v = A_i^{-1} w (R_i R_i^T); u -= L_i^T v; y += J_b,i^T u (scatter).
#include <string>

#include "impl/sae/sae.hpp"
#include "popper/mutant.hpp"

namespace popper::sae {

void schur_row_apply(const SaeKroneckerRows& rows, const LocalFactors& factors, std::size_t row,
                     std::span<const double> x_beta, std::span<double> y_beta, SchurScratch& scratch) {
  if (row >= rows.rows())
    throw InvalidArgument("schur_row_apply: row " + std::to_string(row) + " out of range [0, " +
                          std::to_string(rows.rows()) + ")");
  if (factors.rows() != rows.rows() || factors.row_ptr.size() != factors.rows() + 1)
    throw InvalidArgument("schur_row_apply: factors have " + std::to_string(factors.rows()) +
                          " rows but the operator has " + std::to_string(rows.rows()));
  const std::size_t q = rows.q(row);
  if (factors.q[row] != q || factors.row_ptr[row + 1] - factors.row_ptr[row] != q * q)
    throw InvalidArgument("schur_row_apply: row " + std::to_string(row) +
                          ": factor is not q_i x q_i (q_i=" + std::to_string(q) + ")");
  if (x_beta.size() < rows.beta_dim()) throw BufferTooSmall("x_beta", rows.beta_dim(), x_beta.size());
  if (y_beta.size() < rows.beta_dim()) throw BufferTooSmall("y_beta", rows.beta_dim(), y_beta.size());
  const std::size_t p = rows.p();
  scratch.u.resize(p);
  if (scratch.w.size() < q) scratch.w.resize(q);
  double* u = scratch.u.data();
  double* w = scratch.w.data();
  rows.gather_unchecked(row, x_beta.data(), u);
  rows.l_apply_unchecked(row, u, w);
  cholesky_solve_in_place(factors.values.data() + factors.row_ptr[row], q, w);
  if (!POPPER_MUTANT("sae-schur-missing-minus"))
    for (std::size_t c = 0; c < q; ++c) w[c] = -w[c];
  rows.l_apply_t_unchecked(row, w, u);
  rows.scatter_jbeta_t(row, std::span<const double>(u, p), y_beta);
}

void schur_row_apply(const SaeKroneckerRows& rows, const LocalFactors& factors, std::size_t row,
                     std::span<const double> x_beta, std::span<double> y_beta) {
  SchurScratch scratch;
  schur_row_apply(rows, factors, row, x_beta, y_beta, scratch);
}

}  // namespace popper::sae
