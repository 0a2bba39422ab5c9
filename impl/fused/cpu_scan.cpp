// Finiteness scan driver (fused.hpp): the ISA table's all_finite over the span.
#include "impl/fused/driver.hpp"
#include "popper/mutant.hpp"

namespace popper::fused {

bool all_finite(std::span<const float> x, Isa isa) {
  ExecOptions o;
  o.isa = isa;
  const std::uint32_t mut = POPPER_MUTANT("train-finite-scan-tail-skipped") ? detail::kMutFiniteScanTail : 0u;
  return detail::table_for(o, "fused::all_finite").all_finite(x.data(), static_cast<std::int64_t>(x.size()), mut);
}

}  // namespace popper::fused
