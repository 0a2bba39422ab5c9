// Hand SGEMM on the SIMT cores (the CUDA hand tier, FP32):
//
//   C(i, j) = alpha * sum_p A(i, p) * B(p, j) + beta * C(i, j),  FP32 accumulate (fmaf)
//
// Block tile 128 x 128, k step 8, 256 threads; each thread owns an 8 x 8
// register tile of C: rows ty*4 + {0..3} and 64 + ty*4 + {0..3}, columns
// likewise from tx (tx = tid % 16, ty = tid / 16), so each k step is two
// float4 reads of A and two of B from shared memory and 64 FMAs. A is kept
// k-major in shared memory (as[p][i]) and so is B (bs[p][j]), both double
// buffered: the next k step's tile is loaded into registers (one 4-element
// vector per thread and operand, float4 where the host allowed it) while
// the current one is multiplied, then stored to the other buffer; one
// barrier a step. Operands are addressed through (row, col) strides, so every
// layout and transpose is served; the thread-to-element mapping follows the
// operand's contiguous dimension (template arguments) to keep loads
// coalesced. Ragged edges read zeros and write nothing. ptxas resource usage
// is recorded at build time (impl/gemm/impl.cmake) and checked by FALSIFY-GEMM-011.
#include <cuda_runtime.h>

#include "impl/gemm/cuda/hand_gemm_launch.hpp"

namespace popper::gemm::cuda::detail {
namespace {

constexpr int BM = kSimtTileM, BN = kSimtTileN, BK = kSimtTileK;
constexpr int THREADS = 256;
// Row stride 132 floats: the two k rows a warp's transposing stores write
// fall in different banks, and every row stays 16-byte aligned.
constexpr int PAD = 4;
static_assert(BM * BK == 4 * THREADS && BN * BK == 4 * THREADS, "one 4-element vector per thread and operand");
static_assert(BM == 128 && BN == 128, "the 8 x 8 thread tile covers 2 x 64 rows and columns");

struct Quad {
  float v[4];
};

// Elements x[0], x[stride], ... of which the first `valid` exist, the rest 0:
// the ragged edge and unaligned operands, kept out of line so that its
// registers do not weigh on the vector path's.
__device__ __noinline__ Quad load_guarded(const float* __restrict__ x, std::int64_t stride, int valid) {
  Quad q;
#pragma unroll
  for (int e = 0; e < 4; ++e) q.v[e] = e < valid ? x[e * stride] : 0.0f;
  return q;
}

// The thread's 4 elements of each k tile of X (rows x cols, X(r, c) =
// x[r rs + c cs], the k tile a range of columns): along c when C_CONTIG (row
// tid / 2, columns (tid % 2) * 4 + e of the 8-wide tile), else along r (rows
// (tid % (WIDE / 4)) * 4 + e, column tid / (WIDE / 4)). WIDE: the tile's rows.
// It keeps only the offset and the extents left (the pointer and strides are
// read from the kernel's parameters where used), to spare registers.
template <bool C_CONTIG, int WIDE>
struct TileReader {
  std::int64_t offset;       // of element (r, c)
  int rows_left, cols_left;  // from (r, c) to the ends of X; <= 0 in a ragged block's idle part

  __device__ TileReader(std::int64_t rs, std::int64_t cs, std::int64_t rows, std::int64_t cols, std::int64_t r0,
                        int tid) {
    const std::int64_t r = r0 + (C_CONTIG ? tid / 2 : (tid % (WIDE / 4)) * 4);
    const std::int64_t c = C_CONTIG ? (tid % 2) * 4 : tid / (WIDE / 4);
    offset = r * rs + c * cs;
    rows_left = static_cast<int>(rows - r);
    cols_left = static_cast<int>(cols - c);
  }
  __device__ Quad load(const float* __restrict__ x, std::int64_t rs, std::int64_t cs, bool vector) const {
    Quad q;
    const int along = C_CONTIG ? cols_left : rows_left, across = C_CONTIG ? rows_left : cols_left;
    if (vector && across > 0 && along >= 4) {
      const float4 v = *reinterpret_cast<const float4*>(x + offset);
      q.v[0] = v.x, q.v[1] = v.y, q.v[2] = v.z, q.v[3] = v.w;
      return q;
    }
    return load_guarded(x + offset, C_CONTIG ? cs : rs, across > 0 ? along : 0);
  }
  __device__ void next(std::int64_t cs) { offset += BK * cs, cols_left -= BK; }
};

// as[p][i] = A(i0 + i, p0 + p): A is (m x k) with its k-tile as columns.
template <bool K_CONTIG>
__device__ inline void store_a(float (*as)[BM + PAD], const Quad& q, int tid) {
  if (K_CONTIG) {
    const int i = tid / 2, p = (tid % 2) * 4;
#pragma unroll
    for (int e = 0; e < 4; ++e) as[p + e][i] = q.v[e];
  } else {
    const int i = (tid % (BM / 4)) * 4, p = tid / (BM / 4);
    *reinterpret_cast<float4*>(&as[p][i]) = make_float4(q.v[0], q.v[1], q.v[2], q.v[3]);
  }
}

// bs[p][j] = B(p0 + p, j0 + j); loaded as the transposed tile (rows j, cols p).
template <bool K_CONTIG>
__device__ inline void store_b(float (*bs)[BN + PAD], const Quad& q, int tid) {
  if (K_CONTIG) {
    const int j = tid / 2, p = (tid % 2) * 4;
#pragma unroll
    for (int e = 0; e < 4; ++e) bs[p + e][j] = q.v[e];
  } else {
    const int j = (tid % (BN / 4)) * 4, p = tid / (BN / 4);
    *reinterpret_cast<float4*>(&bs[p][j]) = make_float4(q.v[0], q.v[1], q.v[2], q.v[3]);
  }
}

// A_K: A(i, p..p+3) contiguous (a_cs == 1), else A(i..i+3, p) (a_rs == 1).
// B_K: B(p..p+3, j) contiguous (b_rs == 1), else B(p, j..j+3) (b_cs == 1).
template <bool A_K, bool B_K>
__global__ void __launch_bounds__(THREADS, 2) hand_sgemm(StridedOperands o) {
  __shared__ __align__(16) float as[2][BK][BM + PAD];
  __shared__ __align__(16) float bs[2][BK][BN + PAD];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const std::int64_t i0 = static_cast<std::int64_t>(blockIdx.y) * BM, j0 = static_cast<std::int64_t>(blockIdx.x) * BN;
  // A is read as (rows i, cols p), B as B^T (rows j, cols p): the k tile is the column range of both.
  const auto* a = static_cast<const float*>(o.a);
  const auto* b = static_cast<const float*>(o.b);
  TileReader<A_K, BM> ra(o.a_rs, o.a_cs, o.m, o.k, i0, tid);
  TileReader<B_K, BN> rb(o.b_cs, o.b_rs, o.n, o.k, j0, tid);

  float acc[8][8] = {};
  const std::int64_t tiles = (o.k + BK - 1) / BK;
  if (tiles > 0) {
    store_a<A_K>(as[0], ra.load(a, o.a_rs, o.a_cs, o.a_vector), tid);
    store_b<B_K>(bs[0], rb.load(b, o.b_cs, o.b_rs, o.b_vector), tid);
  }
  __syncthreads();
  for (std::int64_t t = 0; t < tiles; ++t) {
    const int cur = static_cast<int>(t & 1);
    Quad next_a{}, next_b{};
    const bool more = t + 1 < tiles;
    if (more) {  // in flight during the FMAs
      ra.next(o.a_cs), rb.next(o.b_rs);
      next_a = ra.load(a, o.a_rs, o.a_cs, o.a_vector), next_b = rb.load(b, o.b_cs, o.b_rs, o.b_vector);
    }
#pragma unroll
    for (int p = 0; p < BK; ++p) {
      float av[8], bv[8];
      const float4 a_lo = *reinterpret_cast<const float4*>(&as[cur][p][ty * 4]);
      const float4 a_hi = *reinterpret_cast<const float4*>(&as[cur][p][64 + ty * 4]);
      const float4 b_lo = *reinterpret_cast<const float4*>(&bs[cur][p][tx * 4]);
      const float4 b_hi = *reinterpret_cast<const float4*>(&bs[cur][p][64 + tx * 4]);
      av[0] = a_lo.x, av[1] = a_lo.y, av[2] = a_lo.z, av[3] = a_lo.w;
      av[4] = a_hi.x, av[5] = a_hi.y, av[6] = a_hi.z, av[7] = a_hi.w;
      bv[0] = b_lo.x, bv[1] = b_lo.y, bv[2] = b_lo.z, bv[3] = b_lo.w;
      bv[4] = b_hi.x, bv[5] = b_hi.y, bv[6] = b_hi.z, bv[7] = b_hi.w;
#pragma unroll
      for (int r = 0; r < 8; ++r)
#pragma unroll
        for (int c = 0; c < 8; ++c) acc[r][c] = fmaf(av[r], bv[c], acc[r][c]);
    }
    if (more) {
      store_a<A_K>(as[cur ^ 1], next_a, tid);
      store_b<B_K>(bs[cur ^ 1], next_b, tid);
    }
    __syncthreads();
  }

  // The block's rows and columns left of C (ragged edges), 32-bit from here on.
  const int m_left = static_cast<int>(o.m - i0), n_left = static_cast<int>(o.n - j0);
  float* c_block = o.c + i0 * o.c_rs + j0 * o.c_cs;
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    const int i = r < 4 ? ty * 4 + r : 64 + ty * 4 + r - 4;
    if (i >= m_left) continue;
    float* c_row = c_block + i * o.c_rs;
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      const int j = c < 4 ? tx * 4 + c : 64 + tx * 4 + c - 4;
      if (j >= n_left) continue;
      float* cij = c_row + j * o.c_cs;
      const float ab = o.alpha * acc[r][c];
      *cij = o.beta == 0.0f ? ab : fmaf(o.beta, *cij, ab);
    }
  }
}

}  // namespace

int launch_hand_gemm_f32(const StridedOperands& o, void* stream) {
  if (o.m == 0 || o.n == 0) return 0;
  const dim3 grid(static_cast<unsigned>((o.n + BN - 1) / BN), static_cast<unsigned>((o.m + BM - 1) / BM));
  const auto st = static_cast<cudaStream_t>(stream);
  const bool a_k = o.a_cs == 1, b_k = o.b_rs == 1;
  if (a_k && b_k) hand_sgemm<true, true><<<grid, THREADS, 0, st>>>(o);
  else if (a_k) hand_sgemm<true, false><<<grid, THREADS, 0, st>>>(o);
  else if (b_k) hand_sgemm<false, true><<<grid, THREADS, 0, st>>>(o);
  else hand_sgemm<false, false><<<grid, THREADS, 0, st>>>(o);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace popper::gemm::cuda::detail
