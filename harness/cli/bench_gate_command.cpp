// `popper bench gate`: the CI instruction-count gate (bench/gate_check.hpp).
#include <algorithm>
#include <iostream>
#include <memory>
#include <thread>

#include "bench/csv.hpp"
#include "bench/family.hpp"
#include "bench/gate_check.hpp"
#include "bench_cli.hpp"

namespace popper::cli {

void add_bench_gate_command(CLI::App& bench, int& exit_code) {
  auto* cmd = bench.add_subcommand("gate", "CI regression gate: callgrind instruction counts on the gate shapes");
  struct GateArgs {
    BenchDirs dirs;
    std::string family = "gemm";
    bench::GateCheckOptions opt;
    std::vector<std::string> tiers;
  };
  auto a = std::make_shared<GateArgs>();
  add_dir_options(cmd, a->dirs);
  cmd->add_option("--family", a->family, "bench family, or all");
  cmd->add_option("--out", a->opt.out, "CSV to write (default reports/bench-<family>-gate.csv)");
  cmd->add_option("--baseline", a->opt.baseline, "baseline CSV (default baselines/<gate key>/<family>-gate.csv)");
  cmd->add_option("--against", a->opt.against,
                  "without a committed baseline for this gate key, build REF (a commit; auto = the last commit "
                  "that changed baselines/) in the build tree and compare in the same run");
  cmd->add_flag("--no-check", a->opt.no_check, "only measure and write the CSV");
  a->opt.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cmd->add_option("--jobs", a->opt.jobs, "callgrind runs at once, and build jobs for --against (default: the cores)");
  cmd->add_option("--shapes", a->opt.only_shapes, "restrict to these gate shapes (baseline rows filtered alike)");
  cmd->add_option("--tiers", a->tiers, "restrict to these tiers, e.g. hand");
  cmd->add_option("--precision", a->opt.only_precisions, "restrict to these precisions, e.g. f32");
  cmd->callback([a, &exit_code] {
    try {
      bench::GateCheckOptions opt = a->opt;
      auto dirs = a->dirs;
      // A project's family brings its tree (its baselines are under its source folder).
      if (a->family != "all") opt.families = {dirs.family(a->family).family};
      opt.source_dir = dirs.source_dir;
      opt.build_dir = dirs.build();
      if (a->family == "all") opt.families = bench::list_families(opt.source_dir, opt.build_dir);
      opt.only_shapes = split_list(opt.only_shapes);
      opt.only_tiers = bench::tiers_from(split_list(a->tiers), "--tiers");
      opt.only_precisions = split_list(opt.only_precisions);
      opt.progress = progress;
      exit_code = bench::run_gate_check(opt, std::cout);
    } catch (const std::exception& e) {
      std::cerr << "popper bench gate: " << e.what() << "\n";
      exit_code = 2;
    }
  });
}

}  // namespace popper::cli
