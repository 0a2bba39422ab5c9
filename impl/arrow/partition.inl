// Work units over the one parallel runtime (common/parallel.hpp; included by
// kernels.hpp): a static partition that depends only on (cost, workers), or
// units claimed in order as workers come free. Every unit's numbers depend
// only on its own inputs, so results are bit-identical for any thread count.
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "impl/common/parallel.hpp"
#include "popper/mutant.hpp"

namespace popper::arrow {

// Workers for `cost` (the size rule of kMinCostPerThread, unless exact threads).
inline int partition_workers(std::span<const double> cost, unsigned threads) {
  int workers = threads == 0 ? popper::parallel::hardware_threads() : static_cast<int>(threads);
  double total = 0.0;
  for (double c : cost) total += std::max(c, 0.0);
  if (!popper::parallel::exact_threads())
    workers = std::max(1, std::min(workers, static_cast<int>(std::floor(total / kMinCostPerThread))));
  return workers;
}

template <class Fn>
void run_partitioned(std::span<const double> cost, unsigned threads, Fn&& fn) {
  const std::size_t units = cost.size();
  if (units == 0) return;
  const int workers = partition_workers(cost, threads);
  if (workers <= 1) {
    fn(std::size_t{0}, units);
    return;
  }
  const std::vector<double> weights(cost.begin(), cost.end());
  // Mutation point (arrow-partition-skips-boundary): each range after the
  // first starts one unit late, so the unit at a worker boundary is never solved.
  const std::size_t late = POPPER_MUTANT("arrow-partition-skips-boundary") ? 1 : 0;
  popper::parallel::run_weighted(weights, workers, [&](std::size_t begin, std::size_t end, int) {
    fn(begin == 0 ? begin : std::min(end, begin + late), end);
  });
}

template <class Fn>
void run_claimed(std::span<const double> cost, unsigned threads, Fn&& fn) {
  const std::size_t units = cost.size();
  if (units == 0) return;
  const int workers = partition_workers(cost, threads);
  if (workers <= 1) {
    for (std::size_t i = 0; i < units; ++i) fn(i);
    return;
  }
  // Mutation point (arrow-claim-skips-unit): a worker's claims after its first
  // are dropped, so which units go unsolved depends on the thread count.
  static const bool drop_later = POPPER_MUTANT("arrow-claim-skips-unit");
  std::atomic<std::size_t> next{0};
  popper::parallel::run(static_cast<std::size_t>(workers), workers, [&](std::size_t, std::size_t, int) {
    bool first = true;
    for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < units; first = false)
      if (first || !drop_later) fn(i);
  });
}

}  // namespace popper::arrow
