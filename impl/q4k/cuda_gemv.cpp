// CUDA tier of the Q4_K GEMV: host side of cuda/gemv_q4k.cu (order and
// formula in device_q4k.hpp). Without a usable device it declines to the
// hand CPU kernel; sizes are checked first either way.
#include <string>

#include "impl/common/device.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"
#include "impl/q4k/device_q4k.hpp"

#if POPPER_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "impl/q4k/cuda/gemv_q4k_launch.hpp"
#endif

namespace popper::q4k {
namespace {

#if POPPER_HAVE_CUDA
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("q4k::gemv_cuda: ") + what + ": " + cudaGetErrorString(e));
}

// Device allocation freed on scope exit.
struct DeviceBytes {
  void* p = nullptr;
  explicit DeviceBytes(std::size_t n) { check(cudaMalloc(&p, n == 0 ? 1 : n), "cudaMalloc"); }
  ~DeviceBytes() { cudaFree(p); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
};
#endif

}  // namespace

device::Execution gemv_cuda(std::span<const Block> w, std::int64_t rows, std::int64_t cols, std::span<const float> x,
                            std::span<float> y, const cpu::CpuOptions& fallback) {
  check_gemv_args(rows, cols, w.size(), x.size(), y.size());
  const auto& st = device::cuda_status();
  if (!st.usable()) {
    // Mutation point (q4k-decline-drops-last-row): the fallback forgets the last row.
    const std::int64_t served = POPPER_MUTANT("q4k-decline-drops-last-row") && rows > 0 ? rows - 1 : rows;
    cpu::gemv(w, served, cols, x, y, fallback);
    return {cpu::backend_tag(fallback.isa), "cuda", st.reason};
  }
#if POPPER_HAVE_CUDA
  const std::size_t wb = matrix_bytes(rows, cols);
  const std::size_t xb = static_cast<std::size_t>(cols) * sizeof(float),
                    yb = static_cast<std::size_t>(rows) * sizeof(float);
  DeviceBytes dw(wb), dx(xb), dy(yb);
  check(cudaMemcpy(dw.p, w.data(), wb, cudaMemcpyHostToDevice), "cudaMemcpy W");
  check(cudaMemcpy(dx.p, x.data(), xb, cudaMemcpyHostToDevice), "cudaMemcpy x");
  check(static_cast<cudaError_t>(cuda::detail::launch_gemv_q4k(dw.p, static_cast<const float*>(dx.p),
                                                               static_cast<float*>(dy.p), rows, cols, nullptr)),
        "launch");
  check(cudaMemcpy(y.data(), dy.p, yb, cudaMemcpyDeviceToHost), "cudaMemcpy y");
  int dev = 0, major = 0, minor = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  return {"cuda:sm_" + std::to_string(major * 10 + minor), "", ""};
#else
  return {};  // unreachable: usable() is false without CUDA
#endif
}

}  // namespace popper::q4k
