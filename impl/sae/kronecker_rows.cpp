// SaeKroneckerRows: validation and the four row operations
//   gather u = J_b,i x, scatter y += J_b,i^T u, w = L_i u, u += L_i^T v.
// Zero weights (and zero v entries in L^T) are skipped, never multiplied.
#include <cmath>
#include <string>

#include "impl/sae/row_kernels.hpp"
#include "impl/sae/sae.hpp"
#include "popper/mutant.hpp"

namespace popper::sae {

namespace {

std::string where(std::size_t row) { return "SaeKroneckerRows: row " + std::to_string(row) + ": "; }

void check_row_ptr(const std::vector<std::size_t>& row_ptr, std::size_t payload, const char* field) {
  const std::string f(field);
  if (row_ptr.empty() || row_ptr.front() != 0)
    throw InvalidArgument("SaeKroneckerRows: " + f + ".row_ptr must start with 0 (rows + 1 offsets)");
  for (std::size_t i = 0; i + 1 < row_ptr.size(); ++i)
    if (row_ptr[i + 1] < row_ptr[i])
      throw InvalidArgument(where(i) + f + ".row_ptr decreases (" + std::to_string(row_ptr[i]) + " -> " +
                            std::to_string(row_ptr[i + 1]) + ")");
  if (row_ptr.back() != payload)
    throw InvalidArgument("SaeKroneckerRows: " + f + ".row_ptr ends at " + std::to_string(row_ptr.back()) +
                          " but the payload holds " + std::to_string(payload) + " entries");
}

void need(std::size_t actual, std::size_t required, const char* operand) {
  if (actual < required) throw BufferTooSmall(operand, required, actual);
}

}  // namespace

SparsePhiRows SparsePhiRows::from_rows(const std::vector<std::vector<std::pair<std::size_t, double>>>& rows) {
  std::size_t total = 0;
  for (const auto& r : rows) total += r.size();
  SparsePhiRows out;
  out.row_ptr.clear();
  out.row_ptr.reserve(rows.size() + 1);
  out.block.reserve(total);
  out.weight.reserve(POPPER_MUTANT("sae-storage-slack") ? total + 4 : total);
  out.row_ptr.push_back(0);
  for (const auto& r : rows) {
    for (const auto& [k, w] : r) {
      out.block.push_back(k);
      out.weight.push_back(w);
    }
    out.row_ptr.push_back(out.block.size());
  }
  return out;
}

LocalJacRows LocalJacRows::from_rows(const std::vector<std::vector<double>>& rows) {
  std::size_t total = 0;
  for (const auto& r : rows) total += r.size();
  LocalJacRows out;
  out.row_ptr.clear();
  out.row_ptr.reserve(rows.size() + 1);
  out.values.reserve(total);
  out.row_ptr.push_back(0);
  for (const auto& r : rows) {
    out.values.insert(out.values.end(), r.begin(), r.end());
    out.row_ptr.push_back(out.values.size());
  }
  return out;
}

SaeKroneckerRows::SaeKroneckerRows(std::size_t p, std::size_t K, std::shared_ptr<const SparsePhiRows> a_phi,
                                   std::shared_ptr<const LocalJacRows> local_jac)
    : p_(p), K_(K), a_phi_(std::move(a_phi)), local_jac_(std::move(local_jac)) {
  if (!a_phi_) throw InvalidArgument("SaeKroneckerRows: a_phi storage is null");
  if (!local_jac_) throw InvalidArgument("SaeKroneckerRows: local_jac storage is null");
  if (p_ == 0) throw InvalidArgument("SaeKroneckerRows: p (decoder output width) must be >= 1");
  const auto& ph = *a_phi_;
  const auto& lj = *local_jac_;
  if (ph.block.size() != ph.weight.size())
    throw InvalidArgument("SaeKroneckerRows: a_phi.block has " + std::to_string(ph.block.size()) +
                          " entries but a_phi.weight has " + std::to_string(ph.weight.size()));
  check_row_ptr(ph.row_ptr, ph.block.size(), "a_phi");
  check_row_ptr(lj.row_ptr, lj.values.size(), "local_jac");
  if (ph.rows() != lj.rows())
    throw InvalidArgument("SaeKroneckerRows: a_phi has " + std::to_string(ph.rows()) + " rows but local_jac has " +
                          std::to_string(lj.rows()));
  for (std::size_t i = 0; i < ph.rows(); ++i) {
    for (std::size_t s = ph.row_ptr[i]; s < ph.row_ptr[i + 1]; ++s) {
      const std::size_t e = s - ph.row_ptr[i];
      if (ph.block[s] >= K_ && !POPPER_MUTANT("sae-block-range-unchecked"))
        throw InvalidArgument(where(i) + "a_phi[" + std::to_string(e) + "].block = " + std::to_string(ph.block[s]) +
                              " out of range [0, K=" + std::to_string(K_) + ")");
      if (!std::isfinite(ph.weight[s]))
        throw InvalidArgument(where(i) + "a_phi[" + std::to_string(e) + "].weight is not finite (" +
                              std::to_string(ph.weight[s]) + ")");
    }
    const std::size_t len = lj.row_ptr[i + 1] - lj.row_ptr[i];
    if (len % p_ != 0)
      throw InvalidArgument(where(i) + "local_jac length " + std::to_string(len) +
                            " is not a multiple of p=" + std::to_string(p_));
    if (len / p_ > max_q_) max_q_ = len / p_;
  }
}

std::size_t SaeKroneckerRows::m(std::size_t row) const {
  check_row(row, "m");
  return a_phi_->row_ptr[row + 1] - a_phi_->row_ptr[row];
}

std::size_t SaeKroneckerRows::q(std::size_t row) const {
  check_row(row, "q");
  return (local_jac_->row_ptr[row + 1] - local_jac_->row_ptr[row]) / p_;
}

void SaeKroneckerRows::check_row(std::size_t row, const char* op) const {
  if (row >= rows())
    throw InvalidArgument(std::string("SaeKroneckerRows::") + op + ": row " + std::to_string(row) +
                          " out of range [0, " + std::to_string(rows()) + ")");
}

void SaeKroneckerRows::gather_unchecked(std::size_t row, const double* x_beta, double* u) const {
  gather_unchecked(row, x_beta, u, row_kernels());
}
void SaeKroneckerRows::l_apply_unchecked(std::size_t row, const double* u, double* w) const {
  l_apply_unchecked(row, u, w, row_kernels());
}
void SaeKroneckerRows::l_apply_t_unchecked(std::size_t row, const double* v, double* u) const {
  l_apply_t_unchecked(row, v, u, row_kernels());
}

void SaeKroneckerRows::gather_unchecked(std::size_t row, const double* x_beta, double* u, const RowKernels& k) const {
  const auto& ph = *a_phi_;
  for (std::size_t j = 0; j < p_; ++j) u[j] = 0.0;
  // Nonzero entries in order, four per pass over u; zero weights are skipped,
  // not multiplied, so a NaN under a zero weight stays out.
  double a[4];
  const double* xs[4];
  std::size_t pending = 0;
  const bool multiply_zeros = POPPER_MUTANT("sae-zero-weight-multiplied");
  const std::size_t end =
      ph.row_ptr[row + 1] - (POPPER_MUTANT("sae-gather-skips-last") && ph.row_ptr[row + 1] > ph.row_ptr[row] ? 1 : 0);
  for (std::size_t s = ph.row_ptr[row]; s < end; ++s) {
    if (ph.weight[s] == 0.0 && !multiply_zeros) continue;
    a[pending] = ph.weight[s];
    xs[pending++] = x_beta + ph.block[s] * p_;
    if (pending == 4) {
      k.axpy4(a, xs, u, p_);
      pending = 0;
    }
  }
  for (std::size_t e = 0; e < pending; ++e) k.axpy(a[e], xs[e], u, p_);
}

void SaeKroneckerRows::l_apply_unchecked(std::size_t row, const double* u, double* w, const RowKernels& k) const {
  const double* l = local_jac_->values.data() + local_jac_->row_ptr[row];
  const std::size_t q = (local_jac_->row_ptr[row + 1] - local_jac_->row_ptr[row]) / p_;
  k.rows_dot(l, q, p_, u, w);
}

void SaeKroneckerRows::l_apply_t_unchecked(std::size_t row, const double* v, double* u, const RowKernels& k) const {
  const double* l = local_jac_->values.data() + local_jac_->row_ptr[row];
  const std::size_t q = (local_jac_->row_ptr[row + 1] - local_jac_->row_ptr[row]) / p_;
  double a[4];
  const double* ls[4];
  std::size_t pending = 0;
  const std::size_t stride = POPPER_MUTANT("sae-lt-row-column-mixup") ? 1 : p_;  // L read as if column-major
  for (std::size_t c = 0; c < q; ++c) {
    if (v[c] == 0.0) continue;  // skipped like a zero weight
    a[pending] = v[c];
    ls[pending++] = l + c * stride;
    if (pending == 4) {
      k.axpy4(a, ls, u, p_);
      pending = 0;
    }
  }
  for (std::size_t e = 0; e < pending; ++e) k.axpy(a[e], ls[e], u, p_);
}

void SaeKroneckerRows::apply_jbeta(std::size_t row, std::span<const double> x_beta, std::span<double> u_out) const {
  check_row(row, "apply_jbeta");
  need(x_beta.size(), beta_dim(), "x_beta");
  need(u_out.size(), p_, "u_out");
  gather_unchecked(row, x_beta.data(), u_out.data());
}

void SaeKroneckerRows::scatter_jbeta_t(std::size_t row, std::span<const double> u, std::span<double> y_beta) const {
  check_row(row, "scatter_jbeta_t");
  need(u.size(), p_, "u");
  need(y_beta.size(), beta_dim(), "y_beta");
  const auto& ph = *a_phi_;
  const bool skip_last = POPPER_MUTANT("sae-scatter-skips-last");
  for (std::size_t s = ph.row_ptr[row]; s < ph.row_ptr[row + 1]; ++s) {
    const double w = ph.weight[s];
    if (w == 0.0) continue;
    if (skip_last && s + 1 == ph.row_ptr[row + 1]) continue;
    row_kernels().axpy(w, u.data(), y_beta.data() + ph.block[s] * p_, p_);
  }
}

void SaeKroneckerRows::apply_l(std::size_t row, std::span<const double> u, std::span<double> w_out) const {
  check_row(row, "apply_l");
  need(u.size(), p_, "u");
  need(w_out.size(), q(row), "w_out");
  l_apply_unchecked(row, u.data(), w_out.data());
}

void SaeKroneckerRows::apply_l_t(std::size_t row, std::span<const double> v, std::span<double> u_out) const {
  check_row(row, "apply_l_t");
  need(v.size(), q(row), "v");
  need(u_out.size(), p_, "u_out");
  l_apply_t_unchecked(row, v.data(), u_out.data());
}

std::size_t SaeKroneckerRows::resident_scalars() const {
  return a_phi_->weight.capacity() + local_jac_->values.capacity();
}

std::size_t SaeKroneckerRows::resident_indices() const {
  return a_phi_->block.capacity() + a_phi_->row_ptr.capacity() + local_jac_->row_ptr.capacity();
}

std::size_t SaeKroneckerRows::resident_bytes() const {
  return resident_scalars() * sizeof(double) + resident_indices() * sizeof(std::size_t);
}

}  // namespace popper::sae
