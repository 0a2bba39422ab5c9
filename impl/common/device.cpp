#include "impl/common/device.hpp"

#if POPPER_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace popper::device {

namespace {
CudaStatus probe() {
  CudaStatus s;
#if POPPER_HAVE_CUDA
  s.compiled = true;
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    s.device_count = 0;
    s.reason = std::string("no CUDA device: ") + cudaGetErrorString(err);
  } else if (n == 0) {
    s.reason = "no CUDA device";
  } else {
    s.device_count = n;
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
    s.arch = "sm_" + std::to_string(major) + std::to_string(minor);
  }
#else
  s.reason = "no CUDA device: popper was built without CUDA";
#endif
  return s;
}
}  // namespace

const CudaStatus& cuda_status() {
  static const CudaStatus status = probe();
  return status;
}

}  // namespace popper::device
