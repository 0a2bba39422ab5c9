// Hand GEMM on Hopper's warpgroup tensor cores (wgmma, sm_90a only): 16-bit
// inputs (FP16 or BF16), FP32 accumulation and output:
//
//   C(i, j) = alpha * sum_p A(i, p) * B(p, j) + beta * C(i, j)
//
// Block tile 128 x 256, k step 64, 256 threads = 2 warpgroups; warpgroup w
// owns rows 64 w .. 64 w + 63 of the tile, all 256 columns, as one
// wgmma.m64n256k16 accumulator (128 FP32 registers a thread), and issues four
// of them per k step with both operands read from shared memory through
// matrix descriptors. Every thread also copies: 16-byte cp.async chunks along
// each operand's contiguous dimension into a 128-byte-swizzled layout, K-major
// or MN-major as the operand lies in memory (wgmma's transpose bits take
// either for 16-bit types, so no transposing copy), in 4 stages of 48 KiB:
// the copy of tile t + 2 is issued behind the MMAs of tile t, and wgmma keeps
// one k step in flight across the barrier. Chunks cut by an edge read only
// their valid elements, with ordinary loads, and store zeros for the rest,
// so ragged M, N and K need no other handling. Blocks are ordered in groups of 8 block
// rows so that a wave shares A and B tiles in L2. The epilogue writes
// alpha acc + beta C straight from the accumulators (C not read when
// beta == 0), rows and columns past the edge skipped.
//
// The host side (hand_gemm_tc.cu) sends here only operands that may be read
// in 16-byte vectors (a_vector && b_vector) on a compute capability 9.0
// device that has this image.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "impl/gemm/cuda/cp_async.hpp"
#include "impl/gemm/cuda/hand_gemm_launch.hpp"

namespace popper::gemm::cuda::detail {
namespace {

using u16 = unsigned short;

constexpr int BM = kWgmmaTileM, BN = kWgmmaTileN, BK = kWgmmaTileK;
constexpr int STAGES = 4, THREADS = 256, GROUP_M = 8;
constexpr int kABytes = BM * BK * 2, kBBytes = BN * BK * 2, kStageBytes = kABytes + kBBytes;
// The 128-byte swizzle repeats every 1024 bytes and is applied by the
// hardware to absolute shared addresses: the stages start 1024-aligned.
constexpr int kSmemBytes = STAGES * kStageBytes + 1024;
static_assert(BK * 2 == 128, "a K-major line of the tile is one 128-byte swizzle row");
static_assert(BM == 2 * 64, "one m64 wgmma per warpgroup");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// A chunk cut by an edge (or wholly past it): its `valid` elements read one
// by one, the rest zero, stored with an ordinary 16-byte store. A cp.async
// with a src-size under 16 was reported by compute-sanitizer as a 16-byte
// read past the operand's end; no read here leaves the operand.
__device__ inline void store_partial(std::uint32_t dst, const u16* __restrict__ src, int valid) {
  std::uint32_t w[4];
#pragma unroll
  for (int e = 0; e < 8; e += 2) {
    const std::uint32_t lo = e < valid ? src[e] : 0u, hi = e + 1 < valid ? src[e + 1] : 0u;
    w[e / 2] = lo | (hi << 16);
  }
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3])
               : "memory");
}
// cp.async and st.shared write through the generic proxy; wgmma reads through the async proxy.
__device__ inline void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ inline void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ inline void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Pins the accumulators in place around the asynchronous MMAs: without it
// the compiler may move their zeroing (or copies) into the stretch between
// issue and wait, which ptxas answers by serializing the wgmmas (C7515).
__device__ inline void fence_accumulators(float (&d)[128]) {
#pragma unroll
  for (int r = 0; r < 128; ++r) asm volatile("" : "+f"(d[r])::"memory");
}

// Shared-memory matrix descriptor, 128-byte swizzle (mode 1, bits 62-63):
// start address, leading and stride byte offsets, each in 16-byte units.
__device__ inline std::uint64_t descriptor(std::uint32_t addr, std::uint32_t lbo, std::uint32_t sbo) {
  return static_cast<std::uint64_t>((addr >> 4) & 0x3fff) | static_cast<std::uint64_t>((lbo >> 4) & 0x3fff) << 16 |
         static_cast<std::uint64_t>((sbo >> 4) & 0x3fff) << 32 | std::uint64_t{1} << 62;
}

#define POPPER_WGMMA_D8(i)                                                                                \
  "+f"(d[(i)]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]), "+f"(d[(i) + 5]), \
      "+f"(d[(i) + 6]), "+f"(d[(i) + 7])
#define POPPER_WGMMA_D128                                                                                        \
  POPPER_WGMMA_D8(0), POPPER_WGMMA_D8(8), POPPER_WGMMA_D8(16), POPPER_WGMMA_D8(24), POPPER_WGMMA_D8(32),         \
      POPPER_WGMMA_D8(40), POPPER_WGMMA_D8(48), POPPER_WGMMA_D8(56), POPPER_WGMMA_D8(64), POPPER_WGMMA_D8(72),   \
      POPPER_WGMMA_D8(80), POPPER_WGMMA_D8(88), POPPER_WGMMA_D8(96), POPPER_WGMMA_D8(104), POPPER_WGMMA_D8(112), \
      POPPER_WGMMA_D8(120)
#define POPPER_WGMMA_ASM(TYPE)                                                                        \
  "wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE                                        \
  "\n"                                                                                                \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                           \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                  \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                  \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                  \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                  \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                  \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "      \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, " \
  "%128, %129, 1, 1, 1, %130, %131;\n"

// D += A B for one warpgroup: D 64 x 256 (FP32), A 64 x 16 and B 16 x 256
// from shared memory; TRANS_A / TRANS_B: the operand is MN-major.
template <class T, int TRANS_A, int TRANS_B>
__device__ inline void wgmma_m64n256k16(float (&d)[128], std::uint64_t da, std::uint64_t db) {
  if constexpr (std::is_same_v<T, __half>)
    asm volatile(POPPER_WGMMA_ASM("f16") : POPPER_WGMMA_D128 : "l"(da), "l"(db), "n"(TRANS_A), "n"(TRANS_B));
  else asm volatile(POPPER_WGMMA_ASM("bf16") : POPPER_WGMMA_D128 : "l"(da), "l"(db), "n"(TRANS_A), "n"(TRANS_B));
}

// One operand's tile as stored in a stage: LINES lines of WIDTH elements,
// the width along the operand's contiguous dimension (k for a K-major
// operand, m or n for an MN-major one). Stored as WIDTH / 64 column blocks of
// LINES 128-byte lines each, 16-byte chunk q of line l at chunk q ^ (l % 8):
// the canonical 128-byte-swizzled layout of wgmma, K-major (one column
// block, 8-line groups 1024 bytes apart) or MN-major (column blocks LINES *
// 128 bytes apart, 8-line groups along k 1024 bytes apart).
template <int WIDTH, int LINES>
struct TileCopy {
  static constexpr int CHUNKS = WIDTH / 8, STEP = THREADS / CHUNKS, PASSES = LINES / STEP;
  static_assert(STEP % 8 == 0, "a thread's lines share one swizzle phase");
  static_assert(PASSES * STEP == LINES, "the threads cover the tile");

  // x(line, e) = x[line * ld + e]: the tile's lines l0.., elements e0..;
  // lines past `lines`, elements past `width` read as 0.
  __device__ static void copy(std::uint32_t stage, const u16* __restrict__ x, long long ld, long long lines,
                              long long width, long long l0, long long e0, int tid) {
    const int q = tid % CHUNKS, first = tid / CHUNKS;
    const long long e = e0 + q * 8, left = width - e;
    const int bytes = left >= 8 ? 16 : left > 0 ? static_cast<int>(left) * 2 : 0;
    const std::uint32_t dst = stage + (q / 8) * (LINES * 128) + first * 128 + (((q % 8) ^ (first % 8)) << 4);
    const u16* src = x + (l0 + first) * ld + e;
#pragma unroll
    for (int p = 0; p < PASSES; ++p) {
      const bool in = bytes > 0 && l0 + first + p * STEP < lines;
      if (in && bytes == 16) cp_async16(dst + p * STEP * 128, src + p * STEP * ld, 16);
      else store_partial(dst + p * STEP * 128, src + p * STEP * ld, in ? bytes / 2 : 0);
    }
  }
};

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// A_K: A(i, p..p+7) contiguous (a_cs == 1), K-major; else A(i..i+7, p) (a_rs == 1), M-major.
// B_K: B(p..p+7, j) contiguous (b_rs == 1), K-major; else B(p, j..j+7) (b_cs == 1), N-major.
template <class T, bool A_K, bool B_K>
__global__ void __launch_bounds__(THREADS, 1) hand_gemm_wgmma(StridedOperands o, int tiles_m, int tiles_n) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t base = (static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw)) + 1023u) & ~1023u;
  const auto* a = static_cast<const u16*>(o.a);
  const auto* b = static_cast<const u16*>(o.b);
  const int tid = threadIdx.x, wg = tid / 128;

  // Groups of GROUP_M block rows, column-major within the group.
  const int per_group = GROUP_M * tiles_n, group = static_cast<int>(blockIdx.x) / per_group;
  const int first_m = group * GROUP_M, group_m = min(tiles_m - first_m, GROUP_M);
  const int in_group = static_cast<int>(blockIdx.x) % per_group;
  const long long i0 = static_cast<long long>(first_m + in_group % group_m) * BM;
  const long long j0 = static_cast<long long>(in_group / group_m) * BN;

  using CopyA = TileCopy<A_K ? BK : BM, A_K ? BM : BK>;
  using CopyB = TileCopy<B_K ? BK : BN, B_K ? BN : BK>;
  const long long tiles = (o.k + BK - 1) / BK;
  // Always commits a group (empty past the last tile) so that the wait
  // counts below hold to the end.
  const auto issue = [&](long long t) {
    if (t < tiles) {
      const std::uint32_t sa = base + static_cast<std::uint32_t>(t % STAGES) * kStageBytes, sb = sa + kABytes;
      const long long p0 = t * BK;
      if constexpr (A_K) CopyA::copy(sa, a, o.a_rs, o.m, o.k, i0, p0, tid);
      else CopyA::copy(sa, a, o.a_cs, o.k, o.m, p0, i0, tid);
      if constexpr (B_K) CopyB::copy(sb, b, o.b_cs, o.n, o.k, j0, p0, tid);
      else CopyB::copy(sb, b, o.b_rs, o.k, o.n, p0, j0, tid);
    }
    cp_async_commit();
  };

  float d[128];
#pragma unroll
  for (int r = 0; r < 128; ++r) d[r] = 0.0f;

  // K-major: 8-line groups 1024 bytes apart (leading offset unused: 16), a
  // k16 step 32 bytes into the swizzled line. MN-major: 64-wide column
  // blocks BK * 128 bytes apart, 8-line groups along k 1024 bytes apart, a
  // k16 step 16 lines = 2048 bytes.
  constexpr std::uint32_t kLboA = A_K ? 16 : BK * 128, kLboB = B_K ? 16 : BK * 128;
  constexpr std::uint32_t kStepA = A_K ? 32 : 2048, kStepB = B_K ? 32 : 2048;
  const std::uint32_t wg_a = wg * (A_K ? 64 * 128 : BK * 128);  // the warpgroup's 64 rows of A

  issue(0);
  issue(1);
  for (long long t = 0; t < tiles; ++t) {
    cp_async_wait<1>();  // this thread's chunks of tile t have landed (tile t + 1 may be in flight)
    fence_proxy_async();
    // Every thread's chunks of tile t are in; and every warpgroup has retired
    // its MMAs of tile t - 2 (wgmma_wait<1> below), whose stage is refilled next.
    __syncthreads();
    issue(t + 2);
    const std::uint32_t sa = base + static_cast<std::uint32_t>(t % STAGES) * kStageBytes, sb = sa + kABytes;
    fence_accumulators(d);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)
      wgmma_m64n256k16<T, A_K ? 0 : 1, B_K ? 0 : 1>(d, descriptor(sa + wg_a + kk * kStepA, kLboA, 1024),
                                                    descriptor(sb + kk * kStepB, kLboB, 1024));
    wgmma_commit();
    fence_accumulators(d);
    // Tile t - 1's MMAs done, tile t's may still run; after the last tile,
    // all done. Waiting for all here rather than after the loop keeps the
    // k = 0 path's zeros out of the MMAs' pipeline stage (ptxas would
    // serialize the wgmmas, C7515).
    if (t + 1 < tiles) wgmma_wait<1>();
    else wgmma_wait<0>();
    fence_accumulators(d);
  }

  // Accumulator layout of m64nNk16: warp w of the warpgroup holds rows
  // 16 w + lane / 4 (+ 8), columns 8 j + 2 (lane % 4) (+ 1) in d[4 j ..].
  const int warp = (tid / 32) % 4, lane = tid % 32;
  const long long m_left = o.m - i0, n_left = o.n - j0;
  const int row0 = wg * 64 + warp * 16 + lane / 4, col0 = 2 * (lane % 4);
  const bool pairs = o.c_cs == 1;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = row0 + 8 * h;
    if (r >= m_left) continue;
    float* c_row = o.c + (i0 + r) * o.c_rs + j0 * o.c_cs;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const int c = 8 * j + col0;
      if (c >= n_left) break;
      const float v0 = o.alpha * d[4 * j + 2 * h], v1 = o.alpha * d[4 * j + 2 * h + 1];
      float* p0 = c_row + c * o.c_cs;
      if (pairs && c + 1 < n_left && (reinterpret_cast<std::uintptr_t>(p0) & 7) == 0) {
        float2 v = make_float2(v0, v1);
        if (o.beta != 0.0f) {
          const float2 old = *reinterpret_cast<const float2*>(p0);
          v.x = fmaf(o.beta, old.x, v0), v.y = fmaf(o.beta, old.y, v1);
        }
        *reinterpret_cast<float2*>(p0) = v;
        continue;
      }
      *p0 = o.beta == 0.0f ? v0 : fmaf(o.beta, *p0, v0);
      if (c + 1 < n_left) {
        float* p1 = p0 + o.c_cs;
        *p1 = o.beta == 0.0f ? v1 : fmaf(o.beta, *p1, v1);
      }
    }
  }
#else
  (void)o, (void)tiles_m, (void)tiles_n;
#endif
}

template <class T, bool A_K, bool B_K>
int launch(const StridedOperands& o, cudaStream_t st) {
  const auto kernel = hand_gemm_wgmma<T, A_K, B_K>;
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  if (e != cudaSuccess) return static_cast<int>(e);
  const int tiles_m = static_cast<int>((o.m + BM - 1) / BM), tiles_n = static_cast<int>((o.n + BN - 1) / BN);
  kernel<<<static_cast<unsigned>(tiles_m) * static_cast<unsigned>(tiles_n), THREADS, kSmemBytes, st>>>(o, tiles_m,
                                                                                                       tiles_n);
  return static_cast<int>(cudaGetLastError());
}

template <class T>
int launch_type(const StridedOperands& o, cudaStream_t st) {
  const bool a_k = o.a_cs == 1, b_k = o.b_rs == 1;
  if (a_k && b_k) return launch<T, true, true>(o, st);
  if (a_k) return launch<T, true, false>(o, st);
  if (b_k) return launch<T, false, true>(o, st);
  return launch<T, false, false>(o, st);
}

}  // namespace

int probe_hand_gemm_wgmma() {
  cudaFuncAttributes attributes{};
  const cudaError_t e = cudaFuncGetAttributes(&attributes, hand_gemm_wgmma<__half, true, false>);
  if (e != cudaSuccess) (void)cudaGetLastError();  // not sticky: keep it from the next launch's check
  return static_cast<int>(e);
}

int launch_hand_gemm_wgmma(HalfType type, const StridedOperands& o, void* stream) {
  const auto st = static_cast<cudaStream_t>(stream);
  return type == HalfType::Bf16 ? launch_type<__nv_bfloat16>(o, st) : launch_type<__half>(o, st);
}

}  // namespace popper::gemm::cuda::detail
