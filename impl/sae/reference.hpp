// The oracle: forms J_b,i, L_i and S_i densely with Eigen and solves the
// reduced Schur system directly (LLT). O((K p)^2) memory: tests only.
//
//   J_b,i = phi_i^T (x) I_p          (p x K p; repeated blocks add)
//   M_i   = I_p - Z_i^T Z_i,  Z_i = R_i^{-1} L_i   (= I - L_i^T A_i^{-1} L_i)
//   S_i   = J_b,i^T M_i J_b,i
#pragma once
#include <Eigen/Core>

#include "impl/sae/sae.hpp"

namespace popper::sae::reference {

Eigen::MatrixXd dense_jbeta(const SaeKroneckerRows& rows, std::size_t row);
Eigen::MatrixXd dense_local_jac(const SaeKroneckerRows& rows, std::size_t row);
Eigen::MatrixXd dense_factor(const LocalFactors& factors, std::size_t row);
Eigen::MatrixXd dense_schur_row(const SaeKroneckerRows& rows, const LocalFactors& factors, std::size_t row);
// sum_i S_i + rho I
Eigen::MatrixXd dense_schur_system(const SaeKroneckerRows& rows, const LocalFactors& factors, double rho);
// Direct LLT solve; throws popper::InvalidArgument if the matrix is not PD.
Eigen::VectorXd solve_dense(const Eigen::MatrixXd& s, const Eigen::VectorXd& b);

}  // namespace popper::sae::reference
