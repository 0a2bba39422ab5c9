// The ceiling's vendors and their configurations: which libraries a family's
// ceiling programs call, which kernel sets each can be told to load, which of
// those this CPU can execute, what each really loaded, and whether the
// selection a user gets by default runs below the library's best here.
//
//   vendor     program (ceiling/<stem>.c)    chosen per process by
//   openblas   cblas_gemm_raw, lapack_*      OPENBLAS_CORETYPE=<core type>  (unset: OpenBLAS detects)
//   blis       blis_gemm_raw                 BLIS_ARCH_TYPE=<arch_t id>      (unset: BLIS detects)
//                                            threads: BLIS_NUM_THREADS
//
// Planning a family's ceiling (plan_ceiling):
//  1. candidates: the environment as inherited (what a user's program gets),
//     then, when the family enumerates configurations (family.yaml
//     blas_core_types), every core type / sub-configuration in the tables below;
//  2. refuse, before any process starts, each whose kernels need an
//     instruction this CPU lacks (/proc/cpuinfo flags) — never a SIGILL. An
//     inherited setting the CPU cannot execute is an error (ConfigRefused):
//     every program of that vendor, the wrapped tier included, would die;
//  3. probe each survivor (`ceiling_<stem> --probe`, no kernel runs) for the
//     kernel set it really loads: OpenBLAS silently falls back to detection on
//     a core type it was not built with, BLIS aborts on a sub-configuration
//     it lacks; configurations that load the same kernels collapse into one;
//  4. screen the survivors: each is timed on every gate shape the program
//     has, at each thread count of the run, f32 and f64 (best of
//     `check_reps` short repetitions, one process per configuration and
//     thread count). The inherited selection against the vendor's best on the
//     check shape (the last gate shape, 1 thread) gives the mis-detection
//     factor (a warning above 1.2x, naming the variable, its value, the factor
//     and the fix). Then only the configurations that can win a row are kept
//     for the full run (screen_for_wins): an inherited one whose library the
//     wrapped tier calls (its FFI overhead is measured against it; family.yaml
//     wrapped_vendor, unnamed: every inherited one), each vendor's fastest
//     (so every installed library has its rows), and any other that beats all
//     of those by more than `win_margin` on some screened row. The rest are
//     listed as screened out, with their closest showing.
//     POPPER_CEILING_CONFIGS=all keeps every runnable configuration. The
//     timings are reused while nothing they depend on changed
//     (PlanOptions::screening_cache).
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/csv.hpp"
#include "bench/family.hpp"
#include "bench/machine.hpp"
#include "popper/error.hpp"

namespace popper::bench {

// An inherited setting that would make every call of the vendor die (SIGILL).
class ConfigRefused : public Error {
 public:
  using Error::Error;
};

enum class ConfigStatus {
  Run,          // runnable, timed in the full run
  CpuLacks,     // refused: the kernels need instructions this CPU lacks
  NotBuilt,     // the installed library has no such kernel set
  Duplicate,    // loads the same kernels as another configuration
  ScreenedOut,  // runnable, but no screened row where it beats the kept configurations
  Failed,       // the probe or the check run failed (exit code / signal in reason)
  Missing,      // the ceiling program was not built (vendor not installed)
};
const char* to_string(ConfigStatus s);

struct VendorConfig {
  std::string vendor;                // "openblas" | "blis"
  std::string program;               // ceiling stem, e.g. "blis_gemm_raw"
  std::string variable;              // OPENBLAS_CORETYPE | BLIS_ARCH_TYPE
  std::optional<std::string> value;  // what the variable is set to; nullopt: unset
  bool inherited = false;            // the environment as a user's program gets it
  std::string requested;             // the kernel set asked for ("SkylakeX", "skx"; "" when detected)
  std::vector<std::string> needs;    // cpu flags the requested kernels need
  std::string selected;              // what the library reports it loaded (from --probe)
  ConfigStatus status = ConfigStatus::Run;
  std::string reason;                // why it is not run, or what it duplicates
  double check_seconds[2] = {0, 0};  // best-of-reps seconds on the check shape, f32 / f64 (0: not timed)
  // Best-of-reps seconds on every screened row, keyed screen_row(shape, precision, threads).
  std::map<std::string, double> screen_seconds;

  std::string backend() const;  // "openblas:SkylakeX" (the CSV backend column)
  std::string setting() const;  // "OPENBLAS_CORETYPE=SkylakeX" | "BLIS_ARCH_TYPE unset" | ...
  // Environment for a run at `threads`: assignments and names to unset.
  std::vector<std::pair<std::string, std::string>> env_set(int threads) const;
  std::vector<std::string> env_unset() const;
};

// A library running below its best on this machine because of its default selection.
struct Misdetection {
  std::string vendor, variable;
  std::optional<std::string> value;  // the inherited value (nullopt: unset, the library detected)
  std::string selected;              // what it runs by default
  std::string best;                  // its fastest configuration here
  std::string best_setting;          // e.g. "BLIS_ARCH_TYPE=0"
  std::string shape, precision;      // where the factor was measured
  double factor = 0;                 // time(selected) / time(best)
  std::string message;               // the one-paragraph advice, ready to print
};

// Whether a row's backend is the configuration's (VendorConfig::backend): the
// same, or followed by "+variant" when one program times several layouts
// (ggml-cpu:zen4+repack).
bool backend_of_configuration(const std::string& row_backend, const std::string& configuration_backend);

struct CeilingPlan {
  std::vector<VendorConfig> configs;   // every candidate, with its status
  std::vector<Misdetection> warnings;  // factor > kMisdetectionFactor
  std::string check_shape;             // "" when no check was timed
  std::string check_reused_from;       // the screening cache the check's timings came from ("" = timed now)
  // The configurations to time for a ceiling program.
  std::vector<const VendorConfig*> runnable(const std::string& program) const;
  // One line per vendor: "openblas: Cooperlake (detected), Haswell (OPENBLAS_CORETYPE=Haswell, inherited), ..."
  std::vector<std::string> tried_lines() const;
  // Each configuration that did not run, with the reason.
  std::vector<CeilingSkip> not_run() const;
};

inline constexpr double kMisdetectionFactor = 1.2;

struct PlanOptions {
  bool enumerate = true;  // also every table configuration (else the inherited one only)
  bool screen = true;  // time the gate shapes, drop configurations that cannot win (POPPER_CEILING_CONFIGS=all: false)
  double win_margin = 1.05;  // how much faster than the kept ones a configuration must be on some row to be kept
  std::vector<int> screen_threads{1};  // thread counts screened (bench compare: the run's)
  int check_reps = 3;
  double screen_min_time = 0.05;  // seconds per screening repetition (--min-time)
  std::vector<std::string>
      only;  // non-empty: keep only these runnable configurations (backend names, or a row's "<backend>+<variant>")
  // Non-empty: step 4's timings are reused from this file when they were taken
  // on this machine (fingerprint), on this check shape, for the same
  // configurations, with the same ceiling programs and the same libraries
  // (their files' paths, sizes and times); else timed and written there.
  std::string screening_cache;
  std::function<void(const std::string&)> progress;
};

// The vendor of a ceiling program stem ("blis_*" -> blis, "cublas_*" -> cublas, else openblas).
std::string vendor_of(const std::string& program);

// The candidate configurations of one program, before any check (pure: tables + environment).
std::vector<VendorConfig> candidate_configs(const std::string& program, bool enumerate);

// Flags in cfg.needs this machine lacks (empty: it can execute the kernels).
std::vector<std::string> missing_flags(const VendorConfig& cfg, const MachineInfo& m);

// Steps 2 (CPU check, throws ConfigRefused for an inherited setting the CPU
// cannot execute) and the bookkeeping of 3-4 that needs no process: pure, for tests.
void refuse_unexecutable(std::vector<VendorConfig>& configs, const MachineInfo& m);

// The whole plan for a family (steps 1-4). check_shape "" picks the family's
// largest gate shape. Throws ConfigRefused (see above).
CeilingPlan plan_ceiling(const FamilyDescriptor& fam, const MachineInfo& m, const std::string& build_dir,
                         const PlanOptions& opt, const std::string& check_shape = "");

// A screened row's key: "small_128 f32 2t".
std::string screen_row(const std::string& shape, const std::string& precision, int threads);

// Step 4's choice, pure: marks ScreenedOut every timed (non-empty
// screen_seconds) Run configuration that cannot win a row (see the top of
// this file). Configurations without screening timings are left alone.
void screen_for_wins(std::vector<VendorConfig>& configs, const std::string& wrapped_vendor, double margin);

// The mis-detection findings from timed configurations (step 4's arithmetic), pure.
std::vector<Misdetection> find_misdetections(const std::vector<VendorConfig>& configs, const std::string& shape,
                                             double threshold = kMisdetectionFactor);

// The screening's findings checked against the run's own rows, which time more
// shapes at the run's thread counts: a warning whose vendor's inherited
// configuration and another were both timed on a warm group is restated from
// the group where the inherited one lags its best timed configuration most,
// or withdrawn where it lags by no more than `threshold` on every such group
// (a screening shape's advice that the timed shapes contradict). A warning
// with no such group stands. Returns what to tell the user.
std::vector<std::string> confirm_misdetections(CeilingPlan& plan, const BenchTable& table,
                                               double threshold = kMisdetectionFactor);

// The check used by `popper peak`: the gemm family's plan, cached in
// <build>/vendors.json by machine fingerprint and the vendor variables'
// values; `refresh` re-measures.
CeilingPlan cached_vendor_check(const std::string& source_dir, const std::string& build_dir, const MachineInfo& m,
                                bool refresh, const std::function<void(const std::string&)>& progress = {});

// Writes the plan into the table's metadata (ceiling_vendors, ceiling_not_run,
// ceiling_check_shape, vendor_warnings), which the report's header shows.
void record_plan(const CeilingPlan& plan, BenchTable& table);
// Why that table's run did not measure the ceiling configuration `backend`
// ("blis:zen"), read back from its ceiling_not_run metadata
// ("screened_out: 1.63x slower ..."); nullopt when it records none.
std::optional<std::string> not_run_reason(const BenchTable& table, const std::string& backend);

// Text for a terminal: the configurations and the warnings.
std::string format_vendor_check(const CeilingPlan& plan);

}  // namespace popper::bench
