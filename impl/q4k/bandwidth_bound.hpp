// The physical bound of a Q4_K GEMV (contracts/q4k/q4k-gemv-v1.yaml, bandwidth_bound):
// it must read W, x and write y, so
//   t >= bytes / B_read,   bytes = rows*cols/256*144 + 4*cols + 4*rows,
// with B_read the read bandwidth of the same footprint measured on the same
// threads. A benchmark row whose median time beats the bound by more than the
// read measurement's own spread, and by more than a tuned kernel can tie the
// probe's generic loops (POPPER_READ_BOUND_TIE, impl/q4k/read_bound_rule.h),
// is physically impossible: its timing, byte count or kernel is wrong, and
// the row is marked invalid. Where each thread's share of the footprint fits
// a core's own cache the probe bounds nothing (popper_read_bound_applies):
// the callers judge only the other rows.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace popper::q4k {

double gemv_bytes(std::int64_t rows, std::int64_t cols);

struct BandwidthVerdict {
  bool valid = true;
  double achieved = 0;  // bytes / median(seconds), bytes per second
  double bound = 0;     // max(read) * max(read) / min(read), bytes per second (before the tie)
  std::string text;     // "" when valid, else "invalid: ..."
};

// seconds: the row's timed samples; read: measured read bandwidths (bytes/s).
// Empty read samples give valid with bound 0 (nothing to judge against).
BandwidthVerdict bandwidth_verdict(double bytes, std::span<const double> seconds, std::span<const double> read);

// The verdict, with a row above the bound condemned only when it stays above
// after `reprobes` fresh read measurements (each probe() appended to read):
// on a shared machine a probe of a few milliseconds can be slowed as a whole,
// and a correct library must not be called incorrect for it, while a row that
// skips bytes stays above every probe. probe() runs only for such a row.
BandwidthVerdict confirmed_bandwidth_verdict(double bytes, std::span<const double> seconds, std::vector<double>& read,
                                             int reprobes, const std::function<std::vector<double>()>& probe);

}  // namespace popper::q4k
