// `popper bench threshold`: derive a family's routing thresholds from its
// bench CSV and write the router config (harness/src/bench/threshold.hpp).
#include <filesystem>
#include <iostream>
#include <memory>

#include "bench/csv.hpp"
#include "bench/family.hpp"
#include "bench/threshold.hpp"
#include "bench_cli.hpp"
#include "popper/io.hpp"

namespace popper::cli {

void add_bench_threshold_command(CLI::App& bench, int& exit_code) {
  auto* cmd = bench.add_subcommand(
      "threshold",
      "Derive the routing threshold (smallest axis value from which fast >= margin x slow) from a bench CSV");
  struct Opt {
    std::string family, csv, config, source_dir = ".", axis = "l", fast = "hand", slow = "wrapped", by = "h,d", threads;
    double margin = 1.2;
    bool no_write = false, include_gate = false;
  };
  auto o = std::make_shared<Opt>();
  cmd->add_option("--family", o->family, "bench family (bench/<family>/family.yaml)")->required();
  cmd->add_option("--margin", o->margin, "required speedup of the fast tier over the slow one (default 1.2)");
  cmd->add_option("--csv", o->csv, "bench CSV (default reports/bench-<family>.csv)");
  cmd->add_option("--config", o->config, "router config to write (default <source-dir>/config/<family>-router.yaml)");
  cmd->add_option("--source-dir", o->source_dir, "repository root (holds bench/ and config/)");
  cmd->add_option("--axis", o->axis, "swept shape parameter (default l)");
  cmd->add_option("--by", o->by, "shape parameters with one threshold each, comma-separated (default h,d)");
  cmd->add_option("--fast", o->fast, "tier that must win (default hand)");
  cmd->add_option("--slow", o->slow, "tier it must beat (default wrapped)");
  cmd->add_option("--threads", o->threads, "only these thread counts, e.g. 1 (default: every one in the CSV)");
  cmd->add_flag("--include-gate", o->include_gate, "also use the family's gate shapes");
  cmd->add_flag("--no-write", o->no_write, "print the thresholds without writing the config");
  cmd->callback([o, &exit_code] {
    try {
      namespace fs = std::filesystem;
      bench::ThresholdOptions t;
      t.family = o->family;
      t.margin = o->margin;
      t.axis = o->axis;
      t.fast_tier = bench::tier_from(o->fast, "--fast");
      t.slow_tier = bench::tier_from(o->slow, "--slow");
      t.by = split_list({o->by});
      t.threads = split_ints({o->threads});
      const std::string family_yaml = o->source_dir + "/bench/" + o->family + "/family.yaml";
      if (!o->include_gate && fs::exists(family_yaml))
        t.exclude_shapes = bench::load_family(o->source_dir, o->family).gate.shapes;
      const std::string csv = o->csv.empty() ? "reports/bench-" + o->family + ".csv" : o->csv;
      const auto table = bench::read_bench_csv(csv);
      const auto result = bench::derive_thresholds(table, t);
      std::cout << bench::render_threshold_report(result);
      if (!o->no_write) {
        const std::string config =
            o->config.empty() ? o->source_dir + "/config/" + o->family + "-router.yaml" : o->config;
        if (fs::path(config).has_parent_path()) fs::create_directories(fs::path(config).parent_path());
        popper::write_file_atomic(config, bench::render_router_config(result, table, csv));
        std::cerr << "wrote " << config << "\n";
      }
      exit_code = 0;
    } catch (const std::exception& e) {
      std::cerr << "popper bench threshold: " << e.what() << "\n";
      exit_code = 2;
    }
  });
}

}  // namespace popper::cli
