#include "popper/binding.hpp"
#include "popper/contract.hpp"

namespace popper {

PreparedCall prepare_bound(const Contract& c, const std::string& id, const Registry& registry) {
  PreparedCall call;
  const FalsificationTest* test = c.find_test(id);
  const KaniHarness* harness = c.find_harness(id);
  if (!test && !harness) {
    call.reason = id + " is not in " + c.path + " (the generated tests are stale: rebuild)";
    return call;
  }
  for (const auto& cap : test ? test->requires_ : harness->requires_) {
    const CapabilityStatus s = capability(cap);
    if (!s.available) {
      call.outcome = Outcome::Skipped;
      call.reason = "requires " + cap + ": " + s.reason;
      return call;
    }
  }
  const Binding* b = registry.find(id);
  if (!b) {
    call.outcome = Outcome::Unbound;
    call.reason = std::string("UNBOUND: no ") + (test ? "POPPER_FALSIFIER" : "POPPER_HARNESS") + "(\"" + id +
                  "\") is registered, so nothing was tested";
    return call;
  }
  if ((b->kind == BindingKind::Harness) != (harness != nullptr)) {
    call.reason = id + " is a " + (harness ? "kani harness" : "falsification test") + " but is bound with " +
                  (b->kind == BindingKind::Harness ? "POPPER_HARNESS" : "POPPER_FALSIFIER") + " at " + b->file + ":" +
                  std::to_string(b->line);
    return call;
  }
  call.outcome = Outcome::Passed;
  call.binding = b;
  call.params = Params(id, test ? test->params : harness->params);
  return call;
}

}  // namespace popper
