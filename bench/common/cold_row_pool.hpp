// popper's worker pool on a cold row of the hand tier (header-only, as
// fill.hpp). The hand tier on more than one thread runs on the pool; the
// other tiers run on their library's threads.
#pragma once
#include <functional>
#include <optional>

#include "impl/common/parallel.hpp"
#include "popper/bench.hpp"

namespace popper::suite {

// While it lives, the workers of a cold hand row on more than one thread
// spin through each eviction rather than sleep (parallel::ScopedSpinningWorkers:
// ggml's threadpool polls through the same gap, and OpenBLAS's threads spin),
// and wake() is the row's Work::wake: it returns once they run.
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

 private:
  int threads_;
  std::optional<popper::parallel::ScopedSpinningWorkers> spinning_;
};

}  // namespace popper::suite
