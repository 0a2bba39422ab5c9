// `popper bench baseline save`: a bench CSV becomes a committed baseline,
// <dir>/<key>/<name>, keyed by what decides its figures: a gate CSV by its
// gate key, a timed one by the machine fingerprint; <name> is the file's name
// without "bench-" (bench-gemm.csv -> gemm.csv, bench-gemm-gate.csv ->
// gemm-gate.csv). The previous baseline is kept as <name>.prev.csv, and a gate
// CSV's callgrind sidecar (<csv>.functions.json) travels with it.
#pragma once
#include <cstddef>
#include <string>

namespace popper::bench {

struct SavedBaseline {
  std::string path;      // the baseline written
  std::string previous;  // where the one it replaced was kept; "" when there was none
  std::size_t rows = 0;
};

// Reads and validates `from` before anything is replaced; refuses (Error) a
// CSV without a fingerprint or recorded with an injected slowdown. Every file
// is written atomically.
SavedBaseline save_baseline(const std::string& from, const std::string& dir);

}  // namespace popper::bench
