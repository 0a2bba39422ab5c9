// Regression check of a current bench CSV against a baseline.
//
// Per row (matched on family, tier, backend, shape, precision, threads,
// cache_mode): ratio r = median(current) / median(baseline), in the row's unit.
//   r > 1 + regression and significant   REGRESSION   (exit 1)
//   r > 1 + warning                      WARNING      (incl. > 10% but not significant)
//   r < 1 - warning                      IMPROVEMENT
//   otherwise                            UNCHANGED
//   in baseline, not in current          MISSING      (exit 1)
//   in current, not in baseline          NEW          (reported, no baseline to judge it by)
// Significant: one-sided Mann–Whitney U of current samples against
// (1 + regression) * baseline samples at level alpha, i.e. "slower by more
// than the threshold" is the alternative. Instruction-count rows are
// deterministic: there, r beyond the threshold is significant by itself.
//
// Different machine fingerprints: only normalized ratios are compared —
// (tier median / best ceiling median of the same shape, precision, threads)
// from the same run — never absolute times; ceiling rows are the normalizers.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "popper/bench/csv.hpp"

namespace popper::bench {

enum class Change { Regression, Warning, Unchanged, Improvement, Missing, Skipped, New };
const char* to_string(Change c);

struct Thresholds {
  double regression = 0.10;
  double warning = 0.05;
  double alpha = 0.05;
};

Change classify_ratio(double ratio, bool significant, const Thresholds& t = {});

enum class CheckMode { Absolute, Normalized };

struct RowCheck {
  BenchKey key;
  Change change = Change::Unchanged;
  double ratio = 0;          // NaN when not computed
  double p_value = 1;
  bool significant = false;
  std::string note;          // e.g. "confirmed on re-run", "normalized by ceiling"
};

struct CheckReport {
  CheckMode mode = CheckMode::Absolute;
  std::string mode_reason;
  std::vector<RowCheck> rows;
  int count(Change c) const;
  int exit_code() const;     // 1 when any REGRESSION or MISSING, else 0
};

// Re-measures one row (same key) and returns it, or nullopt when it cannot.
using Rerun = std::function<std::optional<BenchRow>(const BenchRow&)>;

CheckReport check_tables(const BenchTable& baseline, const BenchTable& current, const Thresholds& t = {},
                         const Rerun& rerun = {});

std::string format_check_report(const CheckReport& report);

// Reads a baseline; a missing file is an error that says how to create one
// (never a silent pass).
class NoBaseline : public BenchFileError {
 public:
  using BenchFileError::BenchFileError;
};
BenchTable read_baseline(const std::string& path);

}  // namespace popper::bench
