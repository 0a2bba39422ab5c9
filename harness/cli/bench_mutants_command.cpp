// `popper bench mutants`: run a family's bench mutants on the rows its
// descriptor declares and say which were caught (harness/src/bench/mutants.hpp).
// Exit 0 when every one was caught, 1 when one survived, 2 on an error.
#include <filesystem>
#include <iostream>
#include <memory>

#include "bench/mutants.hpp"
#include "bench_cli.hpp"
#include "popper/audit.hpp"
#include "popper/io.hpp"

namespace popper::cli {

void add_bench_mutants_command(CLI::App& bench, int& exit_code) {
  auto* cmd = bench.add_subcommand(
      "mutants", "Run a family's bench mutants (faults in the bench path) and check that each is caught");
  struct Opt {
    BenchDirs dirs;
    std::string family, out;
  };
  auto o = std::make_shared<Opt>();
  cmd->add_option("--family", o->family, "bench family (bench/<family>/family.yaml)")->required();
  cmd->add_option("-o,--output", o->out, "write the results here (JSON, for popper audit --bench-mutant-results)");
  add_dir_options(cmd, o->dirs);
  cmd->callback([o, &exit_code] {
    try {
      const auto fam = o->dirs.family(o->family);
      const auto results = bench::run_bench_mutants(fam, o->dirs.build() + "/bin",
                                                    [](const std::string& line) { std::cout << line << "\n"; });
      if (!o->out.empty()) {
        const std::filesystem::path out(o->out);
        if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
        write_file_atomic(o->out, bench_mutant_results_json(results).dump(2) + "\n");
        std::cerr << "wrote " << o->out << "\n";
      }
      std::size_t killed = 0;
      for (const auto& r : results) killed += r.killed() ? 1 : 0;
      std::cout << "popper bench mutants: " << fam.family << ": " << killed << " of " << results.size()
                << " bench mutants caught\n";
      exit_code = killed == results.size() ? 0 : 1;
    } catch (const std::exception& e) {
      std::cerr << "popper bench mutants: " << e.what() << "\n";
      exit_code = 2;
    }
  });
}

}  // namespace popper::cli
