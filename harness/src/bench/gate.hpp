// The CI regression gate: callgrind instruction counts of the timed call
// (popper_bench_call_<tier>, popper/bench.hpp) on the family's
// gate shapes. Counts do not depend on machine load, so a 2-core shared CI
// box gives repeatable numbers; unit = instructions per iteration.
//
//   valgrind --tool=callgrind --toggle-collect='*popper_bench_call_<tier>*'
//     bench_<family> --benchmark_filter='^<name>(/real_time)?$'
//   with POPPER_BENCH_ITERATIONS=<gate.iterations>;
//   value = collected Ir / iterations.
//
// A count depends on the binary, the path it dispatches to and its input —
// not on the CPU model or core count. The baseline key is therefore what
// decides the count (GateKey): the CPU path the kernels pick under valgrind's
// virtual CPU (no AVX-512 there), the OpenBLAS kernel set in force (pinned to
// Haswell when that CPU has AVX2), OpenBLAS's build, the compiler, the build
// type and the flags. Two machines with one key share one baseline.
// Without a baseline for the key, the base commit is built in the build tree
// (gate-ref/<sha>) and measured in the same run (popper bench gate --against).
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/csv.hpp"
#include "bench/family.hpp"

namespace popper::bench {

struct GateKey {
  std::string cpu_isa;          // the hand kernels' path under valgrind
  std::string caches;           // the cache sizes the hand kernels' blocking derives from, under valgrind
  std::string openblas_core;    // OpenBLAS kernel set in force under valgrind
  std::string openblas_config;  // openblas_get_config(): version and build options
  std::string compiler;         // id and version
  std::string build_type;
  std::string flags;  // CMAKE_CXX_FLAGS + per-build-type flags
  // gate-<isa>-openblas-<core>-<compiler>-<build type>-<hash8 of everything>
  std::string id() const;
  std::vector<std::pair<std::string, std::string>> metadata() const;
};

struct GateOptions {
  std::string build_dir;  // holds bin/bench_<family> (and, in popper's tree, bin/popper_dispatch_probe)
  std::string valgrind = "valgrind";
  std::vector<std::string> probe;  // machine_probe_command()
  // The environment every gate process runs with (gate_environment()).
  std::vector<std::pair<std::string, std::string>> env;
  // callgrind processes run at once: counts do not depend on load, so the
  // rows of a gate run in parallel give the same figures in less wall time.
  int jobs = 1;
  std::function<void(const std::string&)> progress;
};

// What tells the gate key the CPU path, caches and OpenBLAS kernels valgrind
// presents: <build_dir>/bin/popper_dispatch_probe in popper's tree, else the
// suite's own --popper_machine_probe (popper/bench.hpp) in a project's tree.
std::vector<std::string> machine_probe_command(const std::string& build_dir, const std::string& suite);

// OPENBLAS_NUM_THREADS=1 and, when valgrind's CPU has AVX2, OPENBLAS_CORETYPE=
// Haswell: the count never depends on what the caller's environment forces.
std::vector<std::pair<std::string, std::string>> gate_environment(const std::string& valgrind,
                                                                  const std::vector<std::string>& probe);

// Runs opt.probe under valgrind with opt.env and reads the compiler and flags
// from <build_dir>/CMakeCache.txt. Throws Error when the probe cannot run.
GateKey probe_gate_key(const GateOptions& opt);

// Self instruction counts per function (callgrind's fn= sections, calls'
// inclusive costs excluded), per iteration.
using FunctionCounts = std::map<std::string, double>;

struct GateRun {
  BenchTable table;
  std::map<std::string, FunctionCounts> functions;  // row key (BenchKey::to_string) -> counts
};

// Every gate row of the family (shapes x tiers x precisions, threads 1).
GateRun run_gate(const GateOptions& opt, const FamilyDescriptor& fam);

// Measures one gate row again (for check --rerun); nullopt on failure.
std::optional<BenchRow> measure_gate_row(const GateOptions& opt, const FamilyDescriptor& fam, const BenchKey& key,
                                         FunctionCounts* functions = nullptr);

// Work accounting: a call that retires fewer instructions than its declared
// work allows cannot have done it. The most work one instruction can do is
// the widest vector instruction a path of that precision uses, as FLOP:
// a 512-bit FMA (f32 32, f64 16), AVX512-BF16's pair dot (bf16 and f16 64),
// VNNI's byte dot (128, q4k and any other precision). "" when the count is
// plausible or the work is not FLOP; else why not.
std::string implausibly_few_instructions(const BenchRow& row, double instructions_per_call);

// Parses "totals:"/"summary:" from a callgrind output file's text.
double callgrind_total_ir(const std::string& text);
// Self cost (Ir) per function name of a callgrind output file's text.
FunctionCounts callgrind_function_ir(const std::string& text);

// The sidecar of a gate CSV: <csv>.functions.json.
std::string functions_path(const std::string& csv_path);
void write_functions(const std::string& path, const std::map<std::string, FunctionCounts>& f);
std::map<std::string, FunctionCounts> read_functions(const std::string& path);  // {} when absent

// The functions whose count moved most between base and current, largest
// absolute change first: "name: +123456 (+12.3%)".
std::vector<std::string> top_function_changes(const FunctionCounts& base, const FunctionCounts& current,
                                              std::size_t limit = 5);

// The base commit built for comparison: `git archive <sha>` into
// <build_dir>/gate-ref/<sha>/src, configured with this build's compiler,
// build type and flags (CUDA off), and only bench_<family> targets built.
// Returns that build directory. Throws Error naming the step that failed.
struct RefBuildOptions {
  std::string source_dir, build_dir, ref;
  std::vector<std::string> families;
  int jobs = 2;
  // Configured with every POPPER_* option of build_dir too (CUDA included),
  // in <build_dir>/check-ref/<sha>: for timing against this build, which a
  // binary linked differently is not fit for (with CUDA off, the loader's
  // allocations place the operands elsewhere: the hand GEMM on small_64 f32
  // ran 20% faster). Otherwise CUDA off, in gate-ref/.
  bool same_options = false;
  std::function<void(const std::string&)> progress;
};
std::string build_reference(const RefBuildOptions& opt, std::string* resolved_sha = nullptr);

// "auto": the last commit that changed baselines/, else HEAD~1.
std::string default_reference(const std::string& source_dir);

}  // namespace popper::bench
