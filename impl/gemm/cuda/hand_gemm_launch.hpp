// Internal: launchers of the hand CUDA GEMM kernels, hand_gemm.cu (FP32 on
// the SIMT cores) and hand_gemm_tc.cu (16-bit inputs on the tensor cores,
// FP32 accumulation; it hands aligned operands on sm_90 to the wgmma kernel
// of hand_gemm_wgmma_sm90a.cu):
//   C(i, j) = alpha * sum_p A(i, p) * B(p, j) + beta * C(i, j)
// with X(r, c) = x[r*rs + c*cs] (layout and op folded into strides by the
// caller, cuda_gemm.cpp, which also decides whether an operand may be read
// in 16-byte vectors). beta == 0: C is not read. m, n, k fit 31 bits.
#pragma once
#include <cstdint>

namespace popper::gemm::cuda::detail {

// Tile geometry: block tile M x N, k step K.
inline constexpr int kSimtTileM = 128, kSimtTileN = 128, kSimtTileK = 8;
inline constexpr int kTensorTileM = 128, kTensorTileN = 128, kTensorTileK = 32;
inline constexpr int kWgmmaTileM = 128, kWgmmaTileN = 256, kWgmmaTileK = 64;

struct StridedOperands {
  std::int64_t m, n, k;
  const void* a;  // float, or 16-bit values for the tensor-core kernel
  std::int64_t a_rs, a_cs;
  const void* b;
  std::int64_t b_rs, b_cs;
  float* c;
  std::int64_t c_rs, c_cs;
  float alpha, beta;
  // Whether A (B) may be read in 16-byte vectors along its contiguous
  // dimension: that stride is 1, the other stride a multiple of 16 bytes and
  // the base address 16-byte aligned.
  bool a_vector, b_vector;
};

// The 16-bit input types of the tensor-core kernel.
enum class HalfType { F16, Bf16 };

// Return the cudaError_t of the launch as an int (0 = success).
int launch_hand_gemm_f32(const StridedOperands& ops, void* stream);
// Runs the wgmma kernel where select_tc_kernel says so, else the WMMA one.
int launch_hand_gemm_tc(HalfType type, const StridedOperands& ops, void* stream);

// The tensor-core kernels and the choice between them. POPPER_CUDA_TC_KERNEL
// overrides the default (wgmma where available and the operands allow it):
// "wmma" always takes the WMMA kernel; "wgmma" takes the wgmma kernel for
// every call whose operands allow 16-byte reads, and fails the call with
// cudaErrorNotSupported when the device cannot run it; unset, empty or
// "auto": the default; anything else fails with cudaErrorInvalidValue.
enum class TcKernel { Wmma, Wgmma };
// The kernel for `ops` on the current device (0), or the cudaError_t that fails the call.
int select_tc_kernel(const StridedOperands& ops, TcKernel* kernel);
// Whether the current device runs the wgmma kernel: compute capability 9.0
// and an sm_90a image of it in this build.
bool tc_wgmma_available();
// Calls that took the wgmma kernel so far (process-wide).
std::uint64_t tc_wgmma_launches();

// hand_gemm_wgmma_sm90a.cu (built only for sm_90a, when nvcc has it:
// POPPER_HAVE_SM90A): the launch, no checks of its own, and
// cudaFuncGetAttributes of its kernel (0 when the image loads here).
int launch_hand_gemm_wgmma(HalfType type, const StridedOperands& ops, void* stream);
int probe_hand_gemm_wgmma();

}  // namespace popper::gemm::cuda::detail
