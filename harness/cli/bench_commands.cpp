// `popper bench`: its subcommands (bench_<name>_command.cpp) and what they share.
#include <filesystem>
#include <iostream>

#include "bench_cli.hpp"
#include "commands.hpp"
#include "common/text.hpp"

namespace popper::cli {

std::string BenchDirs::build() const {
  if (!build_dir.empty()) return build_dir;
  if (std::filesystem::is_directory("popper-bench")) return std::filesystem::current_path().string();
  return default_build_dir();
}

bench::FamilyDescriptor BenchDirs::family(const std::string& name, std::string* contracts) {
  auto fam = bench::load_family(source_dir, name, build());
  if (!fam.source_dir.empty() && !source_given) source_dir = fam.source_dir;
  if (!fam.build_dir.empty() && build_dir.empty()) build_dir = fam.build_dir;
  if (contracts && !fam.contracts.empty() && *contracts == "contracts") *contracts = fam.contracts;
  return fam;
}

void add_dir_options(CLI::App* cmd, BenchDirs& dirs) {
  cmd->add_option("--source-dir", dirs.source_dir, "repository root (holds bench/ and contracts/)")
      ->each([&dirs](const std::string&) { dirs.source_given = true; });
  cmd->add_option("--build-dir", dirs.build_dir,
                  "build tree holding bin/ (default: this directory when it holds popper-bench/, else the one this "
                  "popper lives in)");
}

std::vector<std::string> split_list(const std::vector<std::string>& in) {
  std::vector<std::string> out;
  for (const auto& item : in)
    for (auto& part : split_nonempty(item, ',')) out.push_back(std::move(part));
  return out;
}

std::vector<int> split_ints(const std::vector<std::string>& in) {
  std::vector<int> out;
  for (const auto& v : split_list(in)) out.push_back(std::stoi(v));
  return out;
}

void report_claims(const std::string& path, const std::string& family, const std::vector<bench::ClaimResult>& claims) {
  bench::write_claims_json(path, family, claims);
  for (const auto& c : claims)
    std::cout << c.id << " (" << c.contract << "): " << c.verdict << " — " << c.detail << "\n";
  if (!claims.empty()) std::cerr << "claims judged at alpha " << claims.front().alpha << " a group\n";
  std::cerr << "wrote " << path << " (" << claims.size() << " claims)\n";
}

void add_bench_commands(CLI::App& app, int& exit_code) {
  auto* bench = app.add_subcommand("bench", "Three-tier benchmarks, regression checks, baselines");
  bench->require_subcommand(1);
  add_bench_threshold_command(*bench, exit_code);
  add_bench_compare_command(*bench, exit_code);
  add_bench_merge_command(*bench, exit_code);
  add_bench_check_command(*bench, exit_code);
  add_bench_gate_command(*bench, exit_code);
  add_bench_baseline_command(*bench, exit_code);
  add_bench_mutants_command(*bench, exit_code);
}

}  // namespace popper::cli
