// Regression check of a current bench CSV against a baseline.
//
// Rows are matched on (family, tier, backend, shape, precision, threads,
// cache_mode). For a timed row, R = Q(current) / Q(baseline), Q the lower
// quartile of the samples, with a trial-aware bootstrap interval and t-based
// p-values (interval.hpp). Why not the median: what a shared machine adds to a
// time only ever slows it (a neighbour on the host core can make a whole
// process 1.35x slower on one vCPU for minutes), so a run's times are its
// kernel's time plus a one-sided, often bimodal, delay. Two slow trials of six
// then move the median and widen its bootstrap interval until rows are NOISY,
// while a change to the code moves every sample, the fast ones too. The lower
// quartile is what the slow trials leave alone; not the minimum: its bootstrap
// interval is too narrow, and it flags rows whose whole run was slower.
//   REGRESSION   R > 1 + regression, shown beyond doubt: rejected by
//                Benjamini-Hochberg at alpha across the rows of its family
//                (a clean check flags any row with probability at most
//                alpha): the vendor (ceiling) rows are one family, the rows
//                of this repository's code the other
//   NOISY        not a regression, but one cannot be excluded (p of
//                "R < 1 + regression" > alpha): the interval is too wide to
//                decide at the threshold; re-measure (--rerun) or add trials
//   WARNING      R > 1 + warning, BH-rejected (and a regression excluded)
//   IMPROVEMENT  R < 1 - warning, BH-rejected
//   UNCHANGED    otherwise: within the noise band
//   MISSING      in the baseline, not measured in current (exit 1)
//   NEW          in current, not in the baseline
//   MOVED        a ceiling row that would be a REGRESSION (same machine,
//                absolute mode): the vendor library's own time, which no
//                change to this repository touches, moved, so the machine
//                moved for that configuration (it can for one thread count
//                alone: 2-thread vendor rows 1.2x slower for minutes, the
//                1-thread ones not). Exit 0. The wrapped rows of its group
//                (shape, precision, threads) are then judged relative to their
//                trial's best ceiling, since they run the same library; hand
//                and reference rows stay absolute: the vendor's move is no
//                evidence about this repository's own kernels.
// A row with a single trial on a side has no estimate of the between-trial
// noise: its verdict comes from the effect size alone, and the note says so.
// Instruction-count rows are deterministic: compared as numbers (R beyond a
// threshold is the verdict), no test.
//
// Different machine fingerprints: each timed sample is divided by the best
// ceiling median of its own trial (same shape, precision, threads), and those
// normalized series are compared; a row with no ceiling to normalize by on
// either side is MISSING, never skipped.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/csv.hpp"

namespace popper::bench {

enum class Change { Regression, Warning, Unchanged, Improvement, Missing, Skipped, New, Noisy, Moved };
const char* to_string(Change c);

struct Thresholds {
  double regression = 0.10;
  double warning = 0.05;
  double alpha = 0.05;     // false discovery rate (Benjamini-Hochberg) over the rows of one check
  double quantile = 0.25;  // timed rows compare this quantile of their samples (above)
};

enum class CheckMode { Absolute, Normalized };

struct RowCheck {
  BenchKey key;
  Change change = Change::Unchanged;
  double ratio = 0;       // NaN when not computed
  double lo = 0, hi = 0;  // interval of the ratio (timed rows)
  double p_value = 1;     // of "ratio > 1 + regression"
  bool significant = false;
  int trials_base = 0, trials_current = 0;
  std::string note;
};

struct CheckReport {
  CheckMode mode = CheckMode::Absolute;
  std::string mode_reason;
  std::string method;  // how verdicts were decided (printed)
  std::vector<RowCheck> rows;
  // The samples of the interleaved re-measure (CheckOptions::interleave), each
  // side's rows; trial ids count across both sides in the order they ran.
  BenchTable interleaved_baseline, interleaved_current;
  int count(Change c) const;
  // 1 on any REGRESSION or MISSING; NOISY too when `strict`.
  int exit_code(bool strict = false) const;
};

// Re-measures the given rows (same keys) and returns their new samples, with
// trial ids not used before; nullopt when it cannot.
using Remeasure = std::function<std::optional<std::vector<BenchRow>>(const std::vector<BenchKey>&)>;
// Old-style single-row re-measure (instruction counts).
using Rerun = std::function<std::optional<BenchRow>(const BenchRow&)>;

// Interleaved re-measuring (check --rerun where the baseline's commit can be
// measured here): `measure(keys, baseline_side)` runs one trial of the given
// suite rows on the baseline's build or on this one. A round is two trials a
// side in --against's ABBA order (duet.hpp: current, baseline, baseline,
// current; then baseline, current, current, baseline), so a machine that
// drifts steadily through a round moves both sides alike; a row so measured is
// judged on those samples alone, never against the stored baseline, which a
// machine that moved between the two runs can make look slower or faster by
// more than the change sought (a host's suite rows can move 11-15% in 30
// minutes while its vendor rows move 4-9%, which no normalization by the
// vendor rows tells from a regression).
struct Interleave {
  std::function<std::optional<std::vector<BenchRow>>(const std::vector<BenchKey>&, bool baseline_side)> measure;
  std::string baseline;  // what runs the baseline's side, for the notes (e.g. "commit 1a2b3c4d5e6f, built here")
};

struct CheckOptions {
  Thresholds thresholds;
  Remeasure remeasure;  // for NOISY and REGRESSION timed rows
  // When set, every timed suite (non-ceiling) row is measured again in
  // interleaved rounds in place of `remeasure` (ceiling rows keep it), and
  // while it stays NOISY, rounds permitting; if it fails, `remeasure` takes over.
  Interleave interleave;
  double budget_seconds = 0;  // re-measuring stops when this is spent
  // Re-measuring rounds: the first measures every suite row, the others only
  // the rows still NOISY (two trials a side each, seconds for a small kernel):
  // a 2-thread row of a 15 us kernel (fused swiglu_gate) scatters 12-15%
  // between trials and needs about 16 a side to leave NOISY.
  int max_rounds = 6;
  // Same machine, but the vendor library's own rows (which no change to this
  // repository touches) moved beyond the warning threshold: the machine itself
  // is faster or slower than when the baseline was recorded (load, clock), so
  // rows are compared relative to their trial's ceiling. false keeps absolute.
  bool normalize_on_drift = true;
};

CheckReport check_tables(const BenchTable& baseline, const BenchTable& current, const Thresholds& t = {},
                         const Rerun& rerun = {});
CheckReport check_tables(const BenchTable& baseline, const BenchTable& current, const CheckOptions& opt);

std::string format_check_report(const CheckReport& report);

// Classification of a deterministic (count) ratio.
Change classify_count_ratio(double ratio, const Thresholds& t = {});

// Reads a baseline; a missing file is an error that says how to create one
// (never a silent pass). A baseline recorded with an injected slowdown is refused.
class NoBaseline : public BenchFileError {
 public:
  using BenchFileError::BenchFileError;
};
BenchTable read_baseline(const std::string& path);

}  // namespace popper::bench
