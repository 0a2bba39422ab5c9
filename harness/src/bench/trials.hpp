// The timing stages of `bench compare` (compare.hpp run_compare): trials of
// shuffled steps, each step one process (a ceiling program under each of its
// vendor configurations, or one row of the suite), every sample tagged with
// its trial; then top-up trials of the steps noisier than planned, with the
// steps they pair with. Under a budget a trial stops before a step that would
// overrun it, and the rows measured so far are kept.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bench/compare.hpp"
#include "bench/csv.hpp"
#include "bench/family.hpp"
#include "bench/steal.hpp"
#include "bench/vendors.hpp"
#include "common/process.hpp"

namespace popper::bench {

// One process of a trial: a suite row, or a ceiling program on a shape (every
// precision it measures; `ceiling` names the program).
struct Step {
  std::string shape;
  Tier tier;
  std::string precision;  // "" for a ceiling step
  int threads;
  std::string ceiling;
  CacheMode cache = CacheMode::Warm;
};

// Whether step `s` times one of `rows`: a suite step its own row, a ceiling
// step any ceiling row of its shape, thread count and cache mode (which of the
// program's configurations run is the ceiling plan's choice).
bool step_times_any(const Step& s, const std::vector<BenchKey>& rows);

// What ceiling step `s` runs under the configuration whose rows are
// `backend` when only `rows` are measured (empty: every row): nothing
// (nullopt) when none of them is that configuration's on the step's shape,
// threads and cache mode; else the one precision they name, or "" for every
// precision. A re-measure of a wrapped/ceiling pair thus runs one program
// under one configuration for one precision, not every configuration of every
// program of the shape for both.
std::optional<std::string> ceiling_precision(const Step& s, const std::string& backend,
                                             const std::vector<BenchKey>& rows);

// OpenBLAS's workers spin for the next job for 2^28 cycles (about 0.1 s)
// before they sleep, and a process in turns waits for its own to sleep before
// it hands the CPUs on (popper/turns.h): at 2 threads those waits took most
// of a trial. Within a warm repetition the calls follow each other by
// microseconds, and both sides start it with an untimed call, so 2^20 cycles
// (under a millisecond) leaves every timed call as it was. A cold row evicts
// between calls, for longer than that, so it keeps the library's default; so
// does a launch that sets it, or a caller (`caller_value`: the run's own
// value, nullptr when unset).
inline constexpr const char* kThreadTimeoutVar = "OPENBLAS_THREAD_TIMEOUT";
inline constexpr const char* kTurnThreadTimeout = "20";
void shorten_worker_spin(Launch& l, CacheMode cache, const char* caller_value);

// The steps of `steps` with something to run when only `rows` are measured
// (empty: every row): a suite step that times one of them (step_times_any), a
// ceiling step with a runnable configuration that has one (ceiling_precision).
std::vector<Step> steps_that_run(std::vector<Step> steps, const CeilingPlan& plan, const std::vector<BenchKey>& rows);

// The order one trial runs the steps `which` (indices into `steps`) in: the
// steps of one shape, thread count and cache mode run one after another, and
// both those blocks and the steps within each are shuffled by `seed`. The two
// sides of a ratio then run seconds apart rather than anywhere in a trial: on
// a 2-vCPU guest whose host moved the vCPUs between one CCD and two every few
// seconds, half of the 2-thread trials drew one placement for each side and
// were set aside (pace.hpp).
std::vector<std::size_t> trial_order(const std::vector<Step>& steps, std::vector<std::size_t> which,
                                     std::uint64_t seed);

// A step's process may run this long, plus ten times its repetitions' min time.
inline constexpr double kStepTimeoutFloorSeconds = 120;

// "3m05s", "1h02m".
std::string duration_text(double seconds);

// The directory of reference results that suite processes share
// (popper/bench_reference.hpp), made for the object's life and removed after.
// A command that measures in several runs (bench compare's re-measures of
// its claims) holds one and names it in every run's environment, so a
// reference that takes half a minute is computed once per command.
class SharedReferences {
 public:
  SharedReferences();
  ~SharedReferences();
  SharedReferences(const SharedReferences&) = delete;
  SharedReferences& operator=(const SharedReferences&) = delete;
  // Names the directory in env (kReferenceDirEnv) where it could be made.
  void add_to(Environment& env) const;

 private:
  std::string dir_;
};

class TrialRunner {
 public:
  TrialRunner(const CompareOptions& opt, const FamilyDescriptor& fam, const CeilingPlan& plan, std::vector<Step> steps);
  TrialRunner(const TrialRunner&) = delete;
  TrialRunner& operator=(const TrialRunner&) = delete;
  // The planned trials (opt.trials) while the budget allows; returns how many ran.
  int run_planned();
  // Up to opt.top_up_trials more trials of the steps whose rows' noise needs
  // them, and of the steps they pair with, after `trials_run` trials; returns
  // the processes run.
  std::size_t top_up(int trials_run);
  double elapsed() const;
  // What the suites said verification after timing took, summed over their processes.
  double recheck_seconds() const { return recheck_seconds_; }
  // The CPUs its processes are pinned to (placement.hpp).
  const std::vector<int>& cpus() const { return cpus_; }
  std::vector<BenchRow> take_rows() { return std::move(rows_); }
  const StealLog& steal() const { return steal_; }

 private:
  void say(const std::string& s) const;
  std::string timeout_text(const ProcessResult& r) const;  // empty unless r timed out
  // pace, link < 0: unknown; link 0: one CPU (pace.hpp)
  void add(std::vector<BenchRow> got, int trial, double pace, double link);
  struct Process;  // one process of a step (trials.cpp)
  // A ceiling step's processes split "every precision" into one each when `split_precisions`.
  std::vector<Process> processes_of(std::size_t step, bool split_precisions) const;
  void ingest(const Process& p, const ProcessResult& r, int trial, double pace, double link);
  void run_alone(const Process& p, int trial);
  // At once, in turns on the same CPUs (run_in_turns); the steal metered for all.
  void run_together(const std::vector<Process>& ps, int trial);
  // Under a budget, the first planned trial (`first_pass`) stops only once the
  // budget is spent: every step's first timing is worth more than a trial
  // cut on a forecast, which one slow step (a reference computed in it)
  // makes of every step left. Later trials stop before a
  // step the average step time says would overrun it.
  void run_trial(int trial, const std::string& label, std::vector<std::size_t> which, bool first_pass = false);

  const CompareOptions& opt_;
  const FamilyDescriptor& fam_;
  const CeilingPlan& plan_;
  std::vector<Step> steps_;
  std::string bin_, min_time_;
  // The suites' environment: the run's, with a SharedReferences of the run's
  // own where the run's environment names none.
  std::optional<SharedReferences> references_;
  Environment suite_env_;
  double step_timeout_ = 0;  // seconds one step's process may run before it is killed
  std::vector<int> cpus_;    // the run's CPU set (placement.hpp)
  std::vector<BenchRow> rows_;
  std::vector<std::set<BenchKey>> step_rows_;  // the rows each step produced (top-up)
  std::size_t current_step_ = 0, done_ = 0, total_ = 0;
  bool budget_spent_ = false;
  double recheck_seconds_ = 0;
  StealLog steal_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace popper::bench
