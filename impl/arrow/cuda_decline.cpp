// Without a CUDA build the device entry always declines (the CPU serves).
#include "impl/arrow/kernels.hpp"

#if !POPPER_HAVE_CUDA
namespace popper::arrow {
bool run_cuda(const BatchedK1Pack&, std::span<const AtomSlice>, double, double, RawOutputs&) { return false; }
}  // namespace popper::arrow
#endif
