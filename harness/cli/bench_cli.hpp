// What the `popper bench` subcommands share: the folders every one takes,
// comma lists, progress lines on stderr, the claims printout. Each subcommand
// is bench_<name>_command.cpp, a thin layer over its library function in
// harness/src/bench/.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "bench/claims.hpp"
#include "bench/family.hpp"
#include "commands.hpp"

namespace popper::cli {

struct BenchDirs {
  std::string source_dir = ".";
  std::string build_dir;
  bool source_given = false;  // --source-dir on the command line
  // build_dir; else the working directory when it is a project's build tree
  // (it holds popper-bench/, written by popper_add_bench_family); else the
  // build tree this popper lives in.
  std::string build() const;
  // The family named by --family (bench/family.hpp load_family), found in
  // build() or source_dir. A project's family brings its tree: its source
  // folder replaces source_dir unless --source-dir was given, and `contracts`
  // (when not null and still the default) becomes its contract folder.
  bench::FamilyDescriptor family(const std::string& name, std::string* contracts = nullptr);
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
void add_bench_mutants_command(CLI::App& bench, int& exit_code);

}  // namespace popper::cli
