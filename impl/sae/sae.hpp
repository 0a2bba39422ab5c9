// Kronecker-factored SAE row operator under contract (contracts/sae/sae-kronecker-v1.yaml).
//
// Per row i the beta Jacobian is never formed; it is
//
//   J_b,i = phi_i^T (x) I_p,   phi_i = {(k_s, w_s)}_{s < m_i}  (block index k_s in [0, K))
//
// so J_b,i x = sum_s w_s x[k_s p .. k_s p + p)  (gather) and J_b,i^T u puts w_s u
// into block k_s (scatter). L_i is the q_i x p local Jacobian (row-major, q_i may
// differ per row). The inner Schur row contribution
//
//   S_i = J_b,i^T (I_p - L_i^T A_i^{-1} L_i) J_b,i
//
// is applied in five steps (gather, L, A^{-1} by the row's Cholesky factor, L^T,
// scatter) in O(m_i p + q_i p + q_i^2). S_i is PSD iff A_i - L_i L_i^T is PSD
// (A_i SPD); the Gauss-Newton block A_i = L_i L_i^T + lambda I (lambda >= 0) meets it.
//
// Storage: one ragged (CSR-style) allocation per field, held as
// std::shared_ptr<const ...> so the host operator and the solver data share
// one buffer (no second O(n q p) copy). Zero weights are skipped, not
// multiplied: a NaN/Inf in a block reached only through zero weights never
// propagates. Every entry checks sizes before writing; bad input throws
// popper::InvalidArgument / popper::BufferTooSmall with nothing written.
#pragma once
#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "popper/error.hpp"
#include "popper/result.hpp"

namespace popper::sae {

struct RowKernels;  // row_kernels.hpp

// Ragged sparse support: row i owns entries [row_ptr[i], row_ptr[i+1]).
struct SparsePhiRows {
  std::vector<std::size_t> row_ptr{0};  // rows + 1 offsets
  std::vector<std::size_t> block;       // beta block index k (x offset k * p)
  std::vector<double> weight;           // phi_i[s]

  // Exact-size storage (capacity == size) from per-row (block, weight) pairs.
  static SparsePhiRows from_rows(const std::vector<std::vector<std::pair<std::size_t, double>>>& rows);
  std::size_t rows() const { return row_ptr.empty() ? 0 : row_ptr.size() - 1; }
};

// Ragged local Jacobians: row i is q_i x p row-major at values[row_ptr[i] ..).
struct LocalJacRows {
  std::vector<std::size_t> row_ptr{0};  // rows + 1 offsets, in scalars
  std::vector<double> values;

  static LocalJacRows from_rows(const std::vector<std::vector<double>>& rows);
  std::size_t rows() const { return row_ptr.empty() ? 0 : row_ptr.size() - 1; }
};

// Per-row lower Cholesky factors R_i (A_i = R_i R_i^T), q_i x q_i row-major.
struct LocalFactors {
  std::vector<std::size_t> row_ptr{0};
  std::vector<std::size_t> q;  // q_i per row
  std::vector<double> values;

  static LocalFactors from_rows(const std::vector<std::vector<double>>& rows);  // q_i = sqrt(len)
  std::size_t rows() const { return q.size(); }
};

class SaeKroneckerRows {
 public:
  // Throws InvalidArgument naming the row and field for: null storage, p == 0,
  // malformed row_ptr, a_phi/local_jac row-count mismatch, block/weight length
  // mismatch, an L_i whose length is not a multiple of p, a block index >= K,
  // a non-finite weight.
  SaeKroneckerRows(std::size_t p, std::size_t K, std::shared_ptr<const SparsePhiRows> a_phi,
                   std::shared_ptr<const LocalJacRows> local_jac);

  std::size_t p() const { return p_; }
  std::size_t K() const { return K_; }
  std::size_t rows() const { return a_phi_->rows(); }
  std::size_t beta_dim() const { return K_ * p_; }
  std::size_t m(std::size_t row) const;  // support size m_i (incl. zero weights)
  std::size_t q(std::size_t row) const;  // q_i
  std::size_t max_q() const { return max_q_; }

  const std::shared_ptr<const SparsePhiRows>& a_phi() const { return a_phi_; }
  const std::shared_ptr<const LocalJacRows>& local_jac() const { return local_jac_; }

  // u_out[0..p) = sum_s w_s x_beta[k_s p + j]            (x_beta: K p, u_out: p)
  void apply_jbeta(std::size_t row, std::span<const double> x_beta, std::span<double> u_out) const;
  // y_beta[k_s p + j] += w_s u[j]                        (u: p, y_beta: K p)
  void scatter_jbeta_t(std::size_t row, std::span<const double> u, std::span<double> y_beta) const;
  // w_out[0..q_i) = L_i u                                (u: p, w_out: q_i)
  void apply_l(std::size_t row, std::span<const double> u, std::span<double> w_out) const;
  // u_out[0..p) += L_i^T v                               (v: q_i, u_out: p)
  void apply_l_t(std::size_t row, std::span<const double> v, std::span<double> u_out) const;

  // Scalars the operator keeps resident: sum_i (m_i + q_i p), counted from the
  // capacity of the backing vectors (so over-allocation shows up).
  std::size_t resident_scalars() const;
  // Index entries kept: sum_i m_i block indices + both row_ptr arrays.
  std::size_t resident_indices() const;
  std::size_t resident_bytes() const;

  // Unchecked kernels for the solver's inner loop (row < rows(), sizes valid),
  // on the widest row kernels the CPU runs, or on the given ones.
  void gather_unchecked(std::size_t row, const double* x_beta, double* u) const;
  void l_apply_unchecked(std::size_t row, const double* u, double* w) const;
  void l_apply_t_unchecked(std::size_t row, const double* v, double* u) const;
  void gather_unchecked(std::size_t row, const double* x_beta, double* u, const RowKernels& k) const;
  void l_apply_unchecked(std::size_t row, const double* u, double* w, const RowKernels& k) const;
  void l_apply_t_unchecked(std::size_t row, const double* v, double* u, const RowKernels& k) const;

 private:
  void check_row(std::size_t row, const char* op) const;
  std::size_t p_;
  std::size_t K_;
  std::size_t max_q_ = 0;
  std::shared_ptr<const SparsePhiRows> a_phi_;
  std::shared_ptr<const LocalJacRows> local_jac_;
};

// Checks that `factors` matches `rows` (row count, q_i per row, positive finite diagonal).
void check_factors(const SaeKroneckerRows& rows, const LocalFactors& factors);

// A_i = L_i L_i^T + lambda I factored per row. lambda >= 0 (InvalidArgument otherwise);
// a row whose block is not numerically PD is reported, not thrown.
struct FactorFailure {
  std::size_t row;
};
Result<std::shared_ptr<const LocalFactors>, FactorFailure> factor_gauss_newton_blocks(const SaeKroneckerRows& rows,
                                                                                      double lambda);

// In-place v = A^{-1} v with A = R R^T, R lower q x q row-major (forward then back substitution).
void cholesky_solve_in_place(const double* r, std::size_t q, double* v);

// Scratch for schur_row_apply: u (p) and w (max q).
struct SchurScratch {
  std::vector<double> u;
  std::vector<double> w;
};

// y_beta += S_i x_beta, S_i = J_b,i^T (I - L_i^T A_i^{-1} L_i) J_b,i, in the five steps.
void schur_row_apply(const SaeKroneckerRows& rows, const LocalFactors& factors, std::size_t row,
                     std::span<const double> x_beta, std::span<double> y_beta, SchurScratch& scratch);
void schur_row_apply(const SaeKroneckerRows& rows, const LocalFactors& factors, std::size_t row,
                     std::span<const double> x_beta, std::span<double> y_beta);

}  // namespace popper::sae
