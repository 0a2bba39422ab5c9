// Ingesting the producers' output into BenchRows (bench producer protocol):
//  - Google Benchmark JSON (per-repetition runs, run_type "iteration"):
//    the name and the verdict label as popper/bench_protocol.hpp writes them
//    (parse_bench_name, Verdict::parse), real_time per iteration, counters
//    flop | items and bytes per iteration, pace_seconds (a 1-thread row's
//    pace probe, popper/pace.h); error_occurred -> the error message read as
//    a verdict, and no samples.
//    Backend: context key "popper_backend_<tier>" when the suite sets it
//    (benchmark::AddCustomContext), else the tier name.
//  - ceiling CSV: one row per repetition, header
//    family,tier,backend,shape,precision,threads,rep,iterations,seconds_per_iter,
//    flop_per_iter,bytes_per_iter,verdict[,pace_seconds]
//    (a program built before the pace column writes none).
#pragma once
#include <string>
#include <vector>

#include "bench/csv.hpp"

namespace popper::bench {

// work_unit: which counter is the work per iteration (flop | items).
std::vector<BenchRow> rows_from_gbench_json(const std::string& text, const std::string& file,
                                            const std::string& work_unit);
std::vector<BenchRow> rows_from_ceiling_csv(const std::string& text, const std::string& file);

// Appends src rows into dst, merging samples of rows with equal keys.
void merge_rows(std::vector<BenchRow>& dst, const std::vector<BenchRow>& src);

}  // namespace popper::bench
