#include <fmt/format.h>

#include "popper/binding.hpp"
#include "popper/contract.hpp"
#include "popper/mutant.hpp"

namespace popper {

// Order matters: a missing binding is UNBOUND whatever the test requires, so a
// deleted binding of a `requires: [cuda]` test can never hide as a skip.
PreparedCall prepare_bound(const Contract& c, const std::string& id, DeviceRule rule, const Registry& registry) {
  PreparedCall call;
  const FalsificationTest* test = c.find_test(id);
  const KaniHarness* harness = c.find_harness(id);
  if (!test && !harness) {
    call.reason = id + " is not in " + c.path + " (the generated tests are stale: rebuild)";
    return call;
  }
  const Binding* b = registry.find(id);
  if (!b && POPPER_MUTANT("binding-unbound-runs-as-pass")) {
    call.outcome = Outcome::Passed;
    return call;
  }
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
  for (const auto& cap : test ? test->requires_ : harness->requires_) {
    const CapabilityStatus s = capability(cap);
    if (!s.available) {
      // make gpu-check: a device the test needs must be there.
      call.outcome = rule == DeviceRule::DeclineFails && is_device_capability(cap) ? Outcome::Failed : Outcome::Skipped;
      call.reason = "requires " + cap + ": " + s.reason;
      return call;
    }
  }
  call.outcome = Outcome::Passed;
  call.binding = b;
  call.params = Params(id, test ? test->params : harness->params);
  call.requires_ = test ? test->requires_ : harness->requires_;
  return call;
}

}  // namespace popper

namespace popper {

RunResult judge_evidence(Outcome body_outcome, const std::string& body_reason,
                         const std::vector<std::string>& requires_, const Evidence& ev, DeviceRule rule) {
  const bool device_required = rule == DeviceRule::DeclineFails;
  if (body_outcome != Outcome::Passed) return {body_outcome, body_reason};
  if (device_required && !ev.declines.empty() && !POPPER_MUTANT("evidence-decline-passes-when-required"))
    return {Outcome::Failed, "a device path declined while POPPER_REQUIRE_DEVICE=1: " + ev.declines.front()};
  for (const auto& cap : requires_) {
    if (!is_device_capability(cap)) continue;
    bool seen = false;
    for (const auto& b : ev.backends)
      seen = seen || device_ran(cap, b.tag) || POPPER_MUTANT("evidence-any-tag-satisfies");
    if (seen) continue;
    std::string why = fmt::format("requires {0}: the {0} path did not run", cap);
    for (const auto& d : ev.declines)
      if (d.rfind(cap + ":", 0) == 0) why = fmt::format("requires {}: declined ({})", cap, d.substr(cap.size() + 2));
    if (ev.backends.empty()) why += "; no backend evidence was recorded";
    return {device_required ? Outcome::Failed : Outcome::Skipped, why};
  }
  return {Outcome::Passed, body_reason};
}

}  // namespace popper
