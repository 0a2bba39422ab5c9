// The physical bound of a Q4_K GEMV (contracts/q4k-gemv-v1.yaml, bandwidth_bound):
// it must read W, x and write y, so
//   t >= bytes / B_read,   bytes = rows*cols/256*144 + 4*cols + 4*rows,
// with B_read the read bandwidth of the same footprint measured on the same
// threads. A benchmark row whose median time beats the bound by more than the
// read measurement's own spread is physically impossible: its timing, byte
// count or kernel is wrong, and the row is marked invalid.
#pragma once
#include <cstdint>
#include <span>
#include <string>

namespace popper::q4k {

double gemv_bytes(std::int64_t rows, std::int64_t cols);

struct BandwidthVerdict {
  bool valid = true;
  double achieved = 0;  // bytes / median(seconds), bytes per second
  double bound = 0;     // max(read) * max(read) / min(read), bytes per second
  std::string text;     // "" when valid, else "invalid: ..."
};

// seconds: the row's timed samples; read: measured read bandwidths (bytes/s).
// Empty read samples give valid with bound 0 (nothing to judge against).
BandwidthVerdict bandwidth_verdict(double bytes, std::span<const double> seconds, std::span<const double> read);

}  // namespace popper::q4k
