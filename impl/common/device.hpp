// Runtime view of the accelerators this process can use. Every device entry
// point asks here first and declines to the CPU path when the answer is no.
#pragma once
#include <string>

namespace popper::device {

struct CudaStatus {
  bool compiled = false;  // popper was built with CUDA (POPPER_HAVE_CUDA)
  int device_count = 0;   // devices the runtime reports (0 when none or no driver)
  std::string reason;     // why no device is usable; empty when one is
  std::string arch;       // "sm_90" of device 0 when usable
  bool usable() const { return compiled && device_count > 0; }
  // The evidence tag of work done on the device: "cuda:sm_90".
  std::string backend_tag() const { return "cuda:" + (arch.empty() ? std::string("unknown") : arch); }
};

// Probed once per process, then cached.
const CudaStatus& cuda_status();

}  // namespace popper::device
