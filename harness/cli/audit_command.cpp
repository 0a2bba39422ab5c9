// popper audit --contracts DIR --results FILE... --bindings FILE [--bench-claims FILE] [--min-coverage X] -o DIR
#include <cstdio>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "popper/audit.hpp"
#include "popper/error.hpp"
#include "popper/io.hpp"

namespace popper::cli {

namespace {
struct AuditOptions {
  std::vector<std::string> contracts{"contracts"};
  std::vector<std::string> results;
  std::string bindings;
  std::string test_binary;
  std::string bench_claims;
  double min_coverage = 0;
  std::string out = "reports";
};

// Runs `<binary> --popper-list-bindings` and returns its stdout.
std::string list_bindings(const std::string& binary) {
  const std::string cmd = "'" + binary + "' --popper-list-bindings";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) throw Error("cannot run " + binary);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe.get())) out.append(buf, n);
  return out;
}
}  // namespace

void add_audit_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<AuditOptions>();
  auto* cmd = app.add_subcommand("audit", "Coverage of contracts by bound tests that ran and passed");
  cmd->add_option("--contracts", o->contracts, "contract files or directories")->capture_default_str();
  cmd->add_option("--results", o->results, "GoogleTest JSON result files")->required();
  auto* b = cmd->add_option("--bindings", o->bindings, "output of <test binary> --popper-list-bindings");
  cmd->add_option("--test-binary", o->test_binary, "contract test binary to ask for its bindings")->excludes(b);
  cmd->add_option("--bench-claims", o->bench_claims, "reports/bench-claims.json from popper bench compare");
  cmd->add_option("--min-coverage", o->min_coverage, "fail below this % of obligations covered")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("-o,--output", o->out, "report directory")->capture_default_str();
  cmd->callback([o, &exit_code] {
    Diagnostics diags;
    AuditInputs in;
    in.contracts = load_contract_set(o->contracts, diags);
    if (diags.has_errors()) {
      std::cerr << format_text(diags) << "popper audit: fix the contracts first (popper validate)\n";
      exit_code = 1;
      return;
    }
    try {
      for (const auto& r : o->results) read_gtest_results(r, in.results);
      if (!o->bindings.empty()) {
        in.bound_ids = read_bindings(o->bindings);
      } else if (!o->test_binary.empty()) {
        const std::string tmp = o->out + "/bindings.json";
        write_file_atomic(tmp, list_bindings(o->test_binary));
        in.bound_ids = read_bindings(tmp);
      } else {
        std::cerr << "popper audit: give --bindings or --test-binary so orphans and UNBOUND ids can be found\n";
        exit_code = 2;
        return;
      }
      if (!o->bench_claims.empty()) {
        in.have_bench_claims = true;
        read_bench_claims(o->bench_claims, in.bench_claims);
      }
      const AuditReport rep = audit(in);
      write_file_atomic(o->out + "/coverage.json", rep.json.dump(2) + "\n");
      write_file_atomic(o->out + "/coverage.md", rep.markdown);
      const auto& t = rep.json["total"];
      std::cout << fmt::format(
          "popper audit: obligations covered {}/{}; falsification tests {} passed, {} failed, {} skipped, {} "
          "UNBOUND, {} not run (of {}); harnesses run {}/{}; benchmark claims {} met of {}\n",
          rep.obligations.num, rep.obligations.den, t["falsification_tests"]["passed"].get<int>(),
          t["falsification_tests"]["failed"].get<int>(), t["falsification_tests"]["skipped"].get<int>(),
          t["falsification_tests"]["unbound"].get<int>(), t["falsification_tests"]["not_run"].get<int>(),
          t["falsification_tests"]["total"].get<int>(), t["harnesses_run"]["covered"].get<int>(),
          t["harnesses_run"]["total"].get<int>(), t["benchmarks"]["met"].get<int>(),
          t["benchmarks"]["total"].get<int>());
      std::cout << "wrote " << o->out << "/coverage.json and " << o->out << "/coverage.md\n";
      exit_code = 0;
      if (!rep.orphans.empty()) {
        for (const auto& id : rep.orphans)
          std::cerr << "popper audit: orphan binding " << id << ": no contract names it (remove it or add the test)\n";
        exit_code = 1;
      }
      if (t["falsification_tests"]["failed"].get<int>() > 0) {
        std::cerr << "popper audit: failing tests (see coverage.md)\n";
        exit_code = 1;
      }
      if (rep.obligations.percent() + 1e-9 < o->min_coverage) {
        std::cerr << fmt::format("popper audit: obligation coverage {:.1f}% ({}/{}) is below --min-coverage {}\n",
                                 rep.obligations.percent(), rep.obligations.num, rep.obligations.den,
                                 o->min_coverage);
        exit_code = 1;
      }
    } catch (const std::exception& e) {
      std::cerr << "popper audit: " << e.what() << "\n";
      exit_code = 2;
    }
  });
}

}  // namespace popper::cli
