// Internal: launcher of the hand tiled CUDA kernel (hand_gemm.cu).
//   C(i, j) = alpha * sum_p A(i, p) * B(p, j) + beta * C(i, j)
// with X(r, c) = x[r*rs + c*cs] (layout and op folded into strides by the
// caller). beta == 0: C is not read.
#pragma once
#include <cstdint>

namespace popper::gemm::cuda::detail {

// Tile geometry of the hand kernel: block tile BM x BN, k step BK.
inline constexpr int kHandTileM = 64, kHandTileN = 64, kHandTileK = 16;

struct StridedOperands {
  std::int64_t m, n, k;
  const float* a;
  std::int64_t a_rs, a_cs;
  const float* b;
  std::int64_t b_rs, b_cs;
  float* c;
  std::int64_t c_rs, c_cs;
  float alpha, beta;
};

// Returns the cudaError_t of the launch as an int (0 = success).
int launch_hand_gemm_f32(const StridedOperands& ops, void* stream);

}  // namespace popper::gemm::cuda::detail
