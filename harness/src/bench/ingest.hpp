// Ingesting the producers' output into BenchRows (bench producer protocol):
//  - Google Benchmark JSON (per-repetition runs, run_type "iteration"):
//    name <family>/<tier>/<shape>/<precision>/threads:<n>[/real_time],
//    real_time per iteration, counters flop | items and bytes per iteration,
//    label = verdict, error_occurred -> verdict "incorrect: ..." and no samples.
//    Backend: context key "popper_backend_<tier>" when the suite sets it
//    (benchmark::AddCustomContext), else the tier name.
//  - ceiling CSV: one row per repetition, header
//    family,tier,backend,shape,precision,threads,rep,iterations,seconds_per_iter,
//    flop_per_iter,bytes_per_iter,verdict
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "bench/csv.hpp"

namespace popper::bench {

struct BenchName {
  std::string family, tier, shape, precision;
  int threads = 1;
};
// nullopt when the name does not follow the protocol.
std::optional<BenchName> parse_bench_name(const std::string& name);
std::string format_bench_name(const BenchName& n);  // without /real_time

// work_unit: which counter is the work per iteration (flop | items).
std::vector<BenchRow> rows_from_gbench_json(const std::string& text, const std::string& file,
                                            const std::string& work_unit);
std::vector<BenchRow> rows_from_ceiling_csv(const std::string& text, const std::string& file);

// Appends src rows into dst, merging samples of rows with equal keys.
void merge_rows(std::vector<BenchRow>& dst, const std::vector<BenchRow>& src);

}  // namespace popper::bench
