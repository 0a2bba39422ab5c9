// Matrix-free y = (sum_i S_i + rho I) x and diag(sum_i S_i) + rho over fixed row
// batches: stage 1 per row (independent), stage 2 a tiled scatter in row order.
#include <algorithm>
#include <cmath>
#include <string>

#include "impl/common/parallel.hpp"
#include "impl/sae/row_kernels.hpp"
#include "impl/sae/row_pool.hpp"
#include "impl/sae/schur_pcg.hpp"
#include "popper/mutant.hpp"

namespace popper::sae {

namespace {
struct ScatterItem {
  std::size_t block;
  double coef;
};
}  // namespace

SaeSchurSystem::SaeSchurSystem(SaeKroneckerRows rows, std::shared_ptr<const LocalFactors> factors, double rho)
    : rows_(std::move(rows)), factors_(std::move(factors)), rho_(rho) {
  if (!factors_) throw InvalidArgument("SaeSchurSystem: factors are null");
  if (POPPER_MUTANT("sae-deep-copy"))  // a second O(n q p) slab instead of a shared backing
    rows_ = SaeKroneckerRows(rows_.p(), rows_.K(), std::make_shared<const SparsePhiRows>(*rows_.a_phi()),
                             std::make_shared<const LocalJacRows>(*rows_.local_jac()));
  if (!(rho_ >= 0.0) || !std::isfinite(rho_))
    throw InvalidArgument("SaeSchurSystem: rho must be finite and >= 0, got " + std::to_string(rho_));
  check_factors(rows_, *factors_);
}

// row_fn(row, t, worker) writes the row's p-vector t; items(row, out) lists the
// (block, coefficient) pairs that scatter it: y[block p + j] += coef * t[j].
std::size_t SaeSchurSystem::batch_rows() const {
  return std::clamp<std::size_t>(kBatchBytes / (8 * std::max<std::size_t>(rows_.p(), 1)), 16, 1024);
}

unsigned SaeSchurSystem::workers_for(unsigned threads) const {
  if (popper::parallel::exact_threads()) return std::max(1u, threads);
  const auto& f = *factors_;
  const double bytes = 8.0 * static_cast<double>(rows_.local_jac()->values.size() + f.values.size()) +
                       16.0 * static_cast<double>(rows_.a_phi()->weight.size()) + 16.0 * static_cast<double>(dim());
  const double by_size = std::max(1.0, std::floor(bytes / kMinBytesPerThread));
  return static_cast<unsigned>(std::max(1.0, std::min<double>(threads, by_size)));
}

template <class RowFn, class CoefFn>
void SaeSchurSystem::batched_scatter(RowThreadPool& pool, std::span<double> y, RowFn&& row_fn, CoefFn&& items) const {
  const std::size_t p = rows_.p();
  const std::size_t n = rows_.rows();
  const std::size_t K = rows_.K();
  const std::size_t bpr = (K + kTileBlocks - 1) / kTileBlocks;  // blocks per range
  const std::size_t n_block_ranges = bpr == 0 ? 0 : (K + bpr - 1) / bpr;
  const std::size_t n_col_tiles = (p + kTileCols - 1) / kTileCols;
  const auto axpy = row_kernels_for(pool.isa()).axpy;
  const unsigned workers = workers_for(pool.threads());
  const std::size_t batch = batch_rows();
  // Per calling thread, reused across calls: a fresh batch buffer each apply
  // would cost page faults and zeroing comparable to the apply itself.
  thread_local std::vector<double> t;
  thread_local std::vector<std::vector<ScatterItem>> batch_items;
  if (t.size() < std::min(batch, n) * p) t.resize(std::min(batch, n) * p);
  if (batch_items.size() < batch) batch_items.resize(batch);
  // Workers must see the caller's buffers, not their own thread_local copies.
  double* const tbuf = t.data();
  auto& items_buf = batch_items;
  for (std::size_t r0 = 0; r0 < n; r0 += batch) {
    const std::size_t nb = std::min(batch, n - r0);
    pool.run(
        nb, [&](std::size_t b, unsigned worker) { row_fn(r0 + b, tbuf + b * p, worker); }, workers);
    for (std::size_t b = 0; b < nb; ++b) {
      items_buf[b].clear();
      items(r0 + b, items_buf[b]);
    }
    // Mutant: with several threads, odd tiles sum their rows in reverse.
    const bool by_partition = POPPER_MUTANT("sae-partition-dependent-order") && pool.threads() > 1;
    pool.run(
        n_block_ranges * n_col_tiles,
        [&](std::size_t task, unsigned) {
          const std::size_t k_lo = (task / n_col_tiles) * bpr, k_hi = std::min(K, k_lo + bpr);
          const std::size_t j_lo = (task % n_col_tiles) * kTileCols, j_hi = std::min(p, j_lo + kTileCols);
          for (std::size_t bi = 0; bi < nb; ++bi) {
            const std::size_t b = by_partition && task % 2 == 1 ? nb - 1 - bi : bi;
            const double* tb = tbuf + b * p;
            for (const auto& it : items_buf[b]) {
              if (it.block < k_lo || it.block >= k_hi) continue;
              axpy(it.coef, tb + j_lo, y.data() + it.block * p + j_lo, j_hi - j_lo);
            }
          }
        },
        workers);
  }
}

void SaeSchurSystem::apply(std::span<const double> x, std::span<double> y, unsigned threads) const {
  RowThreadPool pool(threads);
  apply(x, y, pool);
}

void SaeSchurSystem::apply(std::span<const double> x, std::span<double> y, RowThreadPool& pool) const {
  if (x.size() < dim()) throw BufferTooSmall("x", dim(), x.size());
  if (y.size() < dim()) throw BufferTooSmall("y", dim(), y.size());
  for (std::size_t e = 0; e < dim(); ++e) y[e] = rho_ * x[e];
  const auto& f = *factors_;
  const auto& ph = *rows_.a_phi();
  const RowKernels& k = row_kernels_for(pool.isa());
  const std::size_t wstride = std::max<std::size_t>(rows_.max_q(), 1);
  thread_local std::vector<double> w;
  if (w.size() < pool.threads() * wstride) w.resize(pool.threads() * wstride);
  double* const wbuf = w.data();  // captured by pointer: workers have their own (empty) thread_local w
  batched_scatter(
      pool, y,
      [&](std::size_t row, double* t, unsigned worker) {
        double* wq = wbuf + worker * wstride;
        const std::size_t q = f.q[row];
        rows_.gather_unchecked(row, x.data(), t, k);
        rows_.l_apply_unchecked(row, t, wq, k);
        cholesky_solve_in_place(f.values.data() + f.row_ptr[row], q, wq);
        for (std::size_t c = 0; c < q; ++c) wq[c] = -wq[c];
        rows_.l_apply_t_unchecked(row, wq, t, k);
      },
      [&](std::size_t row, std::vector<ScatterItem>& out) {
        for (std::size_t s = ph.row_ptr[row]; s < ph.row_ptr[row + 1]; ++s)
          if (ph.weight[s] != 0.0) out.push_back({ph.block[s], ph.weight[s]});
      });
}

std::vector<double> SaeSchurSystem::jacobi_diagonal(RowThreadPool& pool) const {
  const std::size_t p = rows_.p();
  std::vector<double> d(dim(), rho_);
  const auto& f = *factors_;
  const auto& ph = *rows_.a_phi();
  const auto& lj = *rows_.local_jac();
  const std::size_t zstride = std::max<std::size_t>(rows_.max_q(), 1) * p;
  std::vector<double> z(static_cast<std::size_t>(pool.threads()) * zstride);
  batched_scatter(
      pool, std::span<double>(d),
      [&](std::size_t row, double* t, unsigned worker) {
        // Z = R^{-1} L by forward substitution on rows; diag(M_i)_j = 1 - sum_c Z[c,j]^2.
        const std::size_t q = f.q[row];
        const double* r = f.values.data() + f.row_ptr[row];
        const double* l = lj.values.data() + lj.row_ptr[row];
        double* zq = z.data() + worker * zstride;
        for (std::size_t c = 0; c < q; ++c) {
          double* zc = zq + c * p;
          for (std::size_t j = 0; j < p; ++j) zc[j] = l[c * p + j];
          for (std::size_t k = 0; k < c; ++k) {
            const double rck = r[c * q + k];
            const double* zk = zq + k * p;
            for (std::size_t j = 0; j < p; ++j) zc[j] -= rck * zk[j];
          }
          const double inv = 1.0 / r[c * q + c];
          for (std::size_t j = 0; j < p; ++j) zc[j] *= inv;
        }
        for (std::size_t j = 0; j < p; ++j) t[j] = 1.0;
        for (std::size_t c = 0; c < q; ++c)
          for (std::size_t j = 0; j < p; ++j) t[j] -= zq[c * p + j] * zq[c * p + j];
      },
      [&](std::size_t row, std::vector<ScatterItem>& out) {
        // Repeated blocks add their weights first: the diagonal takes (sum w)^2.
        for (std::size_t s = ph.row_ptr[row]; s < ph.row_ptr[row + 1]; ++s) {
          if (ph.weight[s] == 0.0) continue;
          bool seen = false;
          for (std::size_t s2 = ph.row_ptr[row]; s2 < s && !seen; ++s2)
            seen = ph.weight[s2] != 0.0 && ph.block[s2] == ph.block[s];
          if (seen) continue;
          double c = 0.0;
          for (std::size_t s2 = s; s2 < ph.row_ptr[row + 1]; ++s2)
            if (ph.block[s2] == ph.block[s]) c += ph.weight[s2];
          if (c != 0.0) out.push_back({ph.block[s], c * c});
        }
      });
  return d;
}

}  // namespace popper::sae
