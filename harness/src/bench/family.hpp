// A bench family descriptor: bench/<family>/family.yaml. It tells the generic
// tooling which programs make up the family and how to judge them; the shape
// list itself comes from the family's shapes.h via the bench executable
// (--benchmark_list_tests), so there is still only one list.
//
//   family: gemm
//   executable: bench_gemm            # optional; default bench_<family>
//   ceilings: [cblas_gemm_raw]        # ceiling_<name> programs in <build>/bin
//   blas_core_types: true             # run ceilings under each OPENBLAS_CORETYPE the CPU can execute
//   wrapped_vendor: openblas          # optional: the library the wrapped tier calls (vendors.hpp, plausibility.hpp)
//   work_unit: flop                   # flop | items: which counter throughput is computed from
//   peak: {f32: fp32, f64: fp64}      # precision -> fp32 | fp64 | bandwidth (efficiency denominator)
//   device:                           # optional: `bench compare --device` runs these instead
//     env: {POPPER_BENCH_DEVICE: cuda}  # set for the suite (it then registers its device tiers)
//     ceilings: [cublas_gemm_raw]
//     peak: {f32: device_fp32, bf16: device_bf16}   # device_* kinds: popper peak --device
//   gate:                             # the CI regression gate (callgrind instruction counts)
//     shapes: [small_64, small_128]
//     tiers: [hand, wrapped]
//     precisions: [f32]
//     iterations: 5
//   bench_mutants:                    # the rows `popper bench mutants` runs the bench mutants on
//     rows: gemm/(hand|wrapped)/small_64/f32/threads:1   # a --benchmark_filter; each warm mutant
//     cold_rows: q4k/hand/big/q4k/threads:[12]/cold      # optional: the cold mutants' rows (one at 2 threads)
//   source_dir: /src/dotkit           # a project's family (popper_add_bench_family() writes these
//   build_dir: /src/dotkit/build      # three into its build tree): where its sources, programs
//   contracts: /src/dotkit/contracts  # and contracts are; popper's own families have none
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "popper/bench_protocol.hpp"

namespace popper::bench {

struct GateSpec {
  std::vector<std::string> shapes;
  std::vector<Tier> tiers{Tier::Hand, Tier::Wrapped};
  std::vector<std::string> precisions{"f32"};
  int iterations = 5;
};

// The family on a device: the same suite with `env` set, other ceilings and peaks.
struct DeviceSpec {
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> ceilings;
  std::map<std::string, std::string> peak;
};

// Where a family's bench mutants (popper/bench_protocol.hpp kBenchMutants)
// run: Google Benchmark filters over its suite's rows, cheap ones.
struct BenchMutantRows {
  std::string rows;       // the warm mutants' rows; empty: none declared
  std::string cold_rows;  // the cold mutants' rows; empty: the family has no cold row to guard
};

struct FamilyDescriptor {
  std::string family;
  std::string executable;             // bench_<family>
  std::vector<std::string> ceilings;  // program stems without "ceiling_"
  // The ceilings that also time cold (`--cache cold`, popper/ceiling_cli.h):
  // run cold on every shape whose suite lists a cold row.
  std::vector<std::string> cold_ceilings;
  // The vendor whose library the wrapped tier calls with the environment as
  // inherited: only that vendor's inherited configuration is timed on every
  // shape however slow it is (FFI overhead is measured against it); another
  // vendor's is screened like any configuration. "" = every inherited one kept.
  // Named, the wrapped rows are vendor rows (plausibility.hpp): a library that
  // ran broken is left out of every ratio, as a ceiling is.
  std::string wrapped_vendor;
  bool blas_core_types = false;
  bool device_tiers = false;  // on_device(): the rows run on the device, its peaks bound them
  std::string work_unit = "flop";
  std::map<std::string, std::string> peak;  // precision -> fp32 | fp64 | bandwidth
  GateSpec gate;
  BenchMutantRows bench_mutants;
  std::optional<DeviceSpec> device;
  std::string path;  // the yaml it came from
  // A project's family (popper_add_bench_family): its tree; empty for popper's own.
  std::string source_dir, build_dir, contracts;
};

// A family's descriptor, looked for in order:
//   `family` itself, when it names a .yaml file;
//   <build_dir>/popper-bench/<family>/family.yaml (a project's build tree);
//   <source_dir>/bench/<family>/family.yaml (popper's own tree).
// Throws Error naming every place it looked and the families found there.
FamilyDescriptor load_family(const std::string& source_dir, const std::string& family,
                             const std::string& build_dir = "");
FamilyDescriptor parse_family_yaml(const std::string& text, const std::string& path);

// The descriptor `bench compare --device` runs: ceilings and peak from the
// device block, no vendor core types. Throws Error when the family has none.
FamilyDescriptor on_device(const FamilyDescriptor& f);

// Whether this family's rows of `tier` are timed by the host CPU, so that the
// host's pace and link probes bear on them: not device rows (tier device, or
// any row of an on_device() run), which the device times with its own events.
bool host_timed(const FamilyDescriptor& f, Tier tier);

// Families with a family.yaml under <source_dir>/bench, and under
// <build_dir>/popper-bench when a build directory is given.
std::vector<std::string> list_families(const std::string& source_dir, const std::string& build_dir = "");

}  // namespace popper::bench
