// What one accelerated call actually ran on. Device entry points (Vulkan,
// CUDA) return it; the caller records it as evidence (falsifiers:
// popper::record_backend / record_decline; benches: the row's backend), since
// popper_impl does not link the harness.
//
//   ran on the device:  backend = "vulkan:llvmpipe", declined_device empty
//   declined:           backend = the CPU path that served the call ("cpu:avx512"),
//                       declined_device = "vulkan", decline_reason = why
#pragma once
#include <string>

namespace popper::device {

struct Execution {
  std::string backend;
  std::string declined_device;
  std::string decline_reason;
  bool declined() const { return !declined_device.empty(); }
  bool ran_on(const std::string& device) const {
    return backend.size() >= device.size() && backend.compare(0, device.size(), device) == 0 &&
           (backend.size() == device.size() || backend[device.size()] == ':');
  }
};

}  // namespace popper::device
