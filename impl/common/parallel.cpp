// OpenMP behind parallel::run (parallel.hpp).
#include "common/parallel.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace popper::parallel {

int hardware_threads() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

namespace {

void run_bounds(const std::vector<std::size_t>& bounds, const RangeBody& body) {
  const int workers = static_cast<int>(bounds.size()) - 1;
  if (workers <= 1) {
    if (bounds.back() > bounds.front()) body(bounds.front(), bounds.back(), 0);
    return;
  }
#pragma omp parallel num_threads(workers)
  {
    const int w = omp_get_thread_num();
    if (w < workers && bounds[w + 1] > bounds[w]) body(bounds[w], bounds[w + 1], w);
  }
}

}  // namespace

void run(std::size_t n, int threads, const RangeBody& body) {
  const std::size_t workers = std::max<std::size_t>(1, std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), n));
  std::vector<std::size_t> bounds(workers + 1);
  for (std::size_t w = 0; w <= workers; ++w) bounds[w] = w * n / workers;
  run_bounds(bounds, body);
}

void run_weighted(const std::vector<double>& cost, int threads, const RangeBody& body) {
  const std::size_t n = cost.size();
  const std::size_t workers = std::max<std::size_t>(1, std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), n));
  double total = 0;
  for (double c : cost) total += std::max(c, 0.0);
  std::vector<std::size_t> bounds(workers + 1, n);
  bounds[0] = 0;
  double acc = 0;
  std::size_t w = 1;
  for (std::size_t i = 0; i < n && w < workers; ++i) {
    acc += std::max(cost[i], 0.0);
    while (w < workers && acc >= total * static_cast<double>(w) / static_cast<double>(workers)) bounds[w++] = i + 1;
  }
  run_bounds(bounds, body);
}

}  // namespace popper::parallel
