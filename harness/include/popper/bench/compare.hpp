// `popper bench compare`: runs a family's ceiling programs and bench suite,
// interleaving tiers per shape (ceiling, wrapped, hand for shape 1, then
// shape 2, ...) so machine noise hits them alike, and ingests the results
// into one BenchTable (csv.hpp) with machine metadata and measured peaks.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "popper/bench/csv.hpp"
#include "popper/bench/family.hpp"
#include "popper/bench/machine.hpp"
#include "popper/bench/peak.hpp"

namespace popper::bench {

struct CompareOptions {
  std::string source_dir = ".";
  std::string build_dir;                        // holds bin/
  std::vector<std::string> shapes{"gate"};      // gate | full | all | shape names
  std::vector<std::string> tiers{"ceiling", "wrapped", "hand"};
  std::vector<std::string> precisions{"f32", "f64"};
  std::vector<int> threads{1, 2};
  int reps = 5;
  double min_time = 0.2;                        // seconds per repetition (Google Benchmark)
  bool blas_core_types = true;                  // also run ceilings under other runnable core types
  std::function<void(const std::string&)> progress;
};

// Shape names of a family in suite order, from `bench_<family> --benchmark_list_tests`.
std::vector<std::string> list_family_shapes(const std::string& build_dir, const FamilyDescriptor& fam);

// Expands gate | full | all | names against the family's shapes; throws Error for unknown names.
std::vector<std::string> select_shapes(const std::vector<std::string>& spec, const std::vector<std::string>& all,
                                       const FamilyDescriptor& fam);

// Metadata for any table produced on this machine (git, machine, compiler, peaks).
std::vector<std::pair<std::string, std::string>> run_metadata(const MachineInfo& m, const std::string& source_dir,
                                                              const std::string& build_dir, const PeakResult* peak);

BenchTable run_compare(const CompareOptions& opt, const FamilyDescriptor& fam, const MachineInfo& machine,
                       const PeakResult* peak);

// Fills pct_of_peak of every seconds row from the family's peak mapping.
void apply_peaks(BenchTable& t, const FamilyDescriptor& fam, const PeakResult* peak);

}  // namespace popper::bench
