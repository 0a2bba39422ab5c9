// The dense route over the vendor library (the bench's `wrapped` tier):
// form A = sum_i S_i + rho I explicitly (lower triangle, row-major, (K p)^2
// doubles) with CBLAS (dtrsm Z_i = R_i^{-1} L_i, dsyrk M_i = I - Z_i^T Z_i,
// block updates A[k,k'] += c_{i,k} c_{i,k'} M_i), then apply with dsymv or
// solve with LAPACKE dpotrf/dpotrs. It declines (popper::Unsupported) before
// allocating when the matrix would exceed a memory budget.
#pragma once
#include <cstddef>
#include <span>
#include <vector>

#include "impl/sae/schur_pcg.hpp"

namespace popper::sae::dense_route {

// Bytes of the dense (K p) x (K p) matrix.
double dense_bytes(std::size_t dim);

class DenseSchurMatrix {
 public:
  // Throws popper::Unsupported("dense route needs X GiB > budget Y GiB") when
  // dense_bytes(dim) > max_bytes; nothing is allocated then.
  static DenseSchurMatrix form(const SaeSchurSystem& system, double max_bytes);

  std::size_t dim() const { return dim_; }
  std::size_t resident_bytes() const { return a_.capacity() * sizeof(double); }
  // y = A x (dsymv, lower).
  void apply(std::span<const double> x, std::span<double> y) const;
  // Factors A in place (dpotrf, lower) and solves A x = b (dpotrs). The matrix
  // is consumed. Returns false (x untouched) if A is not numerically PD.
  bool factor_and_solve(std::span<const double> b, std::span<double> x);

 private:
  std::size_t dim_ = 0;
  bool factored_ = false;
  std::vector<double> a_;
};

}  // namespace popper::sae::dense_route
