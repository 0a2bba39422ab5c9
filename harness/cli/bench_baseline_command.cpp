// `popper bench baseline save` (bench/baseline.hpp).
#include <iostream>
#include <memory>

#include "bench/baseline.hpp"
#include "bench_cli.hpp"

namespace popper::cli {

void add_bench_baseline_command(CLI::App& bench, int& exit_code) {
  auto* baseline = bench.add_subcommand("baseline", "Manage committed baselines");
  baseline->require_subcommand(1);
  auto* cmd = baseline->add_subcommand("save", "Copy a bench CSV to baselines/<fingerprint>/ (keeps <name>.prev.csv)");
  auto from = std::make_shared<std::string>("reports/bench-gemm.csv");
  auto dir = std::make_shared<std::string>("baselines");
  cmd->add_option("--from", *from, "bench CSV to save (reports/bench-<family>[-gate].csv)");
  cmd->add_option("--dir", *dir, "baselines folder");
  cmd->callback([from, dir, &exit_code] {
    try {
      const auto saved = bench::save_baseline(*from, *dir);
      if (!saved.previous.empty()) std::cerr << "previous baseline kept as " << saved.previous << "\n";
      std::cout << "saved " << saved.path << " (" << saved.rows << " rows)\n";
      exit_code = 0;
    } catch (const std::exception& e) {
      std::cerr << "popper bench baseline save: " << e.what() << "\n";
      exit_code = 2;
    }
  });
}

}  // namespace popper::cli
