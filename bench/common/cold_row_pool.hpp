// popper's worker pool on a cold row of the hand tier (header-only, as
// fill.hpp). The hand tier on more than one thread runs on the pool; the
// other tiers run on their library's threads.
#pragma once
#include <functional>
#include <optional>

#include "impl/common/parallel.hpp"
#include "popper/bench.hpp"

namespace popper::suite {

// From construction until rest() runs, the workers of a cold hand row on
// more than one thread spin through each eviction rather than sleep
// (parallel::ScopedSpinningWorkers: ggml's threadpool polls through the same
// gap, and OpenBLAS's threads spin). wake() and rest() are the row's
// Work::wake and Work::rest: wake returns once the workers run; rest lets them
// sleep once the timed loop is over, before the process hands its CPUs to the
// next process in turns (popper/turns.h), whose row they would otherwise share.
class ColdRowPool {
 public:
  explicit ColdRowPool(const popper::bench::Case& c)
      : threads_(c.tier == popper::bench::Tier::Hand && c.cache == popper::bench::CacheMode::Cold ? c.threads : 1) {
    if (threads_ > 1) spinning_.emplace(threads_);
  }
  std::function<void()> wake() const {
    if (threads_ <= 1) return {};
    return [threads = threads_] { popper::parallel::wake(threads); };
  }
  std::function<void()> rest() {
    // Mutant (workers-left-spinning): the workers spin on after the timed loop.
    if (threads_ <= 1 || popper::bench::bench_mutant() == popper::bench::BenchMutant::WorkersLeftSpinning) return {};
    return [this] { spinning_.reset(); };
  }

 private:
  int threads_;
  std::optional<popper::parallel::ScopedSpinningWorkers> spinning_;
};

}  // namespace popper::suite
