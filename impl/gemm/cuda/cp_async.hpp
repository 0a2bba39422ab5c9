// Internal: the asynchronous global-to-shared copies (sm_80 and later) of the
// tensor-core GEMM kernels, hand_gemm_tc.cu and hand_gemm_wgmma_sm90a.cu.
#pragma once
#include <cstdint>

namespace popper::gemm::cuda::detail {

// 16 bytes from gmem to the shared address smem_addr, of which the first
// src_bytes are read and the rest zero-filled.
__device__ inline void cp_async16(std::uint32_t smem_addr, const void* gmem, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr), "l"(gmem), "r"(src_bytes));
}
__device__ inline void cp_async16(void* smem, const void* gmem, int src_bytes) {
  cp_async16(static_cast<std::uint32_t>(__cvta_generic_to_shared(smem)), gmem, src_bytes);
}
__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Until at most N of this thread's committed groups are in flight.
template <int N>
__device__ inline void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace popper::gemm::cuda::detail
