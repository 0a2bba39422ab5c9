// Hand GEMM on the tensor cores: 16-bit inputs (FP16 or BF16), FP32
// accumulation and output (the CUDA hand tier's tensor-core path):
//
//   C(i, j) = alpha * sum_p A(i, p) * B(p, j) + beta * C(i, j)
//
// Block tile 128 x 128, k step 32, 256 threads = 8 warps in 2 x 4; each warp
// owns 64 x 32 of C as 4 x 2 WMMA accumulators of 16 x 16 (FP32) and issues
// mma_sync with 16 x 16 x 16 fragments (HMMA on sm_80..sm_90). Tiles go from
// global to shared memory in 16-byte chunks along each operand's contiguous
// dimension, kept in that orientation (so no transposing copy: the fragment
// layout, row- or column-major, follows the operand), with cp.async in two
// stages (the next tile in flight during the current tile's MMAs) when the
// host allows 16-byte reads and the chunk is whole, else 8 guarded scalar
// loads a chunk. Ragged edges are zero-filled and never written. The epilogue
// stages each accumulator through a per-warp 16 x 16 scratch in the freed
// shared memory and writes alpha acc + beta C (C not read when beta == 0).
// On sm_90, operands that allow 16-byte reads go to the wgmma kernel
// (hand_gemm_wgmma_sm90a.cu) instead; select_tc_kernel below decides.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "impl/gemm/cuda/cp_async.hpp"
#include "impl/gemm/cuda/hand_gemm_launch.hpp"

namespace popper::gemm::cuda::detail {
namespace {

using namespace nvcuda;
using u16 = unsigned short;

constexpr int BM = kTensorTileM, BN = kTensorTileN, BK = kTensorTileK;
constexpr int THREADS = 256;
constexpr int PAD = 8;  // 16 bytes: rows stay 16-byte aligned, WMMA's ldm a multiple of 8
// A stage is [BM][BK + PAD] or [BK][BM + PAD] elements, whichever orientation
// the operand has; both fit this size (B likewise).
constexpr int kStage = (BM * (BK + PAD) > BK * (BM + PAD)) ? BM * (BK + PAD) : BK * (BM + PAD);
static_assert(BM == BN, "one stage size serves both operands");
static_assert(BM * BK / 8 == 2 * THREADS, "two 16-byte chunks per thread and operand");
static_assert(8 * 16 * 16 * sizeof(float) <= 4 * kStage * sizeof(u16), "the epilogue scratch fits the freed stages");

// Eight elements x[0], x[stride], ... of which the first `valid` exist (the
// rest 0) into 16 bytes of shared memory: unaligned operands, kept out of
// line so that its registers do not weigh on the cp.async path's.
__device__ __noinline__ void copy_guarded(u16* dst, const u16* __restrict__ x, long long stride, int valid) {
  unsigned w[4];
#pragma unroll
  for (int e = 0; e < 8; e += 2) {
    const unsigned lo = e < valid ? x[e * stride] : 0u, hi = e + 1 < valid ? x[(e + 1) * stride] : 0u;
    w[e / 2] = lo | (hi << 16);
  }
  *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
}

// The thread's two 16-byte chunks of each k tile of X (rows x cols, X(r, c) =
// x[r rs + c cs], the k tile a range of BK columns), copied to shared memory
// as [outer][inner] with leading dimension LD: inner = c when INNER_C (X
// contiguous along c), else r; R is the tile's rows. Only the offsets and the
// extents left are kept (the pointer and strides come from the kernel's
// parameters), to spare registers. Out of range: 0.
template <int R, bool INNER_C, int LD>
struct TileCopier {
  static constexpr int INNER = INNER_C ? BK : R, CHUNKS = INNER / 8;
  long long offset[2];
  int inner_left[2], outer_left[2];

  __device__ TileCopier(long long rs, long long cs, long long rows, long long cols, long long r0, int tid) {
#pragma unroll
    for (int t = 0; t < 2; ++t) {
      const int chunk = tid + t * THREADS, o = chunk / CHUNKS, v = (chunk % CHUNKS) * 8;
      const long long r = INNER_C ? r0 + o : r0 + v, c = INNER_C ? v : o;
      offset[t] = r * rs + c * cs;
      inner_left[t] = static_cast<int>(INNER_C ? cols - c : rows - r);
      outer_left[t] = static_cast<int>(INNER_C ? rows - r : cols - c);
    }
  }
  __device__ void copy(u16* stage, const u16* __restrict__ x, long long rs, long long cs, bool vector, int tid) const {
#pragma unroll
    for (int t = 0; t < 2; ++t) {
      const int chunk = tid + t * THREADS;
      u16* d = stage + (chunk / CHUNKS) * LD + (chunk % CHUNKS) * 8;
      const int valid = outer_left[t] > 0 && inner_left[t] > 0 ? min(inner_left[t], 8) : 0;
      // A chunk cut by an edge goes the guarded way even when 16-byte reads
      // are allowed: cp.async's 16-byte window would reach past the operand's
      // last element (compute-sanitizer's memcheck flagged it on sm_90).
      if (vector && valid == 8) cp_async16(d, x + offset[t], 16);
      else copy_guarded(d, x + offset[t], INNER_C ? cs : rs, valid);
    }
  }
  __device__ void next(long long cs) {
#pragma unroll
    for (int t = 0; t < 2; ++t) offset[t] += BK * cs, (INNER_C ? inner_left[t] : outer_left[t]) -= BK;
  }
};

// A_K: A(i, p..p+7) contiguous (a_cs == 1): the A stage is [BM][BK + PAD], row-major fragments;
//      else A(i..i+7, p) (a_rs == 1): [BK][BM + PAD], column-major fragments.
// B_K: B(p..p+7, j) contiguous (b_rs == 1): the B stage is [BN][BK + PAD], column-major fragments;
//      else B(p, j..j+7) (b_cs == 1): [BK][BN + PAD], row-major fragments.
template <class T, bool A_K, bool B_K>
__global__ void __launch_bounds__(THREADS, 2) hand_gemm_tc(StridedOperands o) {
  using ALayout = std::conditional_t<A_K, wmma::row_major, wmma::col_major>;
  using BLayout = std::conditional_t<B_K, wmma::col_major, wmma::row_major>;
  constexpr int LDA = A_K ? BK + PAD : BM + PAD, LDB = B_K ? BK + PAD : BN + PAD;
  __shared__ __align__(128) u16 smem[4 * kStage];  // A stage 0, A stage 1, B stage 0, B stage 1
  const auto* a = static_cast<const u16*>(o.a);
  const auto* b = static_cast<const u16*>(o.b);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, wm = warp / 4, wn = warp % 4;
  const long long i0 = static_cast<long long>(blockIdx.y) * BM, j0 = static_cast<long long>(blockIdx.x) * BN;
  const auto stage_a = [&](int s) { return smem + s * kStage; };
  const auto stage_b = [&](int s) { return smem + (2 + s) * kStage; };
  // A is copied as (rows i, cols p), B as B^T (rows j, cols p).
  TileCopier<BM, A_K, LDA> ca(o.a_rs, o.a_cs, o.m, o.k, i0, tid);
  TileCopier<BN, B_K, LDB> cb(o.b_cs, o.b_rs, o.n, o.k, j0, tid);
  const auto issue = [&](int s) {
    ca.copy(stage_a(s), a, o.a_rs, o.a_cs, o.a_vector, tid);
    cb.copy(stage_b(s), b, o.b_cs, o.b_rs, o.b_vector, tid);
    cp_async_commit();
    ca.next(o.a_cs), cb.next(o.b_rs);
  };

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const long long tiles = (o.k + BK - 1) / BK;
  if (tiles > 0) issue(0);
  for (long long t = 0; t < tiles; ++t) {
    const int cur = static_cast<int>(t & 1);
    if (t + 1 < tiles) {
      issue(cur ^ 1);
      cp_async_wait<1>();  // tile t has landed, tile t + 1 may still be in flight
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const T* as = reinterpret_cast<const T*>(stage_a(cur));
    const T* bs = reinterpret_cast<const T*>(stage_b(cur));
#pragma unroll 1  // unrolled, the two steps' fragments spill
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, ALayout> af[4];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, BLayout> bf[2];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int row = wm * 64 + i * 16;
        wmma::load_matrix_sync(af[i], A_K ? as + row * LDA + kk : as + kk * LDA + row, LDA);
      }
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int col = wn * 32 + j * 16;
        wmma::load_matrix_sync(bf[j], B_K ? bs + col * LDB + kk : bs + kk * LDB + col, LDB);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], af[i], bf[j], acc[i][j]);
    }
    __syncthreads();  // the stage is free for the copy two tiles ahead
  }

  // Epilogue: every stage is free (the loop ended on a barrier, or never ran).
  // The block's rows and columns left of C (ragged edges), 32-bit from here on.
  const int m_left = static_cast<int>(o.m - i0), n_left = static_cast<int>(o.n - j0);
  float* c_block = o.c + i0 * o.c_rs + j0 * o.c_cs;
  float* scratch = reinterpret_cast<float*>(smem) + warp * 256;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 256; e += 32) {
        const int r = wm * 64 + i * 16 + e / 16, c = wn * 32 + j * 16 + e % 16;
        if (r >= m_left || c >= n_left) continue;
        float* cij = c_block + r * o.c_rs + c * o.c_cs;
        const float ab = o.alpha * scratch[e];
        *cij = o.beta == 0.0f ? ab : fmaf(o.beta, *cij, ab);
      }
      __syncwarp();
    }
}

template <class T>
int launch(const StridedOperands& o, cudaStream_t st) {
  const dim3 grid(static_cast<unsigned>((o.n + BN - 1) / BN), static_cast<unsigned>((o.m + BM - 1) / BM));
  const bool a_k = o.a_cs == 1, b_k = o.b_rs == 1;
  if (a_k && b_k) hand_gemm_tc<T, true, true><<<grid, THREADS, 0, st>>>(o);
  else if (a_k) hand_gemm_tc<T, true, false><<<grid, THREADS, 0, st>>>(o);
  else if (b_k) hand_gemm_tc<T, false, true><<<grid, THREADS, 0, st>>>(o);
  else hand_gemm_tc<T, false, false><<<grid, THREADS, 0, st>>>(o);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

namespace {
std::atomic<std::uint64_t> wgmma_launches{0};
}  // namespace

bool tc_wgmma_available() {
#if POPPER_HAVE_SM90A
  // Per device: 0 not probed yet, 1 available, 2 not.
  static std::atomic<signed char> known[64];
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  if (device >= 0 && device < 64 && known[device].load(std::memory_order_relaxed) != 0)
    return known[device].load(std::memory_order_relaxed) == 1;
  int major = 0, minor = 0;
  bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess;
  if (!ok) (void)cudaGetLastError();
  // sm_90a code runs on compute capability 9.0 only.
  ok = ok && major == 9 && minor == 0 && probe_hand_gemm_wgmma() == 0;
  if (device >= 0 && device < 64) known[device].store(ok ? 1 : 2, std::memory_order_relaxed);
  return ok;
#else
  return false;
#endif
}

std::uint64_t tc_wgmma_launches() { return wgmma_launches.load(std::memory_order_relaxed); }

int select_tc_kernel(const StridedOperands& o, TcKernel* kernel) {
  const char* env = std::getenv("POPPER_CUDA_TC_KERNEL");
  const bool force_wmma = env != nullptr && std::strcmp(env, "wmma") == 0;
  const bool force_wgmma = env != nullptr && std::strcmp(env, "wgmma") == 0;
  if (env != nullptr && *env != '\0' && std::strcmp(env, "auto") != 0 && !force_wmma && !force_wgmma)
    return static_cast<int>(cudaErrorInvalidValue);
  *kernel = TcKernel::Wmma;
  if (force_wmma) return 0;
  const bool available = tc_wgmma_available();
  if (force_wgmma && !available) return static_cast<int>(cudaErrorNotSupported);
  // One block per 128 x 256 tile on a 1-D grid.
  const std::int64_t blocks = ((o.m + kWgmmaTileM - 1) / kWgmmaTileM) * ((o.n + kWgmmaTileN - 1) / kWgmmaTileN);
  if (available && o.a_vector && o.b_vector && blocks <= 0x7fffffff) *kernel = TcKernel::Wgmma;
  return 0;
}

int launch_hand_gemm_tc(HalfType type, const StridedOperands& o, void* stream) {
  TcKernel kernel = TcKernel::Wmma;
  if (const int e = select_tc_kernel(o, &kernel); e != 0) return e;
  if (o.m == 0 || o.n == 0) return 0;
#if POPPER_HAVE_SM90A
  if (kernel == TcKernel::Wgmma) {
    wgmma_launches.fetch_add(1, std::memory_order_relaxed);
    return launch_hand_gemm_wgmma(type, o, stream);
  }
#endif
  const auto st = static_cast<cudaStream_t>(stream);
  return type == HalfType::Bf16 ? launch<__nv_bfloat16>(o, st) : launch<__half>(o, st);
}

}  // namespace popper::gemm::cuda::detail
