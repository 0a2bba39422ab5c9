// Hand tiled shared-memory SGEMM (the CUDA hand tier).
//
//   C(i, j) = alpha * sum_p A(i, p) * B(p, j) + beta * C(i, j),  FP32 accumulate
//
// Block tile 64 x 64, k step 16, 256 threads; each thread owns a 4 x 4 patch
// of C in registers. A and B tiles are staged in shared memory (A stored
// transposed so the inner loop reads both tiles along contiguous rows).
// Operands are addressed through (row, col) strides so any layout and op is
// served by the same kernel. ptxas resource usage is recorded at build time
// (impl/gemm/impl.cmake) and checked by FALSIFY-GEMM-011.
#include <cuda_runtime.h>

#include "impl/gemm/cuda/hand_gemm_launch.hpp"

namespace popper::gemm::cuda::detail {
namespace {

constexpr int BM = kHandTileM, BN = kHandTileN, BK = kHandTileK;
constexpr int TM = 4, TN = 4;
constexpr int THREADS = (BM / TM) * (BN / TN);  // 256
constexpr int PAD = 4;                          // breaks shared-memory bank conflicts

__global__ void __launch_bounds__(THREADS) hand_sgemm(StridedOperands o) {
  __shared__ float as[BK][BM + PAD];  // as[p][i] = A(i0 + i, p0 + p)
  __shared__ float bs[BK][BN + PAD];  // bs[p][j] = B(p0 + p, j0 + j)

  const int tid = threadIdx.x;
  const int tx = tid % (BN / TN), ty = tid / (BN / TN);
  const std::int64_t i0 = static_cast<std::int64_t>(blockIdx.y) * BM;
  const std::int64_t j0 = static_cast<std::int64_t>(blockIdx.x) * BN;

  float acc[TM][TN] = {};
  for (std::int64_t p0 = 0; p0 < o.k; p0 += BK) {
    // Each thread loads 4 elements of each tile (BM*BK / THREADS = 4).
#pragma unroll
    for (int r = 0; r < (BM * BK) / THREADS; ++r) {
      const int e = tid + r * THREADS;
      const int i = e % BM, p = e / BM;
      const std::int64_t gi = i0 + i, gp = p0 + p;
      as[p][i] = (gi < o.m && gp < o.k) ? o.a[gi * o.a_rs + gp * o.a_cs] : 0.0f;
    }
#pragma unroll
    for (int r = 0; r < (BN * BK) / THREADS; ++r) {
      const int e = tid + r * THREADS;
      const int j = e % BN, p = e / BN;
      const std::int64_t gj = j0 + j, gp = p0 + p;
      bs[p][j] = (gj < o.n && gp < o.k) ? o.b[gp * o.b_rs + gj * o.b_cs] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < BK; ++p) {
      float av[TM], bv[TN];
#pragma unroll
      for (int t = 0; t < TM; ++t) av[t] = as[p][ty * TM + t];
#pragma unroll
      for (int t = 0; t < TN; ++t) bv[t] = bs[p][tx * TN + t];
#pragma unroll
      for (int a = 0; a < TM; ++a)
#pragma unroll
        for (int b = 0; b < TN; ++b) acc[a][b] = fmaf(av[a], bv[b], acc[a][b]);
    }
    __syncthreads();
  }

#pragma unroll
  for (int a = 0; a < TM; ++a) {
    const std::int64_t gi = i0 + ty * TM + a;
    if (gi >= o.m) continue;
#pragma unroll
    for (int b = 0; b < TN; ++b) {
      const std::int64_t gj = j0 + tx * TN + b;
      if (gj >= o.n) continue;
      float* cij = o.c + gi * o.c_rs + gj * o.c_cs;
      const float ab = o.alpha * acc[a][b];
      *cij = o.beta == 0.0f ? ab : fmaf(o.beta, *cij, ab);
    }
  }
}

}  // namespace

int launch_hand_gemm_f32(const StridedOperands& o, void* stream) {
  if (o.m == 0 || o.n == 0) return 0;
  const dim3 grid(static_cast<unsigned>((o.n + BN - 1) / BN), static_cast<unsigned>((o.m + BM - 1) / BM));
  hand_sgemm<<<grid, THREADS, 0, static_cast<cudaStream_t>(stream)>>>(o);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace popper::gemm::cuda::detail
