// `popper bench compare`: runs a family's ceiling programs and bench suite in
// trials. A trial is one pass over every (shape, threads, tier) step, in an
// order shuffled per trial (seeded, recorded), each step its own process
// running `reps_per_trial` repetitions; every sample records its trial; then
// the steps that were noisier than planned get top-up trials. The
// variation between trials (processes) is the noise a verdict must respect
// (interval.hpp); shuffling keeps position effects (the first shape a
// process measures, warm-up order) from biasing one tier or shape.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/csv.hpp"
#include "bench/family.hpp"
#include "bench/machine.hpp"
#include "bench/peak.hpp"

namespace popper::bench {

// The repetitions' min time when none is given, one process after another
// and in turns; in turns a process runs kRepetitionsInTurns repetitions
// unless --reps says otherwise, as many timed seconds as one alone, in turns
// short enough to follow the host's changes.
inline constexpr double kMinTimeAlone = 0.2, kMinTimeInTurns = 0.05;
inline constexpr int kRepetitionsInTurns = 4;

struct CompareOptions {
  std::string source_dir = ".";
  std::string build_dir;                    // holds bin/
  std::vector<std::string> shapes{"gate"};  // gate | full | all | shape names
  std::vector<Tier> tiers{Tier::Ceiling, Tier::Wrapped, Tier::Hand};
  std::vector<std::string> precisions{"f32", "f64"};
  std::vector<int> threads{1, 2};
  int trials = 3;                                        // processes per step (>= 2 for a testable verdict)
  int reps_per_trial = 2;                                // repetitions inside each process
  std::uint64_t order_seed = 20261123;                   // shuffles the step order of each trial
  int first_trial = 0;                                   // trial id of the first trial (re-measuring adds new ones)
  std::vector<std::pair<std::string, std::string>> env;  // set for every process (check --rerun: the baseline's)
  double min_time = kMinTimeAlone;                       // seconds per repetition (Google Benchmark)
  // Each trial block's processes (one shape, thread count and cache mode) at
  // once, taking turns on the same CPUs repetition by repetition
  // (popper/turns.h, run_in_turns): the two sides of a ratio then meet the
  // host's changing share of a core alike. false: one process after another.
  bool turns = true;
  std::vector<int> cpus;  // every process pinned to the first `threads` of these (placement.hpp); empty: bench_cpus()
  // > 0: a trial after the first two starts only if it fits (trial_fits_budget);
  // the plan's estimate of a trial's length can be far off (vendor configurations).
  double budget_seconds = 0;
  // Seconds one step's process may run before it is killed and its rows left
  // out (a hung kernel); 0: kStepTimeoutFloorSeconds plus ten times the step's
  // repetitions' min time.
  double step_timeout_seconds = 0;
  bool blas_core_types = true;  // also run ceilings under other runnable core types
  // The ceiling's screening timings are reused from <build>/ceiling-screening-
  // <family>.json when nothing they depend on changed (vendors.hpp); true: time them again.
  bool rescreen = false;
  // Non-empty: run only these ceiling configurations (CSV backend names, e.g.
  // "blis:zen"), unscreened: re-measuring rows a table already holds.
  std::vector<std::string> ceiling_backends;
  // Non-empty: only the steps that time one of these rows (steps_that_run in
  // trials.hpp), not the whole cross product of the lists above.
  std::vector<BenchKey> rows;
  bool require_device = false;  // a ceiling that declines ("# skipped: ...") fails the run
  // Implausible vendor rows (plausibility.hpp) are measured once more before
  // they are marked invalid; false in that re-measuring run itself. A run of
  // `rows` only neither re-measures nor reports them (the caller's table does).
  bool remeasure_implausible = true;
  // After the trials: a step whose rows' between-trial noise needs more trials
  // than ran (trials_to_flag at `top_up_alpha`, plan.hpp) gets up to
  // `top_up_trials` more, numbered after them; 0: none (set by the trial plan).
  int top_up_trials = 0;
  double top_up_alpha = 0.05;
  std::function<void(const std::string&)> progress;
};

// Restricts `o` to exactly the steps of `keys`: their shapes, tiers,
// precisions, thread counts and ceiling configurations, and of their cross
// product only the steps that time one of them (re-measuring rows a table
// already holds: check --rerun, implausible vendor rows, inconclusive claims).
void restrict_to_rows(CompareOptions& o, const std::vector<BenchKey>& keys);

// Whether another trial fits: fewer than two done (a verdict needs two), no
// budget, or the trials so far, extrapolated by their mean length, end within it.
bool trial_fits_budget(double elapsed_seconds, int trials_done, double budget_seconds);

// Shape names of a family in suite order, from `bench_<family> --benchmark_list_tests`.
std::vector<std::string> list_family_shapes(const std::string& build_dir, const FamilyDescriptor& fam);

// Expands gate | full | all | names against the family's shapes; throws Error for unknown names.
std::vector<std::string> select_shapes(const std::vector<std::string>& spec, const std::vector<std::string>& all,
                                       const FamilyDescriptor& fam);

// Metadata for any table produced on this machine (git, machine, compiler, peaks).
std::vector<std::pair<std::string, std::string>> run_metadata(const MachineInfo& m, const std::string& source_dir,
                                                              const std::string& build_dir, const PeakResult* peak);

// The table's vendor rows are marked valid or invalid (plausibility.hpp): an
// implausible one is measured again first, with every other row of its shape,
// precision, threads and cache mode (every tier, so a ratio's two sides share
// their trials), in as many trials as the run had, numbered after them; the
// new samples replace the rows' (mixed in, the disturbed ones would keep a
// median where it was), and the first reason is recorded in the
// `vendor_rows_remeasured` metadata. Still implausible: invalid.
BenchTable run_compare(const CompareOptions& opt, const FamilyDescriptor& fam, const MachineInfo& machine,
                       const PeakResult* peak);

// The environment that shapes a timing (recorded in the CSV metadata and
// restored by `bench check --rerun`): OPENBLAS_CORETYPE, OPENBLAS_NUM_THREADS,
// POPPER_ISA_MAX, OMP_* and GOMP_* variables, POPPER_BENCH_INJECT_SLOWDOWN.
std::vector<std::pair<std::string, std::string>> timing_environment();

// Fills pct_of_peak of every seconds row from the family's peak mapping.
void apply_peaks(BenchTable& t, const FamilyDescriptor& fam, const PeakResult* peak);

}  // namespace popper::bench
