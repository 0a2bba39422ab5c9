// Dense route (see lib_dense_route.hpp): CBLAS/LAPACKE on the explicit matrix.
#include "impl/sae/lib_dense_route.hpp"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace popper::sae::dense_route {

double dense_bytes(std::size_t dim) { return static_cast<double>(dim) * static_cast<double>(dim) * 8.0; }

namespace {
int bi(std::size_t v) { return static_cast<int>(v); }
std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}
}  // namespace

DenseSchurMatrix DenseSchurMatrix::form(const SaeSchurSystem& sys, double max_bytes) {
  const std::size_t n = sys.dim();
  if (dense_bytes(n) > max_bytes)
    throw Unsupported("dense route needs " + gib(dense_bytes(n)) + " GiB > budget " + gib(max_bytes) + " GiB");
  const auto& rows = sys.rows();
  const std::size_t p = rows.p();
  const auto& ph = *rows.a_phi();
  const auto& lj = *rows.local_jac();
  const auto& f = *sys.factors();
  DenseSchurMatrix out;
  out.dim_ = n;
  out.a_.assign(n * n, 0.0);
  for (std::size_t e = 0; e < n; ++e) out.a_[e * n + e] = sys.rho();
  std::vector<double> z(rows.max_q() * p), m(p * p);
  std::vector<std::pair<std::size_t, double>> coef;
  for (std::size_t i = 0; i < rows.rows(); ++i) {
    const std::size_t q = f.q[i];
    // Aggregate repeated blocks: J_b,i has c_k = sum of the weights on block k.
    coef.clear();
    for (std::size_t s = ph.row_ptr[i]; s < ph.row_ptr[i + 1]; ++s) {
      if (ph.weight[s] == 0.0) continue;
      auto it = std::find_if(coef.begin(), coef.end(), [&](const auto& c) { return c.first == ph.block[s]; });
      if (it == coef.end()) coef.emplace_back(ph.block[s], ph.weight[s]);
      else it->second += ph.weight[s];
    }
    if (coef.empty()) continue;
    std::fill(m.begin(), m.end(), 0.0);
    if (q > 0) {
      std::copy(lj.values.begin() + static_cast<std::ptrdiff_t>(lj.row_ptr[i]),
                lj.values.begin() + static_cast<std::ptrdiff_t>(lj.row_ptr[i + 1]), z.begin());
      cblas_dtrsm(CblasRowMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, bi(q), bi(p), 1.0,
                  f.values.data() + f.row_ptr[i], bi(q), z.data(), bi(p));
      cblas_dsyrk(CblasRowMajor, CblasLower, CblasTrans, bi(p), bi(q), -1.0, z.data(), bi(p), 0.0, m.data(), bi(p));
    }
    for (std::size_t r = 0; r < p; ++r) {
      m[r * p + r] += 1.0;
      for (std::size_t c = r + 1; c < p; ++c) m[r * p + c] = m[c * p + r];  // mirror: blocks need full M
    }
    for (std::size_t a = 0; a < coef.size(); ++a) {
      for (std::size_t b = 0; b <= a; ++b) {
        const std::size_t kr = std::max(coef[a].first, coef[b].first), kc = std::min(coef[a].first, coef[b].first);
        const double scale = coef[a].second * coef[b].second;
        double* blk = out.a_.data() + kr * p * n + kc * p;
        for (std::size_t r = 0; r < p; ++r) cblas_daxpy(bi(p), scale, m.data() + r * p, 1, blk + r * n, 1);
      }
    }
  }
  return out;
}

void DenseSchurMatrix::apply(std::span<const double> x, std::span<double> y) const {
  if (factored_) throw InvalidArgument("DenseSchurMatrix::apply: the matrix was consumed by factor_and_solve");
  if (x.size() < dim_) throw BufferTooSmall("x", dim_, x.size());
  if (y.size() < dim_) throw BufferTooSmall("y", dim_, y.size());
  cblas_dsymv(CblasRowMajor, CblasLower, bi(dim_), 1.0, a_.data(), bi(dim_), x.data(), 1, 0.0, y.data(), 1);
}

bool DenseSchurMatrix::factor_and_solve(std::span<const double> b, std::span<double> x) {
  if (factored_) throw InvalidArgument("DenseSchurMatrix::factor_and_solve: already consumed");
  if (b.size() < dim_) throw BufferTooSmall("b", dim_, b.size());
  if (x.size() < dim_) throw BufferTooSmall("x", dim_, x.size());
  factored_ = true;
  if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', bi(dim_), a_.data(), bi(dim_)) != 0) return false;
  std::vector<double> sol(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(dim_));
  if (LAPACKE_dpotrs(LAPACK_ROW_MAJOR, 'L', bi(dim_), 1, a_.data(), bi(dim_), sol.data(), 1) != 0) return false;
  std::copy(sol.begin(), sol.end(), x.begin());
  return true;
}

}  // namespace popper::sae::dense_route
