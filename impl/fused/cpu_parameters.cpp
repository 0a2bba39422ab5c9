// Drivers of the passes over every parameter (fused.hpp): the ISA table's
// all_finite and adamw_range.
#include "impl/fused/driver.hpp"
#include "popper/mutant.hpp"

namespace popper::fused {

namespace {
const detail::KernelTable& table(Isa isa, const char* who) {
  ExecOptions o;
  o.isa = isa;
  return detail::table_for(o, who);
}
}  // namespace

bool all_finite(std::span<const float> x, Isa isa) {
  const std::uint32_t mut = POPPER_MUTANT("train-finite-scan-tail-skipped") ? detail::kMutFiniteScanTail : 0u;
  return table(isa, "fused::all_finite").all_finite(x.data(), static_cast<std::int64_t>(x.size()), mut);
}

bool adamw_range(float* p, float* m, float* v, const float* g, std::int64_t n, float decay, const AdamWConstants& k,
                 Isa isa) {
  const detail::AdamWArgs a{k.b1, k.b2, k.one_b1, k.one_b2, k.step_size, k.inv_sqrt_c2, k.eps};
  return table(isa, "fused::adamw_range").adamw_range(p, m, v, g, n, decay, a);
}

}  // namespace popper::fused
