// The machine a benchmark ran on: what goes into the CSV metadata header and
// the fingerprint that names baselines/<fingerprint>/.
//
// fingerprint = <cpu-model-slug>-<cores>c-<isa>-<blas core>-<hash8>, the hash
// (FNV-1a 32-bit) taken over "cpu model|cores|isa flags|blas core", so two
// machines share a baseline folder only when all four agree.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace popper::bench {

struct MachineInfo {
  std::string cpu_model;               // /proc/cpuinfo "model name"
  int cores = 1;                       // online logical CPUs
  std::vector<std::string> isa;        // the flags that matter: sse4_2 avx avx2 fma avx512f/bw/dq/vl
                                       // (part of the fingerprint: keep this list stable)
  std::vector<std::string> cpu_flags;  // every /proc/cpuinfo flag, sorted (what vendor kernels may need)
  std::string blas_core;               // openblas_get_corename() under the current environment, or "unknown"
  std::string blas_config;             // openblas_get_config()
  std::string gpu = "none";            // nvidia-smi name + driver, when present
};

MachineInfo probe_machine();
bool has_isa(const MachineInfo& m, const std::string& flag);
// Any /proc/cpuinfo flag (cpu_flags), e.g. "avx512er", "fma4", "amx_tile".
bool has_cpu_flag(const MachineInfo& m, const std::string& flag);
std::string isa_string(const MachineInfo& m);  // space-separated
std::string fingerprint(const MachineInfo& m);

// Runs a shell command and returns its stdout with the trailing newline
// removed, or "" when it fails. For read-only probes (git, nvidia-smi).
std::string capture_command(const std::string& command);

// KEY's value in <build_dir>/CMakeCache.txt (KEY:TYPE=VALUE), or "" without one.
std::string cmake_cache_value(const std::string& build_dir, const std::string& key);

// commit, branch, date and the machine fields, as CSV metadata.
std::vector<std::pair<std::string, std::string>> machine_metadata(const MachineInfo& m, const std::string& source_dir);

// OpenBLAS core types this CPU can execute, for the ceiling comparison.
// SkylakeX/Cooperlake kernels use AVX-512 and die with SIGILL without it.
// (The full vendor/configuration table is vendors.hpp; this is its OpenBLAS
// AVX2+ subset, kept for callers that only want names.)
std::vector<std::string> runnable_blas_core_types(const MachineInfo& m);

}  // namespace popper::bench
