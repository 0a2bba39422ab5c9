// Shared pieces of the parity-gate falsifiers (contracts/multi-backend-parity-v1.yaml):
// the small canary at a given depth and the evidence a gate run leaves.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

#include "common/cpu_features.hpp"
#include "decode/forward.hpp"
#include "decode/model.hpp"
#include "decode/parity.hpp"
#include "popper/binding.hpp"

namespace popper::decode::testbed {

inline Model small_model(std::int64_t layers, std::uint64_t seed) {
  Config c = small_config();
  c.layers = layers;
  return make_canary(c, seed);
}

// Params: layers, seed, and optionally hidden and intermediate (wider rows
// give a GEMV more blocks to accumulate).
inline Model small_model(const popper::Params& p) {
  Config c = small_config();
  c.layers = p.integer("layers");
  c.hidden = p.integer("hidden", c.hidden);
  c.intermediate = p.integer("intermediate", c.intermediate);
  return make_canary(c, p.seed());
}

// The cpu backend is the gate's reference in every run.
inline void record_cpu_reference() { popper::record_backend(cpu::backend_tag(cpu::Isa::Scalar)); }

// Evidence of a gate run: what ran; with `declines`, also each candidate
// whose device was missing (only a test that judges that device records it:
// under POPPER_REQUIRE_DEVICE=1 a decline fails the test).
inline void record(const GateResult& g, bool declines = false) {
  record_cpu_reference();
  for (const auto& r : g.runs) {
    if (r.available) popper::record_backend(r.evidence);
    else if (declines) popper::record_decline(r.name, r.reason);
  }
}

inline const BackendRun* run_of(const GateResult& g, const std::string& name) {
  for (const auto& r : g.runs)
    if (r.name == name) return &r;
  return nullptr;
}

inline void print(const char* id, const GateResult& g) {
  for (const auto& r : g.runs)
    if (r.available)
      std::printf("[%s] %s (%s, fault %s): cosine %.9f, max abs %.3g, max rel %.3g, top1 %s, top5 %d/5 -> %s\n", id,
                  r.name.c_str(), r.evidence.c_str(), r.fault.c_str(), r.agreement.cosine, r.agreement.max_abs,
                  r.agreement.max_rel, r.agreement.top1 ? "yes" : "no", r.agreement.top5,
                  r.passed ? "pass" : "excluded");
    else
      std::printf("[%s] %s unavailable: %s\n", id, r.name.c_str(), r.reason.c_str());
  std::printf("[%s] selected %s\n", id, g.selected.c_str());
}

}  // namespace popper::decode::testbed
