// Static partition of work units over std::threads (included by kernels.hpp).
// The partition depends only on (cost, threads), and every unit's numbers only
// on its own inputs, so results are bit-identical for any thread count.
#pragma once
#include <algorithm>
#include <thread>
#include <vector>

namespace popper::arrow {

template <class Fn>
void run_partitioned(std::span<const double> cost, unsigned threads, Fn&& fn) {
  const std::size_t units = cost.size();
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t parts = std::min<std::size_t>(threads, units);
  if (parts <= 1) {
    if (units > 0) fn(std::size_t{0}, units);
    return;
  }
  double total = 0.0;
  for (double c : cost) total += c;
  std::vector<std::size_t> bounds{0};
  double acc = 0.0;
  for (std::size_t u = 0; u < units && bounds.size() < parts; ++u) {
    acc += cost[u];
    if (acc >= total * static_cast<double>(bounds.size()) / static_cast<double>(parts)) bounds.push_back(u + 1);
  }
  while (bounds.size() <= parts) bounds.push_back(units);
  bounds.back() = units;
  std::vector<std::thread> pool;
  for (std::size_t p = 1; p < parts; ++p)
    if (bounds[p] < bounds[p + 1]) pool.emplace_back([&, p] { fn(bounds[p], bounds[p + 1]); });
  if (bounds[0] < bounds[1]) fn(bounds[0], bounds[1]);
  for (auto& t : pool) t.join();
}

}  // namespace popper::arrow
