// `popper bench check`: a current table against a baseline (bench/check.hpp),
// from two CSVs or from the base commit and this build run now in alternating
// trials (--against, bench/duet.hpp); --rerun measures rows again under the
// baseline's environment, the suite rows alternately with the baseline's own
// build (bench/remeasure.hpp, CheckOptions::interleave).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "bench/check.hpp"
#include "bench/duet.hpp"
#include "bench/remeasure.hpp"
#include "bench_cli.hpp"
#include "popper/error.hpp"

namespace popper::cli {

namespace {

struct CheckArgs {
  BenchDirs dirs;
  std::string baseline, current, against, family, rerun_out;
  std::vector<std::string> shapes{"gate"}, threads{"1,2"}, precisions{"f32,f64"};
  bool rerun = false, strict = false, absolute = false, no_interleave = false;
  int trials = 6, jobs = 2;
  double budget = 900;
  bench::Thresholds th;
};

// Prints what the re-measured rows run under (rerun_environment).
void say_rerun_environment(const bench::BenchTable& base, const bench::BenchTable& cur) {
  const auto recorded = base.environment();
  std::string text;
  for (const auto& [k, v] : recorded) text += fmt::format(" {}={}", k, v);
  std::cerr << "re-measuring with the baseline's environment:" << (text.empty() ? " (none recorded)" : text);
  if (const auto injected = cur.meta("injected_slowdown").value_or(""); !injected.empty())
    std::cerr << ", and the current run's POPPER_BENCH_INJECT_SLOWDOWN=" << injected;
  std::cerr << "\n";
}

int check(CheckArgs a) {
  bench::BenchTable base, cur;
  if (!a.against.empty()) {
    if (a.family.empty()) throw Error("--against needs --family");
    a.family = a.dirs.family(a.family).family;  // a project's family brings its tree
    const std::string build = a.dirs.build();
    bench::DuetOptions d;
    d.source_dir = a.dirs.source_dir;
    d.build_dir = build;
    d.against = a.against;
    d.family = a.family;
    d.shapes = split_list(a.shapes);
    d.threads = split_ints(a.threads);
    d.precisions = split_list(a.precisions);
    d.trials = a.trials;
    d.jobs = a.jobs;
    d.progress = progress;
    auto duet = bench::run_duet(d);
    base = std::move(duet.base);
    cur = std::move(duet.current);
  } else {
    if (a.baseline.empty() || a.current.empty())
      throw Error("give --baseline and --current, or --against REF --family F");
    try {
      base = bench::read_baseline(a.baseline);
    } catch (const bench::NoBaseline& e) {
      std::cerr << "popper bench check: " << e.what() << "\n";
      return 2;
    }
    cur = bench::read_bench_csv(a.current);
    if (const auto inj = cur.meta("injected_slowdown"))
      std::cerr << "note: the current run was measured with POPPER_BENCH_INJECT_SLOWDOWN=" << *inj << "\n";
  }
  bench::CheckOptions copt;
  copt.thresholds = a.th;
  copt.budget_seconds = a.budget;
  copt.normalize_on_drift = !a.absolute;
  if (a.rerun && a.against.empty() && !cur.rows.empty()) a.dirs.family(cur.rows.front().key.family);
  const std::string build = a.dirs.build();
  if (a.rerun) {
    say_rerun_environment(base, cur);
    const auto env = bench::rerun_environment(base, cur);
    copt.remeasure = bench::rerun_measure(a.dirs.source_dir, build, env, bench::next_trial(cur), progress);
    // Suite rows are measured again alternately with the baseline's own build
    // where it can be had (not after --against, whose trials alternate already).
    std::string why;
    if (!a.against.empty()) why = "--against alternated every trial already";
    else if (a.no_interleave) why = "--no-interleave";
    bench::BaselineBuildOptions bo{a.dirs.source_dir, build, a.jobs, progress};
    std::string label;
    const auto base_build = why.empty() ? bench::baseline_build(base, cur, bo, label, why) : std::nullopt;
    if (base_build) {
      std::cerr << "re-measuring suite rows interleaved with the baseline's side: " << label << "\n";
      // The baseline's side: its recorded environment, never an injected slowdown.
      copt.interleave = bench::interleaved_measure(a.dirs.source_dir, build, env, *base_build,
                                                   bench::rerun_environment(base, bench::BenchTable{}),
                                                   bench::next_trial(cur), progress);
      copt.interleave.baseline = label;
    } else {
      std::cerr << "re-measuring on this build alone (not interleaved: " << why << ")\n";
    }
  }
  auto report = bench::check_tables(base, cur, copt);
  std::cout << bench::format_check_report(report);
  if (!a.rerun_out.empty() && report.interleaved_current.rows.empty())
    std::cerr << "--rerun-out: no row was measured interleaved, nothing written\n";
  if (!a.rerun_out.empty() && !report.interleaved_current.rows.empty()) {
    std::filesystem::create_directories(a.rerun_out);
    for (auto [side, table] :
         {std::pair{"current", &report.interleaved_current}, std::pair{"baseline", &report.interleaved_baseline}}) {
      table->metadata = (side == std::string("current") ? cur : base).metadata;
      table->set_meta("interleaved", std::string("the ") + side + " side of check --rerun's interleaved trials (" +
                                         copt.interleave.baseline + ")");
      const std::string path = a.rerun_out + "/interleaved-" + side + ".csv";
      bench::write_bench_csv(path, *table);
      std::cerr << "wrote " << path << "\n";
    }
  }
  if (report.count(bench::Change::Noisy) > 0)
    std::cerr << report.count(bench::Change::Noisy) << " row(s) NOISY: too uncertain to decide at the "
              << "regression threshold; re-measure with --rerun, add trials, or quiet the machine"
              << (a.strict ? " (--strict: they fail)" : "") << "\n";
  return report.exit_code(a.strict);
}

}  // namespace

void add_bench_check_command(CLI::App& bench, int& exit_code) {
  auto* cmd = bench.add_subcommand(
      "check", "Judge current vs baseline rows with trial-aware intervals; exit 1 on REGRESSION or MISSING");
  auto a = std::make_shared<CheckArgs>();
  add_dir_options(cmd, a->dirs);
  cmd->add_option("--baseline", a->baseline, "baseline CSV (baselines/<fingerprint>/<family>.csv)");
  cmd->add_option("--current", a->current, "current CSV (reports/bench-<family>.csv)");
  cmd->add_option("--against", a->against,
                  "instead of CSVs: build REF (a commit) and run it and this build in alternating trials now");
  cmd->add_option("--family", a->family, "with --against: the bench family");
  cmd->add_option("--shapes", a->shapes, "with --against: gate | full | shape names");
  cmd->add_option("--threads", a->threads, "with --against: thread counts");
  cmd->add_option("--precision", a->precisions, "with --against: precisions");
  cmd->add_option("--trials", a->trials, "with --against: alternating trials per side");
  cmd->add_flag("--rerun", a->rerun,
                "measure rows again while the budget lasts: every suite row alternately with the baseline's commit "
                "(built here when it is not this build) and judged on those trials, then what stays NOISY; "
                "NOISY and REGRESSION ceiling rows on this build (all under the baseline's environment)");
  cmd->add_flag("--no-interleave", a->no_interleave,
                "with --rerun: measure rows again on this build alone, not alternately with the baseline's commit");
  cmd->add_option("--rerun-out", a->rerun_out,
                  "with --rerun: write the interleaved trials of each side to DIR/interleaved-{current,baseline}.csv");
  cmd->add_option("--budget", a->budget, "seconds re-measuring may take");
  cmd->add_flag("--strict", a->strict, "NOISY rows fail too");
  cmd->add_flag("--absolute", a->absolute,
                "compare absolute times even when the ceiling rows show the machine itself got slower or faster");
  cmd->add_option(
      "--alpha", a->th.alpha,
      "false discovery rate over the table (Benjamini-Hochberg; a clean table flags a row with at most this chance)");
  cmd->add_option("--regression-threshold", a->th.regression, "fraction slower that is a regression (0.10)");
  cmd->add_option("--warning-threshold", a->th.warning, "fraction slower that is a warning (0.05)");
  cmd->callback([a, &exit_code] {
    try {
      exit_code = check(*a);
    } catch (const std::exception& e) {
      std::cerr << "popper bench check: " << e.what() << "\n";
      exit_code = 2;
    }
  });
}

}  // namespace popper::cli
