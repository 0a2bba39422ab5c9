// Per-row Cholesky factors R_i of the local blocks A_i = R_i R_i^T, and the
// q x q solve v = A_i^{-1} w used in step 3 of the Schur row apply.
// Gauss-Newton blocks: A_i = L_i L_i^T + lambda I, which satisfies
// A_i - L_i L_i^T = lambda I >= 0, the condition that makes S_i PSD.
#include <cmath>
#include <string>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include "impl/sae/sae.hpp"

namespace popper::sae {

LocalFactors LocalFactors::from_rows(const std::vector<std::vector<double>>& rows) {
  std::size_t total = 0;
  for (const auto& r : rows) total += r.size();
  LocalFactors out;
  out.row_ptr.clear();
  out.row_ptr.reserve(rows.size() + 1);
  out.q.reserve(rows.size());
  out.values.reserve(total);
  out.row_ptr.push_back(0);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto q = static_cast<std::size_t>(std::llround(std::sqrt(static_cast<double>(rows[i].size()))));
    if (q * q != rows[i].size())
      throw InvalidArgument("LocalFactors: row " + std::to_string(i) + ": factor length " +
                            std::to_string(rows[i].size()) + " is not a square q_i * q_i");
    out.q.push_back(q);
    out.values.insert(out.values.end(), rows[i].begin(), rows[i].end());
    out.row_ptr.push_back(out.values.size());
  }
  return out;
}

void check_factors(const SaeKroneckerRows& rows, const LocalFactors& f) {
  if (f.rows() != rows.rows() || f.row_ptr.size() != f.rows() + 1)
    throw InvalidArgument("LocalFactors: has " + std::to_string(f.rows()) + " rows but the operator has " +
                          std::to_string(rows.rows()));
  if (f.row_ptr.back() != f.values.size())
    throw InvalidArgument("LocalFactors: row_ptr ends at " + std::to_string(f.row_ptr.back()) + " but values hold " +
                          std::to_string(f.values.size()));
  for (std::size_t i = 0; i < f.rows(); ++i) {
    const std::size_t q = f.q[i];
    if (q != rows.q(i))
      throw InvalidArgument("LocalFactors: row " + std::to_string(i) + ": factor is " + std::to_string(q) + "x" +
                            std::to_string(q) + " but L_i has q_i=" + std::to_string(rows.q(i)));
    if (f.row_ptr[i + 1] < f.row_ptr[i] || f.row_ptr[i + 1] - f.row_ptr[i] != q * q)
      throw InvalidArgument("LocalFactors: row " + std::to_string(i) + ": storage is not q_i * q_i");
    const double* r = f.values.data() + f.row_ptr[i];
    for (std::size_t c = 0; c < q; ++c)
      if (!(r[c * q + c] > 0.0) || !std::isfinite(r[c * q + c]))
        throw InvalidArgument("LocalFactors: row " + std::to_string(i) + ": diagonal R[" + std::to_string(c) +
                              "] is not positive finite");
  }
}

Result<std::shared_ptr<const LocalFactors>, FactorFailure> factor_gauss_newton_blocks(const SaeKroneckerRows& rows,
                                                                                      double lambda) {
  if (!(lambda >= 0.0) || !std::isfinite(lambda))
    throw InvalidArgument("factor_gauss_newton_blocks: lambda must be finite and >= 0, got " + std::to_string(lambda));
  using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const auto& lj = *rows.local_jac();
  const std::size_t p = rows.p();
  auto out = std::make_shared<LocalFactors>();
  std::size_t total = 0;
  for (std::size_t i = 0; i < rows.rows(); ++i) total += rows.q(i) * rows.q(i);
  out->row_ptr.reserve(rows.rows() + 1);
  out->q.reserve(rows.rows());
  out->values.reserve(total);
  for (std::size_t i = 0; i < rows.rows(); ++i) {
    const std::size_t q = rows.q(i);
    const auto qi = static_cast<Eigen::Index>(q);
    Eigen::Map<const RowMat> l(lj.values.data() + lj.row_ptr[i], qi, static_cast<Eigen::Index>(p));
    RowMat a = l * l.transpose();
    a.diagonal().array() += lambda;
    Eigen::LLT<RowMat> llt(a);
    if (llt.info() != Eigen::Success) return Failure{FactorFailure{i}};
    RowMat r = llt.matrixL();
    for (Eigen::Index c = 0; c < qi; ++c)
      if (!(r(c, c) > 0.0) || !std::isfinite(r(c, c))) return Failure{FactorFailure{i}};
    out->q.push_back(q);
    out->values.insert(out->values.end(), r.data(), r.data() + r.size());
    out->row_ptr.push_back(out->values.size());
  }
  return std::shared_ptr<const LocalFactors>(std::move(out));
}

void cholesky_solve_in_place(const double* r, std::size_t q, double* v) {
  for (std::size_t c = 0; c < q; ++c) {  // R z = v
    double s = v[c];
    for (std::size_t k = 0; k < c; ++k) s -= r[c * q + k] * v[k];
    v[c] = s / r[c * q + c];
  }
  for (std::size_t c = q; c-- > 0;) {  // R^T x = z
    double s = v[c];
    for (std::size_t k = c + 1; k < q; ++k) s -= r[k * q + c] * v[k];
    v[c] = s / r[c * q + c];
  }
}

}  // namespace popper::sae
