// Hand tier on the CPU: Goto/BLIS-style blocked GEMM driver (ISA-neutral).
//
//   C = alpha * op(A) * op(B) + beta * C
//
// for jc in 0..n step NC:                 B panel KC x NC  -> packed, shared by all threads
//   for pc in 0..k step KC:               beta applies on the first pc only (then beta = 1)
//     for ic in 0..m step MC:             A block MC x KC  -> packed per thread
//       for jr in 0..NC step NR:          B sliver stays in L1
//         for ir in 0..MC step MR:        micro-kernel: MR x NR register tile
//
// Every operand is addressed as X(r, c) = x[r*rs + c*cs], so layout and op
// are absorbed by packing. Column-major C is computed as the row-major
// problem C^T = op(B)^T op(A)^T over the same memory. Threads own disjoint
// (ic block, jr range) tiles of C, and the k order per element is fixed, so
// the result does not depend on the thread count.
#include "gemm/cpu_gemm.hpp"

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gemm/cpu_gemm_kernels.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::gemm::cpu {
namespace {

using detail::KernelSpec;

// Portable fallback: 4 x 4 register tile in plain C++.
template <class T>
void scalar_kernel(std::int64_t kc, const T* ap, const T* bp, T* c, std::int64_t ldc, T alpha, T beta) {
  constexpr int MR = 4, NR = 4;
  T acc[MR][NR] = {};
  for (std::int64_t p = 0; p < kc; ++p) {
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j) acc[i][j] += ap[i] * bp[j];
    ap += MR;
    bp += NR;
  }
  const int rows = POPPER_MUTANT("gemm-scalar-edge-row") ? MR - 1 : MR;  // the scalar path loses a row
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < NR; ++j) {
      T& cij = c[i * ldc + j];
      cij = beta == T(0) ? alpha * acc[i][j] : alpha * acc[i][j] + beta * cij;
    }
}

template <class T>
KernelSpec<T> scalar_spec() {
  return {4, 4, 64, 256, 1024, &scalar_kernel<T>};
}

template <class T>
KernelSpec<T> spec_for(Isa isa);
template <>
KernelSpec<float> spec_for<float>(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return detail::avx512_f32();
    case Isa::Avx2: return detail::avx2_f32();
    default: return scalar_spec<float>();
  }
}
template <>
KernelSpec<double> spec_for<double>(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return detail::avx512_f64();
    case Isa::Avx2: return detail::avx2_f64();
    default: return scalar_spec<double>();
  }
}

// Matrix view X(r, c) = p[r*rs + c*cs].
template <class T>
struct View {
  const T* p;
  std::int64_t rs, cs;
  const T& operator()(std::int64_t r, std::int64_t c) const { return p[r * rs + c * cs]; }
};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
template <class T>
using Buffer = std::unique_ptr<T[], FreeDeleter>;

template <class T>
Buffer<T> aligned_buffer(std::size_t n) {
  const std::size_t bytes = ((n * sizeof(T) + 63) / 64) * 64;
  void* p = std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
  if (p == nullptr) throw std::bad_alloc();
  return Buffer<T>(static_cast<T*>(p));
}

// Pack op(A)[i0 : i0+mcur, p0 : p0+kcur] into MR-row slivers: dst[s][p][ii].
template <class T>
void pack_a(View<T> a, std::int64_t i0, std::int64_t mcur, std::int64_t p0, std::int64_t kcur, int mr, T* dst) {
  for (std::int64_t is = 0; is < mcur; is += mr) {
    const std::int64_t rows = std::min<std::int64_t>(mr, mcur - is);
    T* d = dst + is * kcur;
    if (a.cs == 1) {  // rows contiguous along p: read rows, write with stride mr
      for (std::int64_t ii = 0; ii < rows; ++ii) {
        const T* src = &a(i0 + is + ii, p0);
        for (std::int64_t p = 0; p < kcur; ++p) d[p * mr + ii] = src[p];
      }
      for (std::int64_t ii = rows; ii < mr; ++ii)
        for (std::int64_t p = 0; p < kcur; ++p) d[p * mr + ii] = T(0);
    } else {
      for (std::int64_t p = 0; p < kcur; ++p) {
        for (std::int64_t ii = 0; ii < rows; ++ii) d[p * mr + ii] = a(i0 + is + ii, p0 + p);
        for (std::int64_t ii = rows; ii < mr; ++ii) d[p * mr + ii] = T(0);
      }
    }
  }
}

// Pack op(B)[p0 : p0+kcur, j0 + s*NR ...] slivers [s_begin, s_end) into dst[s][p][jj].
template <class T>
void pack_b(View<T> b, std::int64_t p0, std::int64_t kcur, std::int64_t j0, std::int64_t ncur, int nr,
            std::int64_t s_begin, std::int64_t s_end, T* dst) {
  for (std::int64_t s = s_begin; s < s_end; ++s) {
    const std::int64_t js = s * nr;
    const std::int64_t cols = std::min<std::int64_t>(nr, ncur - js);
    T* d = dst + js * kcur;
    if (b.cs == 1) {
      for (std::int64_t p = 0; p < kcur; ++p) {
        const T* src = &b(p0 + p, j0 + js);
        for (std::int64_t jj = 0; jj < cols; ++jj) d[p * nr + jj] = src[jj];
        for (std::int64_t jj = cols; jj < nr; ++jj) d[p * nr + jj] = T(0);
      }
    } else {
      for (std::int64_t jj = 0; jj < cols; ++jj) {
        const T* src = &b(p0, j0 + js + jj);
        for (std::int64_t p = 0; p < kcur; ++p) d[p * nr + jj] = src[p * b.rs];
      }
      for (std::int64_t jj = cols; jj < nr; ++jj)
        for (std::int64_t p = 0; p < kcur; ++p) d[p * nr + jj] = T(0);
    }
  }
}

template <class T>
struct Problem {
  std::int64_t m, n, k;
  T alpha, beta;
  View<T> a, b;
  T* c;
  std::int64_t ldc;  // C(i, j) = c[i*ldc + j] (row-major after the ColMajor flip)
};

template <class T>
void scale_c(const Problem<T>& pr) {
  for (std::int64_t i = 0; i < pr.m; ++i)
    for (std::int64_t j = 0; j < pr.n; ++j) {
      T& cij = pr.c[i * pr.ldc + j];
      cij = pr.beta == T(0) ? T(0) : pr.beta * cij;
    }
}

template <class T>
void run_blocked(const Problem<T>& pr, const KernelSpec<T>& ks, int threads) {
  const std::int64_t mr = ks.mr, nr = ks.nr;
  const std::int64_t mc = ks.mc, kc = std::min<std::int64_t>(ks.kc, pr.k);
  const std::int64_t nc = std::min<std::int64_t>(ks.nc, (pr.n + nr - 1) / nr * nr);
  const std::int64_t n_ic = (pr.m + mc - 1) / mc;
  const std::int64_t a_block = std::min<std::int64_t>(mc, (pr.m + mr - 1) / mr * mr);

  // Thread grid: ways_m over ic blocks, ways_n over jr slivers of the panel.
  const int ways_m = static_cast<int>(std::min<std::int64_t>(threads, n_ic));
  const int ways_n = std::max(1, threads / ways_m);
  const int nthreads = ways_m * ways_n;

  Buffer<T> bpack = aligned_buffer<T>(static_cast<std::size_t>(nc * kc));
  std::vector<Buffer<T>> apack;
  for (int t = 0; t < nthreads; ++t) apack.push_back(aligned_buffer<T>(static_cast<std::size_t>(a_block * kc)));
  std::barrier sync(nthreads);

  auto worker = [&](int t) {
    const int im = t % ways_m, in = t / ways_m;
    T* ap = apack[static_cast<std::size_t>(t)].get();
    alignas(64) T tile[16 * 64];  // scratch for partial tiles (mr*nr <= 1024)
    for (std::int64_t jc = 0; jc < pr.n; jc += nc) {
      const std::int64_t ncur = std::min(nc, pr.n - jc);
      const std::int64_t slivers = (ncur + nr - 1) / nr;
      for (std::int64_t pc = 0; pc < pr.k; pc += kc) {
        const std::int64_t kcur = std::min(kc, pr.k - pc);
        if (nthreads > 1) sync.arrive_and_wait();  // previous panel no longer in use
        pack_b(pr.b, pc, kcur, jc, ncur, ks.nr, slivers * t / nthreads, slivers * (t + 1) / nthreads, bpack.get());
        if (nthreads > 1) sync.arrive_and_wait();  // panel complete
        const T beta = pc == 0 || POPPER_MUTANT("gemm-beta-every-k-block") ? pr.beta : T(1);
        const std::int64_t s_begin = slivers * in / ways_n, s_end = slivers * (in + 1) / ways_n;
        if (s_begin == s_end) continue;
        for (std::int64_t ib = im; ib < n_ic; ib += ways_m) {
          const std::int64_t ic = ib * mc;
          const std::int64_t mcur = std::min(mc, pr.m - ic);
          pack_a(pr.a, ic, mcur, pc, kcur, ks.mr, ap);
          for (std::int64_t s = s_begin; s < s_end; ++s) {
            const std::int64_t jr = s * nr;
            const std::int64_t ncols = std::min(nr, ncur - jr);
            const T* bs = bpack.get() + jr * kcur;
            for (std::int64_t ir = 0; ir < mcur; ir += mr) {
              const std::int64_t nrows = std::min(mr, mcur - ir);
              const T* as = ap + ir * kcur;
              T* cij = pr.c + (ic + ir) * pr.ldc + (jc + jr);
              if (nrows == mr && ncols == nr) {
                ks.fn(kcur, as, bs, cij, pr.ldc, pr.alpha, beta);
              } else {
                ks.fn(kcur, as, bs, tile, nr, T(1), T(0));
                for (std::int64_t i = 0; i < nrows; ++i)
                  for (std::int64_t j = 0; j < ncols; ++j) {
                    T& cv = cij[i * pr.ldc + j];
                    const T ab = pr.alpha * tile[i * nr + j];
                    cv = beta == T(0) ? ab : std::fma(beta, cv, ab);
                  }
              }
            }
          }
        }
      }
    }
  };

  if (nthreads == 1) {
    worker(0);
    return;
  }
  std::vector<std::jthread> pool;
  pool.reserve(static_cast<std::size_t>(nthreads - 1));
  for (int t = 1; t < nthreads; ++t) pool.emplace_back(worker, t);
  worker(0);
}

template <class T>
void gemm_impl(const GemmShape& s0, T alpha, std::span<const T> a, std::span<const T> b, T beta, std::span<T> c,
               const CpuGemmOptions& opts) {
  check_gemm_args(s0, a.size(), b.size(), c.size());
  if (opts.threads < 1) throw InvalidArgument("cpu::gemm: threads must be >= 1, got " + std::to_string(opts.threads));
  const KernelSpec<T> ks = spec_for<T>(popper::cpu::resolve(opts.isa, "cpu::gemm"));
  const GemmShape s = with_tight_ld(s0);
  if (s.m == 0 || s.n == 0) return;

  // op(A)(i, p) and op(B)(p, j) as strided views of the stored matrices.
  const bool row = s.layout == Layout::RowMajor;
  const View<T> va = (s.op_a == Op::NoTrans) == row ? View<T>{a.data(), s.lda, 1} : View<T>{a.data(), 1, s.lda};
  const View<T> vb = (s.op_b == Op::NoTrans) == row ? View<T>{b.data(), s.ldb, 1} : View<T>{b.data(), 1, s.ldb};
  Problem<T> pr = row ? Problem<T>{s.m, s.n, s.k, alpha, beta, va, vb, c.data(), s.ldc}
                      // C^T = op(B)^T op(A)^T: transposed views swap their strides.
                      : Problem<T>{s.n, s.m, s.k, alpha, beta, View<T>{vb.p, vb.cs, vb.rs},
                                   View<T>{va.p, va.cs, va.rs}, c.data(), s.ldc};
  if (pr.k == 0 || alpha == T(0)) {
    scale_c(pr);
    return;
  }
  // Small products are not worth a thread start (~tens of microseconds).
  const double flop = 2.0 * static_cast<double>(pr.m) * static_cast<double>(pr.n) * static_cast<double>(pr.k);
  const int threads = flop < 4.0e6 ? 1 : opts.threads;
  run_blocked(pr, ks, threads);
}

}  // namespace

void gemm(const GemmShape& s, float alpha, std::span<const float> a, std::span<const float> b, float beta,
          std::span<float> c, const CpuGemmOptions& opts) {
  gemm_impl<float>(s, alpha, a, b, beta, c, opts);
}

void gemm(const GemmShape& s, double alpha, std::span<const double> a, std::span<const double> b, double beta,
          std::span<double> c, const CpuGemmOptions& opts) {
  gemm_impl<double>(s, alpha, a, b, beta, c, opts);
}

}  // namespace popper::gemm::cpu
