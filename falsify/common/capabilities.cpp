// Registers the device capabilities a contract's `requires:` can name.
#include "common/device.hpp"
#include "popper/binding.hpp"

POPPER_CAPABILITY("cuda", [] {
  const auto& s = popper::device::cuda_status();
  return popper::CapabilityStatus{s.usable(), s.reason};
});
