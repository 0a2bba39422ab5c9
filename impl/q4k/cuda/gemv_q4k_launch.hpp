// Internal: launcher of the Q4_K GEMV CUDA kernel (gemv_q4k.cu): one warp per
// row, the 32-lane strided order of device_q4k.hpp, no fused multiply-add.
#pragma once
#include <cstdint>

namespace popper::q4k::cuda::detail {

// w: rows * cols/256 blocks of 144 bytes; x: cols floats; y: rows floats
// (all device pointers). Returns the cudaError_t of the launch as an int.
int launch_gemv_q4k(const void* w, const float* x, float* y, std::int64_t rows, std::int64_t cols, void* stream);

}  // namespace popper::q4k::cuda::detail
