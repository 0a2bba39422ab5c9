// Which vendor rows are implausible, decided from the rows alone (never from
// the machine): a vendor library that ran broken (fighting another process for
// cores, a thread pool that spins) must not become the "best ceiling" every
// ratio is taken against (ggml at 2 threads can run at 4.7 GFLOP/s against
// 80-85 at 1 thread, and hand ÷ ceiling then reads 23.56×), nor the
// yardstick of a claim or a row `bench check` judges.
//
// Vendor rows: every ceiling row, and the wrapped rows of a family whose
// wrapped tier calls a vendor library (its `wrapped_vendor`, recorded in the
// table's metadata by `bench compare`: llama.cpp's CPU backend in q4k and
// decode). Never a hand row: popper's own code running slower with more
// threads is what the benchmarks are there to catch.
//
// A vendor row R (unit seconds, with samples) is implausible when
//
//   scaling:  some row Q of the same family, tier, backend (vendor
//             configuration), shape, precision and cache mode at FEWER threads
//             has  median(Q) / median(R) < min_scaling  (default 0.5): with
//             more threads R ran at less than half Q's throughput (same work
//             per iteration, so the time ratio is the throughput ratio); or
//
//   scatter:  R is a ceiling row, cv(R) > cv_floor (default 0.25) and
//             cv(R) > cv_factor (default 4) × median cv of the OTHER ceiling
//             rows of the same family, shape, precision, threads and cache mode
//             (other configurations of the same program; each with at least
//             two samples; none: no test), cv(R) taken over R's samples of
//             the trials those rows ran too (all of R's when fewer than two):
//             a row measured again in many more trials meets outliers its
//             neighbours never saw. A wrapped row has no such neighbours, and
//             popper's wrapper is part of what it times.
//
// cv = stddev / mean of the samples (stats.hpp). An implausible row keeps its
// samples and is marked with the reason (BenchRow::invalid_reason); every
// ratio skips it (report.hpp best_row, claims.cpp, check.cpp), `bench check`
// skips a row invalid in both tables, and the reports show it as "invalid:
// <reason>". `bench compare` measures such a row once more before the mark
// stands (compare.cpp).
#pragma once
#include <string>
#include <vector>

#include "bench/csv.hpp"

namespace popper::bench {

struct PlausibilityRule {
  double min_scaling = 0.5;  // more threads may be slower, but not below this fraction of fewer threads' throughput
  double cv_floor = 0.25;    // a cv at or below this is never implausible, however quiet the neighbours
  double cv_factor = 4.0;    // ... nor one at or below this multiple of the neighbours' median cv
};

struct ImplausibleRow {
  BenchKey key;
  std::string reason;  // "2 threads at 0.057× its 1-thread throughput"; no ',' or '|'
};

// Every implausible vendor row of `t` under `rule`, in row order.
std::vector<ImplausibleRow> implausible_vendor_rows(const BenchTable& t, const PlausibilityRule& rule = {});

// The rows `bench compare` times again for these implausible rows: every
// timed row of each one's family, shape, precision, threads and cache mode,
// whatever its tier or backend, in row order. What disturbed a vendor row may
// have hit the hand row beside it; timing the vendor row alone again would
// judge the hand row's disturbed trials against a quieter period (gemm
// gemv_4k f32 2 threads cold: hand 5.2 ms in trials 0-3, OpenBLAS timed again
// at 2.0 ms in trials 4-9, and BENCH-GEMM-006 read "not met", 0.3791).
std::vector<BenchKey> rows_to_remeasure(const BenchTable& t, const std::vector<ImplausibleRow>& suspects);

// Sets invalid_reason on exactly the implausible vendor rows (clears it on the
// others) and lists them in the `invalid_vendor_rows` metadata ("<key>:
// <reason>"), removed when there are none. Rows change (re-measuring, merging,
// loading), so the mark is recomputed from them rather than stored: it cannot
// go stale.
void mark_invalid_vendor_rows(BenchTable& t, const PlausibilityRule& rule = {});

}  // namespace popper::bench
