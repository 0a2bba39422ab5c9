// The CI regression gate: callgrind instruction counts of the timed call
// (popper_bench_call_<tier>, bench/common/bench_support.hpp) on the family's
// gate shapes. Counts do not depend on machine load, so a 2-core shared CI
// box gives repeatable numbers; unit = instructions per iteration.
//
//   valgrind --tool=callgrind --toggle-collect='*popper_bench_call_<tier>*'
//     bench_<family> --benchmark_filter='^<name>(/real_time)?$'
//   with POPPER_BENCH_ITERATIONS=<gate.iterations>;
//   value = collected Ir / iterations.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "popper/bench/csv.hpp"
#include "popper/bench/family.hpp"

namespace popper::bench {

struct GateOptions {
  std::string build_dir;
  std::string valgrind = "valgrind";
  std::function<void(const std::string&)> progress;
};

// Every gate row of the family (shapes x tiers x precisions, threads 1).
BenchTable run_gate(const GateOptions& opt, const FamilyDescriptor& fam);

// Measures one gate row again (for check --rerun); nullopt on failure.
std::optional<BenchRow> measure_gate_row(const GateOptions& opt, const FamilyDescriptor& fam, const BenchKey& key);

// Parses "totals:"/"summary:" from a callgrind output file's text.
double callgrind_total_ir(const std::string& text);

}  // namespace popper::bench
