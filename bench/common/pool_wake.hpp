// A cold row's wake of popper's worker pool (popper/bench.hpp Work::wake),
// for a suite whose hand tier runs on it (header-only, as fill.hpp).
#pragma once
#include <functional>

#include "impl/common/parallel.hpp"
#include "popper/bench.hpp"

namespace popper::suite {

// The hand tier on more than one thread runs on the pool, whose workers sleep
// through a cold row's eviction; the other tiers run on their library's threads.
inline std::function<void()> pool_wake(const popper::bench::Case& c) {
  if (c.tier != popper::bench::Tier::Hand || c.threads <= 1) return {};
  return [threads = c.threads] { popper::parallel::wake(threads); };
}

}  // namespace popper::suite
