// The reduced Schur system of the SAE arrow solve, applied matrix-free:
//
//   (sum_i S_i + rho I) x = b,   S_i = J_b,i^T (I - L_i^T A_i^{-1} L_i) J_b,i,
//
// solved by Jacobi-preconditioned CG. The preconditioner is diag(sum_i S_i) + rho,
// with diag(S_i)[k p + j] = c_{i,k}^2 (1 - ||(R_i^{-1} L_i)[:, j]||^2),
// c_{i,k} = sum of the row's weights on block k — computed matrix-free.
//
// Determinism: rows are processed in batches; stage 1 computes each row's
// t_i = M_i J_b,i x into its own slot (no reduction), stage 2 scatters the batch
// with tasks owning disjoint (block range x column range) tiles of y, each adding
// rows in row order. Every element of y therefore sees the serial summation
// order (whatever the batch size), so results are bit-identical for any thread
// count. Dot products are serial.
//
// Threads: the one parallel runtime (row_pool.hpp), at most one worker per
// kMinBytesPerThread of operator data an apply streams, so a small operator
// runs on one thread and a large one is never slower with more.
#pragma once
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "impl/common/cpu_features.hpp"
#include "impl/sae/sae.hpp"

namespace popper::sae {

class RowThreadPool;

// Solver-side data: the operator's storage (shared, never copied) plus the factors.
class SaeSchurSystem {
 public:
  // rho >= 0 and finite; factors must match rows (check_factors).
  SaeSchurSystem(SaeKroneckerRows rows, std::shared_ptr<const LocalFactors> factors, double rho);

  const SaeKroneckerRows& rows() const { return rows_; }
  const std::shared_ptr<const LocalFactors>& factors() const { return factors_; }
  double rho() const { return rho_; }
  std::size_t dim() const { return rows_.beta_dim(); }

  // y = (sum_i S_i + rho I) x.  x, y: dim(); y is overwritten.
  void apply(std::span<const double> x, std::span<double> y, unsigned threads = 1) const;
  void apply(std::span<const double> x, std::span<double> y, RowThreadPool& pool) const;
  // diag(sum_i S_i) + rho, matrix-free.
  std::vector<double> jacobi_diagonal(RowThreadPool& pool) const;

  // Rows per batch (their t_i fill about kBatchBytes, so an apply is a few
  // parallel regions, not one per 64 rows) and the tile sizes of the scatter:
  // never derived from the thread count.
  static constexpr std::size_t kBatchBytes = std::size_t{512} << 10;  // an L2's worth of t_i
  static constexpr std::size_t kTileCols = 512;
  static constexpr std::size_t kTileBlocks = 4;  // number of block ranges
  static constexpr double kMinBytesPerThread = 1024.0 * 1024.0;
  std::size_t batch_rows() const;
  // Workers an apply uses out of `threads`: min(threads, streamed bytes / kMinBytesPerThread), >= 1.
  unsigned workers_for(unsigned threads) const;

 private:
  template <class RowFn, class CoefFn>
  void batched_scatter(RowThreadPool& pool, std::span<double> y, RowFn&& row_fn, CoefFn&& coef) const;
  SaeKroneckerRows rows_;
  std::shared_ptr<const LocalFactors> factors_;
  double rho_;
};

enum class Preconditioner { None, Jacobi };

struct PcgOptions {
  double rel_tol = 1e-10;             // stop when ||b - A x|| <= rel_tol ||b||
  std::size_t max_iterations = 1000;  // cap; hitting it is reported, not thrown
  unsigned threads = 1;
  popper::cpu::Isa isa = popper::cpu::Isa::Auto;  // row kernels (Unsupported if the CPU lacks it)
  Preconditioner preconditioner = Preconditioner::Jacobi;
};

struct PcgReport {
  std::size_t iterations = 0;
  double rel_residual = 0.0;  // true residual ||b - A x|| / ||b|| of the returned x
  bool converged = false;
  bool breakdown = false;  // p^T A p <= 0 or non-finite: the system is not SPD
};

// Solves from x = 0; writes x (dim()). Checks sizes, rel_tol > 0, b finite.
PcgReport solve_schur_pcg(const SaeSchurSystem& system, std::span<const double> b, std::span<double> x,
                          const PcgOptions& options = {});

}  // namespace popper::sae
