// What the `popper bench` subcommands share: the folders every one takes,
// comma lists, progress lines on stderr, the claims printout. Each subcommand
// is bench_<name>_command.cpp, a thin layer over its library function in
// harness/src/bench/.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "bench/claims.hpp"
#include "commands.hpp"

namespace popper::cli {

struct BenchDirs {
  std::string source_dir = ".";
  std::string build_dir;
  std::string build() const;  // build_dir, else the build tree this popper lives in
};
void add_dir_options(CLI::App* cmd, BenchDirs& dirs);  // --source-dir, --build-dir

// {"1,2", "4"} -> {"1", "2", "4"}
std::vector<std::string> split_list(const std::vector<std::string>& in);
std::vector<int> split_ints(const std::vector<std::string>& in);  // throws on a non-number

// Writes the verdicts to `path` (bench-claims.json, other families kept) and prints them.
void report_claims(const std::string& path, const std::string& family, const std::vector<bench::ClaimResult>& claims);

void add_bench_compare_command(CLI::App& bench, int& exit_code);
void add_bench_check_command(CLI::App& bench, int& exit_code);
void add_bench_gate_command(CLI::App& bench, int& exit_code);
void add_bench_merge_command(CLI::App& bench, int& exit_code);
void add_bench_baseline_command(CLI::App& bench, int& exit_code);
void add_bench_threshold_command(CLI::App& bench, int& exit_code);

}  // namespace popper::cli
