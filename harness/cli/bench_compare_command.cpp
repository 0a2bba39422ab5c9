// `popper bench compare`: plan the trials (bench/plan.hpp), run the three
// tiers (bench/compare.hpp), judge the contracts' claims, measuring the
// inconclusive ones again while the budget lasts (bench/remeasure.hpp), and
// write the CSV, Markdown, SVG and bench-claims.json.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>

#include "bench/compare.hpp"
#include "bench/device_peak.hpp"
#include "bench/merge.hpp"
#include "bench/pace.hpp"
#include "bench/plan.hpp"
#include "bench/remeasure.hpp"
#include "bench/report.hpp"
#include "bench/trials.hpp"
#include "bench_cli.hpp"
#include "popper/error.hpp"
#include "popper/io.hpp"
#include "popper/loader.hpp"

namespace popper::cli {

namespace {

namespace fs = std::filesystem;

struct CompareArgs {
  BenchDirs dirs;
  std::string family = "gemm";
  std::vector<std::string> shapes{"gate"}, threads{"1,2"}, precisions{"f32,f64"}, tiers{"ceiling,wrapped,hand"};
  bench::TrialRequest request;
  std::string noise_from, shard;
  double min_time = 0;  // 0: kMinTimeInTurns or kMinTimeAlone
  bool no_turns = false;
  double step_timeout = 0;  // 0: the rule in CompareOptions
  std::string out = "reports";
  std::string contracts = "contracts";
  bool no_core_types = false, refresh_peak = false, rescreen = false;
  bool device = false;  // the family's device tiers (family.yaml 'device:')
  bool require_device = false;
};

bench::CompareOptions compare_options(const CompareArgs& a, const bench::FamilyDescriptor& fam, bool precision_given) {
  bench::CompareOptions co;
  co.source_dir = a.dirs.source_dir;
  co.build_dir = a.dirs.build();
  co.shapes = split_list(a.shapes);
  if (!a.shard.empty()) {
    const auto shard = bench::parse_shard(a.shard);
    co.shapes =
        bench::shard_shapes(bench::select_shapes(co.shapes, bench::list_family_shapes(co.build_dir, fam), fam), shard);
    if (co.shapes.empty()) throw Error("--shard " + a.shard + ": this shard has no shapes (fewer shapes than shards)");
    std::cerr << "shard " << a.shard << ": " << co.shapes.size() << " shape(s)\n";
  }
  co.tiers = bench::tiers_from(split_list(a.tiers), "--tiers");
  co.precisions = split_list(a.precisions);
  // Without --precision: the precisions the family measures (its peak map), so
  // a bf16-only family (nsa) is not silently reduced to its ceiling rows.
  if (!precision_given && !fam.peak.empty()) {
    co.precisions.clear();
    for (const auto& [prec, unit] : fam.peak) co.precisions.push_back(prec);
  }
  co.threads = split_ints(a.threads);
  if (a.device) co.env = fam.device->env;
  co.require_device = a.require_device;
  co.turns = !a.no_turns;
  co.min_time = a.min_time > 0 ? a.min_time : co.turns ? bench::kMinTimeInTurns : bench::kMinTimeAlone;
  co.step_timeout_seconds = a.step_timeout;
  co.blas_core_types = !a.no_core_types;
  co.rescreen = a.rescreen;
  co.progress = progress;
  return co;
}

// The contracts whose claims are judged; a folder with errors still gives the ones that loaded.
std::vector<Contract> claim_contracts(const std::string& folder) {
  if (!fs::exists(folder)) return {};
  Diagnostics diags;
  auto set = load_contract_set({folder}, diags);
  if (diags.has_errors())
    std::cerr << "warning: contracts have errors (popper validate " << folder
              << "); claims evaluated on the contracts that loaded\n";
  return std::move(set.contracts);
}

void write_reports(const std::string& out, const std::string& name, const bench::BenchTable& table,
                   const bench::FamilyDescriptor& fam, const bench::PeakResult& peak) {
  fs::create_directories(out);
  const std::string stem = out + "/bench-" + name;
  bench::write_bench_csv(stem + ".csv", table);
  popper::write_file_atomic(stem + ".md", bench::render_markdown(table, fam.family));
  const auto kind = [&](const char* p) {
    auto it = fam.peak.find(p);
    return it == fam.peak.end() ? std::string() : it->second;
  };
  popper::write_file_atomic(stem + ".svg", bench::render_svg(table, fam.family, &peak, kind("f32"), kind("f64")));
  // Which processes ran on a slow CPU (pace.hpp): the bench CSV has no column for it.
  const std::string pace = bench::pace_csv(table);
  const bool paced = pace.find('\n') + 1 < pace.size();
  if (paced) popper::write_file_atomic(stem + "-pace.csv", pace);
  std::cout << bench::render_markdown(table, fam.family);
  std::cerr << "wrote " << stem << ".csv, .md, .svg" << (paced ? ", -pace.csv" : "") << "\n";
}

int compare(CompareArgs a, bool precision_given) {
  const auto started = std::chrono::steady_clock::now();
  const auto found = a.dirs.family(a.family, &a.contracts);
  const auto fam = a.device ? bench::on_device(found) : found;
  const std::string build = a.dirs.build();
  const auto machine = bench::probe_machine();
  auto peak = bench::cached_or_measured_peak(build + "/peak.json", machine, a.refresh_peak, progress);
  if (a.device) {
    // Without a device the rows are skipped with the reason; the peak is then
    // unknown too (their % of peak stays empty), never guessed.
    try {
      bench::add_device_peak(
          peak, bench::cached_or_measured_device_peak(build, build + "/bin", machine.gpu, a.refresh_peak, progress));
    } catch (const std::exception& e) {
      std::cerr << "popper bench compare --device: no device peak: " << e.what() << "\n";
    }
  }
  auto co = compare_options(a, fam, precision_given);
  const bench::SharedReferences references;  // one for the run and its re-measures
  references.add_to(co.env);
  auto request = a.request;
  request.noise_csv = bench::noise_source(a.noise_from, a.dirs.source_dir, bench::fingerprint(machine), fam.family);
  const auto plan = bench::plan_trials(co, request);
  bench::apply(plan, co);
  std::cerr << bench::describe(plan);
  auto table = bench::run_compare(co, fam, machine, &peak);

  // Contract claims, judged with their uncertainty; inconclusive groups are
  // measured again (more trials) while the budget lasts, and a failing group
  // must fail again in a replicate (remeasure.hpp). A claim about a
  // family nobody can bench would never be measured: that is an error.
  const auto contracts = claim_contracts(a.contracts);
  const auto families = bench::list_families(a.dirs.source_dir, build);
  for (const auto& c : contracts)
    for (const auto& b : c.benchmarks)
      if (std::find(families.begin(), families.end(), b.family) == families.end() && b.family != fam.family)
        throw Error(c.stem + ": claim " + b.id + " names bench family '" + b.family + "', which is neither in " +
                    a.dirs.source_dir + "/bench nor in " + build + "/popper-bench");
  const auto family_shapes = bench::list_family_shapes(build, fam);
  bench::ClaimRemeasure how;
  how.judge = [&](const bench::BenchTable& t, double alpha) {
    return bench::evaluate_claims(contracts, fam.family, t, &peak, fam.peak, family_shapes, alpha);
  };
  how.measure = [&](const std::vector<bench::BenchKey>& rows, int first_trial, int trials) {
    bench::CompareOptions more = co;
    bench::restrict_to_rows(more, rows);
    more.trials = trials;
    more.top_up_trials = 0;
    more.first_trial = first_trial;
    // What is left of the run's budget, not the whole of it again: a
    // replicate of every trial would otherwise double the run. --budget
    // bounds a round whether the first trials were counted (auto) or given.
    more.budget_seconds = std::max(
        1.0, how.budget_seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    return bench::run_compare(more, fam, machine, &peak);
  };
  how.first_trial = bench::next_trial(table);  // after the top-up and any implausible ceiling's re-measure
  how.budget_seconds = request.budget;
  how.started = started;
  how.progress = progress;
  const auto claims = bench::judge_claims_remeasuring(table, fam, &peak, how);
  // Over the rounds' processes too: merge_rows kept their pace and link.
  if (const std::string pace = bench::pace_summary(table); !pace.empty()) table.set_meta("pace", pace);

  if (bench::record_noise(table, co, plan.sigma))
    std::cerr << "between-trial noise: " << table.meta("noise_between_trials").value_or("") << "; a check against an "
              << "equal run flags a slowdown of " << table.meta("detectable_slowdown").value_or("") << "\n";
  if (!a.shard.empty()) table.set_meta("shard", a.shard);
  table.set_meta("duration_seconds",
                 std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()));
  const std::string name = a.device ? fam.family + "-device" : fam.family;
  write_reports(a.out, name, table, fam, peak);
  report_claims(a.out + "/bench-claims" + (a.device ? "-device" : "") + ".json", fam.family, claims);
  // A kernel that computed a wrong answer, or a timing no kernel can have, is a failure of the run.
  // So is a row that did not run where a device is required.
  int failed = 0;
  for (const auto& r : table.rows)
    if (r.verdict.failed()) {
      std::cerr << "popper bench compare: " << (r.verdict.is_incorrect() ? "INCORRECT " : "INVALID ")
                << r.key.to_string() << ": " << r.verdict.label << "\n";
      ++failed;
    } else if (a.require_device && r.verdict.kind == bench::VerdictKind::NotRun) {
      std::cerr << "popper bench compare: NOT RUN under --require-device " << r.key.to_string() << ": "
                << r.verdict.label << "\n";
      ++failed;
    }
  return failed > 0 ? 1 : 0;
}

}  // namespace

void add_bench_compare_command(CLI::App& bench, int& exit_code) {
  auto* cmd = bench.add_subcommand(
      "compare", "Run ceiling, wrapped and hand tiers in shuffled trials; write reports and claim verdicts");
  auto a = std::make_shared<CompareArgs>();
  add_dir_options(cmd, a->dirs);
  cmd->add_option("--family", a->family,
                  "bench family (<build>/popper-bench/<family>/family.yaml, bench/<family>/family.yaml), or a "
                  "descriptor's path");
  cmd->add_option("--shapes", a->shapes, "gate | full | all | shape names (default gate)");
  cmd->add_option("--reps", a->request.reps,
                  "repetitions per step in all, split over the trials (auto: from the noise)");
  cmd->add_option("--trials", a->request.trials,
                  "processes per step (auto: enough to see a 2x-threshold slowdown with 80% power)");
  cmd->add_option("--budget", a->request.budget,
                  "seconds the run (and re-measuring inconclusive claims) may take; with --trials auto no trial "
                  "starts that would pass it, after the first two");
  cmd->add_option("--noise-from", a->noise_from,
                  "a bench CSV whose between-trial noise sizes --trials auto "
                  "(default: the committed baseline of this machine, if any)");
  cmd->add_option("--threads", a->threads, "thread counts, e.g. 1,2");
  cmd->add_option("--precision", a->precisions, "precisions, e.g. f32,f64");
  cmd->add_option("--tiers", a->tiers, "tiers to run (ceiling,wrapped,hand,reference)");
  cmd->add_option("--min-time", a->min_time,
                  "minimum seconds per repetition (Google Benchmark; default 0.05 in turns, 0.2 with --no-turns)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--no-turns", a->no_turns,
                "run a trial's processes one after another, not at once taking turns on the CPUs repetition by "
                "repetition (the two sides of a ratio then meet the host's changing load apart)");
  cmd->add_option("--step-timeout", a->step_timeout,
                  "seconds one step's process may run before it is killed and its rows left out (default: 120 plus "
                  "ten times its repetitions' min time)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--out", a->out, "report folder");
  cmd->add_option("--contracts", a->contracts, "contract folder whose benchmarks claims are evaluated");
  cmd->add_flag("--no-core-types", a->no_core_types, "run the ceiling only under the default OpenBLAS core");
  cmd->add_flag("--refresh-peak", a->refresh_peak, "re-measure the machine peak");
  cmd->add_flag("--rescreen", a->rescreen,
                "time the ceiling configurations on the check shape again, not reusing the last run's timings");
  cmd->add_flag("--device", a->device,
                "run the family's device tiers (family.yaml 'device:'; gemm: cuBLAS and the hand CUDA kernels, "
                "f32/f16/bf16, one host thread) into bench-<family>-device.*; without a device the rows are skipped "
                "with the reason");
  cmd->add_flag(
      "--require-device", a->require_device,
      "a device run's ceiling that declines (no device) fails the run instead of being noted (make gpu-check)");
  cmd->add_option("--shard", a->shard,
                  "K/N: measure only every N-th shape from the K-th (a CI matrix or "
                  "Slurm array job; join the CSVs with popper bench merge)");
  cmd->callback([a, cmd, &exit_code] {
    try {
      if (a->device && cmd->get_option("--threads")->count() == 0) a->threads = {"1"};  // host threads: one launcher
      exit_code = compare(*a, cmd->get_option("--precision")->count() > 0);
    } catch (const std::exception& e) {
      std::cerr << "popper bench compare: " << e.what() << "\n";
      exit_code = 2;
    }
  });
}

}  // namespace popper::cli
