// popper audit --contracts DIR --results FILE... (--bindings FILE | --test-binary BIN)
//              [--mutants | --mutant-results FILE...] [--bench-mutant-results FILE...]
//              [--bench-claims FILE] [--waivers FILE]
//              [--require-claims] [--min-coverage X] [-o DIR] [--junit FILE]
// popper mutants --test-binary BIN [--contracts DIR] [--exec-prefix CMD] [--site NAME] [--env K=V]... -o FILE
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "commands.hpp"
#include "contract/rules.hpp"
#include "popper/audit.hpp"
#include "popper/error.hpp"
#include "popper/io.hpp"
#include "popper/mutant_runner.hpp"

namespace popper::cli {

namespace {
struct AuditOptions {
  std::vector<std::string> contracts{"contracts"};
  std::vector<std::string> results;
  std::string bindings;
  std::string test_binary;
  std::string bench_claims;
  std::string waivers;
  std::vector<std::string> mutant_results;
  std::vector<std::string> bench_mutant_results;
  bool run_mutants = false;
  bool require_claims = false;
  std::string today;
  double min_coverage = 0;
  int jobs = 2;
  std::string out = "reports";
  std::string junit;
};

struct MutantsOptions {
  std::vector<std::string> contracts{"contracts"};
  std::string test_binary, exec_prefix, site = "native", out = "reports/mutants.json";
  std::vector<std::string> env, paths;
  int jobs = 2;
  double timeout = 600;
};

// --results entries: files as given; a directory means every *.json in it
// (what --popper-results-dir writes, one file per discovered test).
std::vector<std::string> expand_results(const std::vector<std::string>& given) {
  std::vector<std::string> out;
  for (const auto& g : given) {
    if (!std::filesystem::is_directory(g)) {
      out.push_back(g);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : std::filesystem::directory_iterator(g))
      if (e.is_regular_file() && e.path().extension() == ".json") found.push_back(e.path().string());
    if (found.empty()) throw Error("no GoogleTest JSON results in " + g + " (run the tests first)");
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

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

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The ids bound in the test binary: from --bindings, or asked of --test-binary (kept as <out>/bindings.json).
std::vector<std::string> bound_ids(const AuditOptions& o) {
  if (!o.bindings.empty()) return read_bindings(o.bindings);
  if (o.test_binary.empty()) throw Error("give --bindings or --test-binary so orphans and UNBOUND ids can be found");
  const std::string tmp = o.out + "/bindings.json";
  write_file_atomic(tmp, list_bindings(o.test_binary));
  return read_bindings(tmp);
}

// --mutants: every test under each of its mutants, here; written to <out>/mutants.json and merged into the inputs.
void run_native_mutants(const AuditOptions& o, AuditInputs& in) {
  if (o.test_binary.empty()) throw Error("--mutants needs --test-binary");
  MutantRunOptions mo;
  mo.test_binary = o.test_binary;
  // Natively the tests also force the narrower CPU paths (unless
  // POPPER_DISPATCH=auto); the site says so, beside the matrix legs' own.
  const char* dispatch = std::getenv("POPPER_DISPATCH");
  mo.site = dispatch && std::string_view(dispatch) == "auto" ? "native" : "native forced";
  mo.jobs = o.jobs;
  mo.progress = progress;
  auto native = run_mutants(in.contracts, mo);
  write_file_atomic(o.out + "/mutants.json", mutant_results_json(native).dump(2) + "\n");
  for (const auto& m : native) {
    auto it = std::find_if(in.mutants.begin(), in.mutants.end(),
                           [&](const MutantResult& x) { return x.test_id == m.test_id && x.mutant_id == m.mutant_id; });
    if (it == in.mutants.end()) in.mutants.push_back(m);
    else merge_mutant(*it, m);
  }
}

void print_summary(const AuditOptions& o, const AuditInputs& in, const AuditReport& rep) {
  const auto& t = rep.json["total"];
  std::cout << "popper audit: " << rep.json["headline"].get<std::string>() << "\n";
  std::cout << fmt::format(
      "popper audit: obligations covered {}/{}; falsification tests {} passed, {} failed, {} skipped, {} "
      "UNBOUND, {} not run (of {}); harnesses run {}/{}; mutants killed {}; bench mutants killed {}; benchmark claims "
      "{} met of {}\n",
      rep.obligations.num, rep.obligations.den, t["falsification_tests"]["passed"].get<int>(),
      t["falsification_tests"]["failed"].get<int>(), t["falsification_tests"]["skipped"].get<int>(),
      t["falsification_tests"]["unbound"].get<int>(), t["falsification_tests"]["not_run"].get<int>(),
      t["falsification_tests"]["total"].get<int>(), t["harnesses_run"]["covered"].get<int>(),
      t["harnesses_run"]["total"].get<int>(),
      in.have_mutants ? fmt::format("{}/{}", t["mutants"]["killed"].get<int>(), t["mutants"]["declared"].get<int>())
                      : std::string("not run"),
      in.have_bench_mutants
          ? fmt::format("{}/{}", t["bench_mutants"]["killed"].get<int>(), t["bench_mutants"]["run"].get<int>())
          : std::string("not run"),
      t["benchmarks"]["met"].get<int>(), t["benchmarks"]["total"].get<int>());
  std::cout << "wrote " << o.out << "/coverage.json and " << o.out << "/coverage.md"
            << (o.junit.empty() ? "" : " and " + o.junit) << "\n";
  for (const auto& w : rep.warnings) std::cerr << "popper audit: warning: " << w << "\n";
  for (const auto& w : rep.waived) std::cerr << "popper audit: waived: " << w << "\n";
  for (const auto& f : rep.failures) std::cerr << "popper audit: FAIL: " << f << "\n";
}

int run_audit(const AuditOptions& o, AuditInputs& in) {
  std::filesystem::create_directories(o.out);
  for (const auto& r : expand_results(o.results)) read_gtest_results(r, in.results);
  in.bound_ids = bound_ids(o);
  if (!o.bench_claims.empty()) {
    in.have_bench_claims = true;
    read_bench_claims(o.bench_claims, in.bench_claims);
  }
  if (!o.waivers.empty()) in.waivers = read_waivers(o.waivers);
  in.today = o.today;
  in.require_claims = o.require_claims;
  for (const auto& f : o.mutant_results) read_mutant_results(f, in.mutants);
  if (o.run_mutants) run_native_mutants(o, in);
  in.have_mutants = o.run_mutants || !o.mutant_results.empty();
  for (const auto& f : o.bench_mutant_results) read_bench_mutant_results(f, in.bench_mutants);
  in.have_bench_mutants = !o.bench_mutant_results.empty();
  const AuditReport rep = audit(in);
  write_file_atomic(o.out + "/coverage.json", rep.json.dump(2) + "\n");
  write_file_atomic(o.out + "/coverage.md", rep.markdown);
  if (!o.junit.empty()) write_file_atomic(o.junit, audit_junit(rep.json));
  print_summary(o, in, rep);
  if (rep.obligations.percent() + 1e-9 < o.min_coverage) {
    std::cerr << fmt::format("popper audit: FAIL: obligation coverage {:.1f}% ({}/{}) is below --min-coverage {}\n",
                             rep.obligations.percent(), rep.obligations.num, rep.obligations.den, o.min_coverage);
    return 1;
  }
  return rep.exit_code();
}

// The contracts a command runs over; nullopt (the diagnostics printed) when they have errors.
std::optional<ContractSet> load_or_report(const std::vector<std::string>& paths, const char* command, int& exit_code) {
  Diagnostics diags;
  ContractSet set = load_contract_set(paths, diags);
  if (!diags.has_errors()) return set;
  std::cerr << format_text(diags) << "popper " << command << ": fix the contracts first (popper validate)\n";
  exit_code = rules::exit_code(diags);
  return std::nullopt;
}

int run_mutants_command(const MutantsOptions& m, const ContractSet& set) {
  MutantRunOptions mo;
  mo.test_binary = m.test_binary;
  mo.exec_prefix = split_words(m.exec_prefix);
  mo.site = m.site;
  mo.jobs = m.jobs;
  mo.timeout_seconds = m.timeout;
  mo.paths = m.paths;
  mo.progress = progress;
  for (const auto& kv : m.env) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) throw Error("--env wants K=V, got '" + kv + "'");
    mo.env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  const auto results = run_mutants(set, mo);
  if (const auto parent = std::filesystem::path(m.out).parent_path(); !parent.empty())
    std::filesystem::create_directories(parent);
  write_file_atomic(m.out, mutant_results_json(results).dump(2) + "\n");
  std::size_t killed = 0;
  for (const auto& r : results) killed += r.outcome == "killed";
  std::cout << fmt::format("popper mutants ({}): {}/{} killed; wrote {}\n", m.site, killed, results.size(), m.out);
  return 0;
}

}  // namespace

void add_audit_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<AuditOptions>();
  auto* cmd = app.add_subcommand(
      "audit", "Coverage of contracts by bound tests that ran and passed; exit 1 on any failure the report lists");
  cmd->add_option("--contracts", o->contracts, "contract files or directories")->capture_default_str();
  cmd->add_option("--results", o->results,
                  "GoogleTest JSON result files or directories of them (several: the worst outcome of an id wins)")
      ->required();
  auto* b = cmd->add_option("--bindings", o->bindings, "output of <test binary> --popper-list-bindings");
  cmd->add_option("--test-binary", o->test_binary,
                  "contract test binary to ask for its bindings (and run mutants with)")
      ->excludes(b);
  cmd->add_option("--bench-claims", o->bench_claims, "reports/bench-claims.json from popper bench compare");
  cmd->add_option("--waivers", o->waivers, "waivers file: {id, reason, expires} per excused failure");
  cmd->add_flag("--mutants", o->run_mutants, "run every test under each of its mutants (needs --test-binary)");
  cmd->add_option("--mutant-results", o->mutant_results,
                  "mutant results written by `popper mutants` (e.g. CPU-matrix legs)");
  cmd->add_option("--bench-mutant-results", o->bench_mutant_results,
                  "bench-mutant results written by `popper bench mutants -o` (one file per family)");
  cmd->add_flag("--require-claims", o->require_claims,
                "fail on benchmark claims that are not met for any reason (not measured, inconclusive)");
  cmd->add_option("--today", o->today, "date for waiver expiry, YYYY-MM-DD (default: today, UTC)");
  cmd->add_option("--min-coverage", o->min_coverage, "fail below this % of obligations covered")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--jobs", o->jobs, "mutant runs in parallel")->check(CLI::Range(1, 64));
  cmd->add_option("-o,--output", o->out, "report directory")->capture_default_str();
  cmd->add_option("--junit", o->junit, "also write JUnit XML (one testcase per id and per mutant) for CI test views");
  cmd->callback([o, &exit_code] {
    auto set = load_or_report(o->contracts, "audit", exit_code);
    if (!set) return;
    try {
      AuditInputs in;
      in.contracts = std::move(*set);
      exit_code = run_audit(*o, in);
    } catch (const std::exception& e) {
      std::cerr << "popper audit: " << e.what() << "\n";
      exit_code = 2;
    }
  });

  // popper mutants: one site's mutant runs, for `popper audit --mutant-results`.
  auto m = std::make_shared<MutantsOptions>();
  auto* mc = app.add_subcommand(
      "mutants", "Run every test under each of its mutants and write the results (for popper audit --mutant-results)");
  mc->add_option("--contracts", m->contracts, "contract files or directories")->capture_default_str();
  mc->add_option("--test-binary", m->test_binary, "contract test binary")->required();
  mc->add_option("--exec-prefix", m->exec_prefix, "command to run the binary under, e.g. 'qemu-x86_64 -cpu Haswell'");
  mc->add_option("--site", m->site, "where this runs: native, emulated:<model>")->capture_default_str();
  mc->add_option("--env", m->env, "extra environment K=V for every run");
  mc->add_option("--paths", m->paths, "only mutants whose path is one of these, e.g. cpu:avx2");
  mc->add_option("--jobs", m->jobs, "runs in parallel")->check(CLI::Range(1, 64));
  mc->add_option("--timeout", m->timeout, "seconds before a run counts as a hang (detected)");
  mc->add_option("-o,--output", m->out, "results file")->capture_default_str();
  mc->callback([m, &exit_code] {
    const auto set = load_or_report(m->contracts, "mutants", exit_code);
    if (!set) return;
    try {
      exit_code = run_mutants_command(*m, *set);
    } catch (const std::exception& e) {
      std::cerr << "popper mutants: " << e.what() << "\n";
      exit_code = 2;
    }
  });
}

}  // namespace popper::cli
