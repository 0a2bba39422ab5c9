// Q4_K GEMV on CUDA: one warp per row, FP32, in the 32-lane strided order
// (accum::Order::Warp32): lane l sums fl(w_i * x_i) for i = l, l+32, ... in
// increasing i, then __shfl_down_sync with offsets 16, 8, 4, 2, 1; lane 0
// holds y_r. The _rn intrinsics forbid contraction into FMA, so the result
// equals the CPU emulation of the order bit for bit.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "impl/q4k/cuda/gemv_q4k_launch.hpp"

namespace popper::q4k::cuda::detail {
namespace {

constexpr int kWarpsPerBlock = 4;

__device__ inline unsigned block_byte(const unsigned char* blk, unsigned i) { return blk[i]; }

__global__ void gemv_q4k_kernel(const unsigned char* __restrict__ w, const float* __restrict__ x, float* __restrict__ y,
                                long long rows, long long cols) {
  const long long row = static_cast<long long>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const unsigned lane = threadIdx.x % 32;
  if (row >= rows) return;  // whole warp leaves together
  const long long nb = cols / 256;
  float acc = 0.0f;
  for (long long b = 0; b < nb; ++b) {
    const unsigned char* blk = w + (row * nb + b) * 144;
    const unsigned short dh = static_cast<unsigned short>(blk[0] | (blk[1] << 8));
    const unsigned short mh = static_cast<unsigned short>(blk[2] | (blk[3] << 8));
    const float d = __half2float(__ushort_as_half(dh));
    const float dmin = __half2float(__ushort_as_half(mh));
    for (unsigned j = 0; j < 8; ++j) {
      unsigned sc, mn;
      if (j < 4) {
        sc = block_byte(blk, 4 + j) & 63u;
        mn = block_byte(blk, 8 + j) & 63u;
      } else {
        sc = (block_byte(blk, 8 + j) & 15u) | ((block_byte(blk, j) >> 6) << 4);
        mn = (block_byte(blk, 8 + j) >> 4) | ((block_byte(blk, 4 + j) >> 6) << 4);
      }
      const unsigned byte = block_byte(blk, 16 + 32 * (j / 2) + lane);
      const unsigned q = (j % 2 == 0) ? (byte & 15u) : (byte >> 4);
      const float scale = __fmul_rn(d, static_cast<float>(sc));
      const float offset = __fmul_rn(dmin, static_cast<float>(mn));
      const float wv = __fsub_rn(__fmul_rn(scale, static_cast<float>(q)), offset);
      acc = __fadd_rn(acc, __fmul_rn(wv, x[256 * b + 32 * j + lane]));
    }
  }
  for (int off = 16; off > 0; off >>= 1) acc = __fadd_rn(acc, __shfl_down_sync(0xFFFFFFFFu, acc, off));
  if (lane == 0) y[row] = acc;
}

}  // namespace

int launch_gemv_q4k(const void* w, const float* x, float* y, std::int64_t rows, std::int64_t cols, void* stream) {
  if (rows == 0) return 0;
  const long long blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  gemv_q4k_kernel<<<static_cast<unsigned>(blocks), 32 * kWarpsPerBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const unsigned char*>(w), x, y, rows, cols);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace popper::q4k::cuda::detail
