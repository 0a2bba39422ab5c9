// The CUDA entry of selection attention, host side. It checks the problem,
// runs the device kernel (cuda/selection_attention.cu) when a device is
// usable and the shape is admitted, and otherwise declines: the CPU hand
// kernel serves the call with identical results and the reason is returned
// (a decline is never evidence for the device).
#include "impl/common/device.hpp"
#include "impl/nsa/cuda_selection.hpp"
#include "impl/nsa/nsa.hpp"
#include "popper/mutant.hpp"

namespace popper::nsa {

RunInfo selection_attention_cuda(const SelectionProblem& p, SelectionOutput out, const HandOptions& cpu) {
  check_problem(p, out);
  const auto& status = popper::device::cuda_status();
  std::string why = status.usable() ? "" : status.reason;
#if POPPER_HAVE_CUDA
  if (status.usable()) {
    float scale = softmax_scale(p.layout.dim);
    if (POPPER_MUTANT("nsa-scale-twice")) scale *= scale;
    std::string backend;
    if (detail::run_selection_cuda(p, out, scale, backend, why)) return {backend, ""};
  }
#endif
  RunInfo info = POPPER_MUTANT("nsa-decline-to-fallback")
                     ? selection_attention_fallback(p, out, FallbackOptions{cpu.threads})
                     : selection_attention_hand(p, out, cpu);
  info.decline = why.empty() ? "declined" : why;
  return info;
}

}  // namespace popper::nsa
