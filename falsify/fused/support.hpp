// Evidence and path selection shared by the fused falsifiers.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "impl/common/cpu_features.hpp"
#include "impl/fused/fused.hpp"
#include "popper/binding.hpp"
#include "popper/mutant.hpp"

namespace popper::fused::testing {

// Auto always; every other ISA the CPU supports when forced paths are allowed.
inline std::vector<Isa> isas_to_test() {
  std::vector<Isa> out{Isa::Auto};
  if (!popper::forced_paths_allowed()) return out;
  for (const auto isa : popper::cpu::supported_isas())
    if (isa != popper::cpu::auto_isa()) out.push_back(isa);
  return out;
}

inline ExecOptions opts(Isa isa, int threads, Allocator* a = nullptr) {
  ExecOptions o;
  o.isa = isa;
  o.threads = threads;
  o.allocator = a;
  return o;
}

// Records what a judged call ran on (declines are never device evidence).
inline void record(const RunInfo& r, Isa requested) {
  if (r.declined) {
    popper::record_decline("cuda", r.decline_reason);
  }
  const bool forced = requested != Isa::Auto || popper::cpu::auto_isa_overridden();
  popper::record_backend(r.backend, forced ? popper::Dispatch::Forced : popper::Dispatch::Auto);
}

inline std::string where(Isa isa, int threads) {
  return std::string("isa=") + popper::cpu::to_string(isa) + " threads=" + std::to_string(threads);
}

}  // namespace popper::fused::testing
