// Static partition of work units over the one parallel runtime
// (common/parallel.hpp; included by kernels.hpp). The partition depends only
// on (cost, workers), and every unit's numbers only on its own inputs, so
// results are bit-identical for any thread count.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "impl/common/parallel.hpp"
#include "popper/mutant.hpp"

namespace popper::arrow {

template <class Fn>
void run_partitioned(std::span<const double> cost, unsigned threads, Fn&& fn) {
  const std::size_t units = cost.size();
  if (units == 0) return;
  int workers = threads == 0 ? popper::parallel::hardware_threads() : static_cast<int>(threads);
  double total = 0.0;
  for (double c : cost) total += std::max(c, 0.0);
  if (!popper::parallel::exact_threads())
    workers = std::max(1, std::min(workers, static_cast<int>(std::floor(total / kMinCostPerThread))));
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

}  // namespace popper::arrow
