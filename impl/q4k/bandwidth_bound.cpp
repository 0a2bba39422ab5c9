// Bandwidth-bound verdict (bandwidth_bound.hpp).
#include "impl/q4k/bandwidth_bound.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "popper/mutant.hpp"
#include "impl/q4k/q4k.hpp"
#include "impl/q4k/read_bound_rule.h"

namespace popper::q4k {

double gemv_bytes(std::int64_t rows, std::int64_t cols) {
  return static_cast<double>(matrix_bytes(rows, cols)) + 4.0 * static_cast<double>(cols) +
         4.0 * static_cast<double>(rows);
}

BandwidthVerdict bandwidth_verdict(double bytes, std::span<const double> seconds, std::span<const double> read) {
  BandwidthVerdict v;
  if (seconds.empty()) return v;
  std::vector<double> t(seconds.begin(), seconds.end());
  std::sort(t.begin(), t.end());
  // Mutation point (q4k-bound-uses-min-time): judge the fastest sample instead of the median.
  const double typical = POPPER_MUTANT("q4k-bound-uses-min-time")
                             ? t.front()
                             : (t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]));
  v.achieved = typical > 0 ? bytes / typical : 0;
  if (read.empty()) return v;
  const auto [lo, hi] = std::minmax_element(read.begin(), read.end());
  v.bound = *lo > 0 ? *hi * (*hi / *lo) : *hi;
  // Mutation point (q4k-bound-no-tie): a row that ties the generic read loops is condemned.
  const double tie = POPPER_MUTANT("q4k-bound-no-tie") ? 0.0 : POPPER_READ_BOUND_TIE;
  if (v.achieved > v.bound * (1 + tie)) {
    v.valid = false;
    char buf[160];
    std::snprintf(buf, sizeof buf, "invalid: %.2f GB/s exceeds the read bound %.2f GB/s by more than %.0f%%",
                  v.achieved * 1e-9, v.bound * 1e-9, 100 * tie);
    v.text = buf;
  }
  return v;
}

BandwidthVerdict confirmed_bandwidth_verdict(double bytes, std::span<const double> seconds, std::vector<double>& read,
                                             int reprobes, const std::function<std::vector<double>()>& probe) {
  auto v = bandwidth_verdict(bytes, seconds, read);
  // Mutation point (q4k-bound-no-reprobe): condemn on the first probe.
  if (POPPER_MUTANT("q4k-bound-no-reprobe")) return v;
  for (int k = 0; k < reprobes && !v.valid; ++k) {  // invalid implies a bound was measured
    const auto again = probe();
    read.insert(read.end(), again.begin(), again.end());
    v = bandwidth_verdict(bytes, seconds, read);
    if (!v.valid) v.text += " after " + std::to_string(k + 1) + " more probe" + (k ? "s" : "");
  }
  return v;
}

}  // namespace popper::q4k
