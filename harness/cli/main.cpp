// popper: contract-driven verification and benchmark harness.
#include <iostream>

#include "commands.hpp"
#include "popper/version.hpp"

int main(int argc, char** argv) try {
  CLI::App app{
      "popper: write every claim about a kernel as a contract; popper validates it, runs the tests bound "
      "to it, benchmarks it and reports honestly what is covered"};
  app.set_version_flag("--version", "popper " + popper::build_id());
  app.require_subcommand(1);
  int exit_code = 0;
  popper::cli::add_validate_command(app, exit_code);
  popper::cli::add_scaffold_command(app, exit_code);
  popper::cli::add_audit_command(app, exit_code);
  popper::cli::add_graph_command(app, exit_code);
  popper::cli::add_migrate_command(app, exit_code);
  popper::cli::add_bench_commands(app, exit_code);
  popper::cli::add_peak_command(app, exit_code);
  popper::cli::add_parity_command(app, exit_code);
  popper::cli::add_train_commands(app, exit_code);
  popper::cli::add_report_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;  // usage errors exit 2
  }
  return exit_code;
} catch (const std::exception& e) {
  // A command that let an error through still exits with a message, never an abort.
  std::cerr << "popper: " << e.what() << "\n";
  return 2;
}
