// Device path of the batched K=1 border solve: one thread block per atom,
// grid-strided over the color class; atoms with very large n_a each get their
// own stream (the stream-per-atom fallback). The block runs the atom_body.hpp
// pieces (built with --fmad=false), so its numbers equal the host Structured
// path bit for bit:
//   1. threads over rows:   arrow_row_factor -> L_i, Y_i, u_i, pivots (global scratch)
//   2. threads over (j,l):  S_jl = C_jl (+rho_beta) - sum_i (Y_i^T Y_i)_jl, rows in
//                           ascending order (shared memory), r likewise
//   3. thread 0:            fold row pivots in row order, factor S, solve delta_beta
//   4. threads over rows:   arrow_row_backsub -> delta_t_i
// Any CUDA error declines the whole call to the CPU (nothing partial is kept).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "impl/arrow/atom_body.hpp"
#include "impl/arrow/kernels.hpp"
#include "impl/common/device.hpp"

namespace popper::arrow {

namespace {

constexpr int kThreads = 128;
constexpr std::int64_t kStreamPerAtomRows = 1 << 16;  // one atom alone fills a device

struct DeviceAtom {
  std::int64_t rows, d, k, D, B, g, C, gb, beta, row0;  // row0: atom_offsets[a]
};

struct DeviceArgs {
  const DeviceAtom* atoms;
  const int* ids;  // which atoms this launch solves
  int count;
  const double *D, *B, *g, *C, *gb;
  double *L, *Y, *u, *piv, *rowok, *dt, *dbeta, *status;  // status: 4 per atom
  double rho_t, rho_beta;
};

template <int DF>
__device__ void solve_atom_block(const DeviceArgs& p, int a, double* S, double* r, double* dbeta_sh) {
  const DeviceAtom at = p.atoms[a];
  const std::size_t n = static_cast<std::size_t>(at.rows), d = static_cast<std::size_t>(at.d),
                    k = static_cast<std::size_t>(at.k);
  // 1. rows in parallel
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) {
    bool ok = true;
    arrow_row_factor<ScalarLane, DF>(d, k, p.D + at.D + i * d * d, p.B + at.B + i * d * k, p.g + at.g + i * d, p.rho_t,
                                     true, p.L + at.D + i * d * d, p.Y + at.B + i * d * k, p.u + at.g + i * d,
                                     p.piv + at.g + i * d, ok);
    p.rowok[at.row0 + static_cast<std::int64_t>(i)] = ok ? 1.0 : 0.0;
  }
  if (threadIdx.x == 0) arrow_border_init<ScalarLane>(k, p.C + at.C, p.gb + at.gb, p.rho_beta, S, r);
  __syncthreads();
  // 2. Schur entries in parallel, each summing rows in ascending order.
  const std::size_t entries = k * (k + 1) / 2;
  for (std::size_t e = threadIdx.x; e < entries + k; e += blockDim.x) {
    if (e < entries) {
      std::size_t l = 0, rem = e;
      while (rem >= k - l) rem -= k - l++;
      const std::size_t j = l + rem;
      double s = S[j + l * k];
      for (std::size_t i = 0; i < n; ++i) s = s - arrow_yty<ScalarLane, DF>(d, p.Y + at.B + i * d * k, j, l);
      S[j + l * k] = s;
    } else {
      const std::size_t l = e - entries;
      double s = r[l];
      for (std::size_t i = 0; i < n; ++i)
        s = s + arrow_ytu<ScalarLane, DF>(d, p.Y + at.B + i * d * k, p.u + at.g + i * d, l);
      r[l] = s;
    }
  }
  __syncthreads();
  // 3. the serial tail: pivots in row order, then the border factor and solve.
  if (threadIdx.x == 0) {
    double mant = 1.0, expo = 0.0, fail_row = -1.0;
    for (std::size_t i = 0; i < n; ++i) {
      if (fail_row < 0.0 && p.rowok[at.row0 + static_cast<std::int64_t>(i)] == 0.0) fail_row = static_cast<double>(i);
      for (std::size_t j = 0; j < d; ++j) arrow_fold_pivot<ScalarLane>(p.piv[at.g + i * d + j], mant, expo);
    }
    bool sok = true;
    arrow_border_factor<ScalarLane>(k, S, mant, expo, sok);
    arrow_border_solve<ScalarLane>(k, S, r, dbeta_sh);
    for (std::size_t j = 0; j < k; ++j) p.dbeta[at.beta + j] = dbeta_sh[j];
    p.status[4 * a + 0] = mant;
    p.status[4 * a + 1] = expo;
    p.status[4 * a + 2] = fail_row;
    p.status[4 * a + 3] = sok ? 0.0 : 1.0;
  }
  __syncthreads();
  // 4. back-substitution, rows in parallel.
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x)
    arrow_row_backsub<ScalarLane, DF>(d, k, p.L + at.D + i * d * d, p.B + at.B + i * d * k, p.g + at.g + i * d,
                                      dbeta_sh, p.dt + at.g + i * d);
  __syncthreads();
}

__global__ void batched_k1_kernel(DeviceArgs p) {
  __shared__ double S[kMaxBorderDim * kMaxBorderDim];
  __shared__ double r[kMaxBorderDim];
  __shared__ double dbeta[kMaxBorderDim];
  for (int c = blockIdx.x; c < p.count; c += gridDim.x) {
    const int a = p.ids[c];
    switch (p.atoms[a].d) {
      case 1: solve_atom_block<1>(p, a, S, r, dbeta); break;
      case 2: solve_atom_block<2>(p, a, S, r, dbeta); break;
      case 3: solve_atom_block<3>(p, a, S, r, dbeta); break;
      case 4: solve_atom_block<4>(p, a, S, r, dbeta); break;
      default: solve_atom_block<0>(p, a, S, r, dbeta); break;
    }
  }
}

// Owning device buffer; frees on scope exit.
template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  std::size_t n = 0;
  bool alloc(std::size_t count) {
    n = count;
    return cudaMalloc(reinterpret_cast<void**>(&ptr), sizeof(T) * (count > 0 ? count : 1)) == cudaSuccess;
  }
  bool upload(const T* src) {
    return n == 0 || cudaMemcpy(ptr, src, sizeof(T) * n, cudaMemcpyHostToDevice) == cudaSuccess;
  }
  bool download(T* dst) const {
    return n == 0 || cudaMemcpy(dst, ptr, sizeof(T) * n, cudaMemcpyDeviceToHost) == cudaSuccess;
  }
  ~DeviceBuffer() {
    if (ptr) cudaFree(ptr);
  }
};

}  // namespace

bool run_cuda(const BatchedK1Pack& pack, std::span<const AtomSlice> slices, double rho_t, double rho_beta,
              RawOutputs& out) {
  if (!popper::device::cuda_status().usable()) return false;
  const std::size_t B = slices.size();
  if (B == 0) return true;
  std::vector<DeviceAtom> atoms(B);
  std::vector<int> small_ids, large_ids;
  for (std::size_t a = 0; a < B; ++a) {
    const AtomSlice& s = slices[a];
    atoms[a] = DeviceAtom{static_cast<std::int64_t>(s.rows), static_cast<std::int64_t>(s.d),
                          static_cast<std::int64_t>(s.k),    static_cast<std::int64_t>(s.D),
                          static_cast<std::int64_t>(s.B),    static_cast<std::int64_t>(s.g_t),
                          static_cast<std::int64_t>(s.hbb),  static_cast<std::int64_t>(s.g_b),
                          static_cast<std::int64_t>(s.beta), static_cast<std::int64_t>(s.row_begin)};
    (static_cast<std::int64_t>(s.rows) >= kStreamPerAtomRows ? large_ids : small_ids).push_back(static_cast<int>(a));
  }
  const std::size_t total_rows = static_cast<std::size_t>(pack.atom_offsets.back());
  DeviceBuffer<DeviceAtom> d_atoms;
  DeviceBuffer<int> d_ids;
  DeviceBuffer<double> dD, dB, dg, dC, dgb, dL, dY, du, dpiv, drowok, ddt, ddbeta, dstatus;
  std::vector<int> ids = small_ids;
  ids.insert(ids.end(), large_ids.begin(), large_ids.end());
  bool ok = d_atoms.alloc(B) && d_atoms.upload(atoms.data()) && d_ids.alloc(ids.size()) && d_ids.upload(ids.data()) &&
            dD.alloc(pack.D.size()) && dD.upload(pack.D.data()) && dB.alloc(pack.B.size()) &&
            dB.upload(pack.B.data()) && dg.alloc(pack.g_t.size()) && dg.upload(pack.g_t.data()) &&
            dC.alloc(pack.hbb.size()) && dC.upload(pack.hbb.data()) && dgb.alloc(pack.g_b.size()) &&
            dgb.upload(pack.g_b.data()) && dL.alloc(pack.D.size()) && dY.alloc(pack.B.size()) &&
            du.alloc(pack.g_t.size()) && dpiv.alloc(pack.g_t.size()) && drowok.alloc(total_rows) &&
            ddt.alloc(pack.g_t.size()) && ddbeta.alloc(pack.g_b.size()) && dstatus.alloc(4 * B);
  if (!ok) return false;
  DeviceArgs args{d_atoms.ptr, d_ids.ptr, static_cast<int>(small_ids.size()),
                  dD.ptr,      dB.ptr,    dg.ptr,
                  dC.ptr,      dgb.ptr,   dL.ptr,
                  dY.ptr,      du.ptr,    dpiv.ptr,
                  drowok.ptr,  ddt.ptr,   ddbeta.ptr,
                  dstatus.ptr, rho_t,     rho_beta};
  if (!small_ids.empty()) {
    const int grid = static_cast<int>(small_ids.size() < 65535 ? small_ids.size() : 65535);
    batched_k1_kernel<<<grid, kThreads>>>(args);
    ok = cudaGetLastError() == cudaSuccess;
  }
  // Stream-per-atom fallback: each very large atom alone on its own stream, overlapping.
  std::vector<cudaStream_t> streams(large_ids.size(), nullptr);
  for (std::size_t s = 0; ok && s < large_ids.size(); ++s) {
    ok = cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking) == cudaSuccess;
    if (!ok) break;
    DeviceArgs one = args;
    one.ids = d_ids.ptr + small_ids.size() + s;
    one.count = 1;
    batched_k1_kernel<<<1, 4 * kThreads, 0, streams[s]>>>(one);
    ok = cudaGetLastError() == cudaSuccess;
  }
  ok = ok && cudaDeviceSynchronize() == cudaSuccess;
  for (cudaStream_t s : streams)
    if (s) cudaStreamDestroy(s);
  if (!ok) return false;
  std::vector<double> status(4 * B), dt(pack.g_t.size()), dbeta(pack.g_b.size());
  if (!(ddt.download(dt.data()) && ddbeta.download(dbeta.data()) && dstatus.download(status.data()))) return false;
  for (std::size_t a = 0; a < B; ++a) {
    const AtomSlice& s = slices[a];
    ArrowSolution& sol = out.solution(a, s);
    std::copy_n(dt.begin() + static_cast<std::ptrdiff_t>(s.g_t), s.rows * s.d, sol.delta_t.begin());
    std::copy_n(dbeta.begin() + static_cast<std::ptrdiff_t>(s.beta), s.k, sol.delta_beta.begin());
    out.det_mant[a] = status[4 * a + 0];
    out.det_exp[a] = status[4 * a + 1];
    out.fail_row[a] = status[4 * a + 2];
    out.schur_failed[a] = status[4 * a + 3];
  }
  return true;
}

}  // namespace popper::arrow
