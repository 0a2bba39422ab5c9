// `popper bench compare | check | gate | baseline save` (see baselines/README.md).
#include <algorithm>
#include <cmath>
#include <tuple>
#include <optional>
#include <set>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "popper/io.hpp"
#include "bench/check.hpp"
#include "bench/claims.hpp"
#include "bench/compare.hpp"
#include "bench/csv.hpp"
#include "bench/family.hpp"
#include "bench/gate.hpp"
#include "bench/ingest.hpp"
#include "bench/interval.hpp"
#include "bench/machine.hpp"
#include "bench/merge.hpp"
#include "bench/peak.hpp"
#include "bench/report.hpp"
#include "bench/stats.hpp"
#include "popper/error.hpp"
#include "popper/loader.hpp"

namespace popper::cli {

void add_bench_threshold_command(CLI::App& bench, int& exit_code);  // threshold_command.cpp

namespace {

namespace fs = std::filesystem;

void progress(const std::string& s) { std::cerr << s << std::endl; }

std::vector<std::string> split_list(const std::vector<std::string>& in) {
  std::vector<std::string> out;
  for (const auto& item : in) {
    std::stringstream ss(item);
    std::string part;
    while (std::getline(ss, part, ','))
      if (!part.empty()) out.push_back(part);
  }
  return out;
}

struct CommonOptions {
  std::string source_dir = ".";
  std::string build_dir;
  std::string build() const { return build_dir.empty() ? default_build_dir() : build_dir; }
};

void add_common(CLI::App* cmd, CommonOptions& o) {
  cmd->add_option("--source-dir", o.source_dir, "repository root (holds bench/ and contracts/)");
  cmd->add_option("--build-dir", o.build_dir, "build tree holding bin/ (default: the one this popper lives in)");
}

// Writes the verdicts to `path` (bench-claims.json, other families kept) and prints them.
void report_claims(const std::string& path, const std::string& family, const std::vector<bench::ClaimResult>& claims) {
  bench::write_claims_json(path, family, claims);
  for (const auto& c : claims) std::cout << c.id << " (" << c.contract << "): " << c.verdict << " — " << c.detail << "\n";
  std::cerr << "wrote " << path << " (" << claims.size() << " claims)\n";
}

// bench-gemm.csv -> gemm.csv, bench-gemm-gate.csv -> gemm-gate.csv
std::string baseline_name(const std::string& from) {
  std::string name = fs::path(from).filename().string();
  if (name.rfind("bench-", 0) == 0) name = name.substr(6);
  return name;
}


// "K=V K2=V2" (the CSV's `environment` metadata) -> pairs.
std::vector<std::pair<std::string, std::string>> parse_environment(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> env;
  std::istringstream in(text);
  for (std::string kv; in >> kv;) {
    const auto eq = kv.find('=');
    if (eq != std::string::npos && kv != "none") env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

// The per-row level trials are planned at: the table's alpha over an estimate
// of its rows, the level one changed row alone must reach (Benjamini-
// Hochberg's first rank; more changed rows are judged at a laxer level).
double planning_alpha(const bench::CompareOptions& co) {
  const std::size_t rows_estimate = std::max<std::size_t>(1, co.threads.size() * co.precisions.size() * 3 * 4);
  return bench::Thresholds{}.alpha / static_cast<double>(rows_estimate);
}

// What a finished run can see: the between-trial noise it measured on the rows
// a change can move (not the vendor's), and the slowdown a check of an equally
// noisy run against it flags with 80% power. Printed and kept in the metadata,
// so a NOISY verdict later has its cause on record.
void record_noise(bench::BenchTable& table, const bench::CompareOptions& co, double planned_sigma) {
  std::vector<double> sd;
  for (const auto& r : table.rows)
    if (r.unit == bench::kUnitSeconds && r.key.tier != "ceiling" && bench::trial_count({&r.samples, &r.trials}) >= 2)
      sd.push_back(bench::between_trial_log_sd({&r.samples, &r.trials}));
  if (sd.empty() || co.trials < 2) return;
  const double noise = bench::median(sd);
  const double slowdown = bench::detectable_ratio(noise, co.trials, 1 + bench::Thresholds{}.regression, planning_alpha(co), 0.8);
  char buf[200];
  std::snprintf(buf, sizeof buf, "median %.1f%% over %zu rows (hand, wrapped, reference); trials were planned for %.1f%%",
                100 * noise, sd.size(), 100 * planned_sigma);
  table.set_meta("noise_between_trials", buf);
  std::snprintf(buf, sizeof buf, "%.2fx at 80%% power (%d trials a side, at this noise)", slowdown, co.trials);
  table.set_meta("detectable_slowdown", buf);
  std::cerr << "between-trial noise: " << table.meta("noise_between_trials").value_or("") << "; a check against an "
            << "equal run flags a slowdown of " << table.meta("detectable_slowdown").value_or("") << "\n";
}

// --reps / --trials / --budget -> trials and repetitions per trial. Auto sizes
// the trials so that a slowdown of twice the regression threshold (20%) is
// flagged with 80% power at that level (planning_alpha), from the between-trial
// noise of a previous run of this machine (or a 3% prior when there is none).
double plan_trials(bench::CompareOptions& co, const std::string& reps_text, const std::string& trials_text,
                 double budget, const std::string& noise_from, const bench::FamilyDescriptor& fam,
                 const bench::MachineInfo& machine, const std::string& source_dir) {
  const bench::Thresholds th;
  auto parse_count = [](const std::string& v, const char* what) {
    try {
      std::size_t used = 0;
      const int n = std::stoi(v, &used);
      if (used != v.size() || n < 1 || n > 1000) throw std::invalid_argument(v);
      return n;
    } catch (const std::exception&) {
      throw Error(std::string("--") + what + " wants auto or a count in 1..1000, got '" + v + "'");
    }
  };
  const int reps = reps_text == "auto" ? 0 : parse_count(reps_text, "reps");
  const int trials = trials_text == "auto" ? 0 : parse_count(trials_text, "trials");
  if (reps == 1 || trials == 1)
    throw Error("one repetition (or one trial) per step can never reach significance: the noise between processes is "
                "unknown; the minimum is --reps 2 (two trials of one repetition)");
  // Noise: the largest between-trial sd of log medians over the rows of a previous run.
  std::string source = noise_from;
  if (source.empty()) {
    const std::string committed = source_dir + "/baselines/" + bench::fingerprint(machine) + "/" + fam.family + ".csv";
    if (fs::exists(committed)) source = committed;
  }
  double sigma = 0.03;
  std::string sigma_from = "a 3% prior (no earlier run of this machine to measure it from)";
  if (!source.empty()) {
    const auto t = bench::read_bench_csv(source);
    double worst = 0;
    for (const auto& r : t.rows)
      if (r.unit == bench::kUnitSeconds && !r.samples.empty())
        worst = std::max(worst, bench::between_trial_log_sd({&r.samples, &r.trials}));
    if (worst > 0) {
      sigma = worst;
      sigma_from = source;
    }
  }
  const double alpha = planning_alpha(co);
  const int needed = bench::trials_for_power(sigma, 1 + 2 * th.regression, 1 + th.regression, alpha, 0.8);
  co.reps_per_trial = 2;
  if (trials > 0) co.trials = trials;
  else if (reps > 0) co.trials = std::min(reps, std::max(needed, 2));
  else co.trials = needed;
  if (reps > 0) co.reps_per_trial = (reps + co.trials - 1) / co.trials;
  // Budget: about (1 + reps) x min_time per process, for every step of a trial.
  const double per_trial = 1.3 * (1 + co.reps_per_trial) * std::max(co.min_time, 0.05) *
                           static_cast<double>(co.threads.size() * co.precisions.size() * co.tiers.size() * 4);
  if (trials == 0 && reps == 0) {
    if (per_trial * co.trials > budget) co.trials = std::max(2, static_cast<int>(budget / per_trial));
    co.budget_seconds = budget;  // the estimate above can be far off; the run enforces it per trial
  }
  std::cerr << "trials: " << co.trials << " x " << co.reps_per_trial << " repetitions per step (between-trial noise "
            << static_cast<int>(std::round(sigma * 1000)) / 10.0 << "% from " << sigma_from << "; " << needed
            << " trials flag a 20% slowdown with 80% power)\n";
  if (co.trials < needed)
    std::cerr << "warning: " << co.trials << " trials are fewer than the " << needed
              << " that power needs: a real slowdown may come out NOISY\n";
  return sigma;
}

// Base and current built side by side, run in alternating trials (ABBA order,
// each trial's steps shuffled), so noise shared by the two cancels.
std::pair<bench::BenchTable, bench::BenchTable> duet(const std::string& src, const std::string& build,
                                                     const std::string& against, const std::string& family,
                                                     const std::vector<std::string>& shapes,
                                                     const std::vector<std::string>& threads,
                                                     const std::vector<std::string>& precisions, int trials, int jobs) {
  if (trials < 2) throw Error("--trials must be >= 2 for a testable comparison");
  const auto fam = bench::load_family(src, family);
  bench::RefBuildOptions rb;
  rb.source_dir = src;
  rb.build_dir = build;
  rb.ref = against == "auto" ? bench::default_reference(src) : against;
  rb.families = {family};
  rb.jobs = jobs;
  rb.progress = progress;
  std::string sha;
  const std::string ref_build = bench::build_reference(rb, &sha);
  if (!fs::exists(ref_build + "/bin/" + fam.executable)) throw Error(family + " does not exist at " + sha);
  const auto machine = bench::probe_machine();
  bench::CompareOptions co;
  co.source_dir = src;
  co.shapes = shapes;
  co.tiers = {"wrapped", "hand"};
  co.precisions = precisions;
  co.threads.clear();
  for (const auto& t : threads) co.threads.push_back(std::stoi(t));
  co.trials = 1;
  co.reps_per_trial = 2;
  co.blas_core_types = false;
  co.progress = progress;
  bench::BenchTable base, cur;
  for (int t = 0; t < trials; ++t) {
    const bool current_first = t % 4 == 0 || t % 4 == 3;  // ABBA
    for (int side = 0; side < 2; ++side) {
      const bool is_current = (side == 0) == current_first;
      co.build_dir = is_current ? build : ref_build;
      co.first_trial = t;
      std::cerr << "duet trial " << t + 1 << "/" << trials << ": " << (is_current ? "current" : "base " + sha.substr(0, 12)) << "\n";
      auto one = bench::run_compare(co, fam, machine, nullptr);
      auto& into = is_current ? cur : base;
      if (into.metadata.empty()) into.metadata = one.metadata;
      bench::merge_rows(into.rows, one.rows);
    }
  }
  base.set_meta("commit", sha);
  base.set_meta("fingerprint", cur.meta("fingerprint").value_or(""));
  return {base, cur};
}

}  // namespace

void add_bench_commands(CLI::App& app, int& exit_code) {
  auto* bench = app.add_subcommand("bench", "Three-tier benchmarks, regression checks, baselines");
  bench->require_subcommand(1);
  add_bench_threshold_command(*bench, exit_code);

  // ---- compare ----
  {
    auto* cmd = bench->add_subcommand("compare", "Run ceiling, wrapped and hand tiers in shuffled trials; write reports and claim verdicts");
    struct Opt {
      CommonOptions common;
      std::string family = "gemm";
      std::vector<std::string> shapes{"gate"}, threads{"1,2"}, precisions{"f32,f64"}, tiers{"ceiling,wrapped,hand"};
      std::string reps = "auto", trials = "auto", noise_from, shard;
      double min_time = 0.2, budget = 1800;
      std::string out = "reports";
      std::string contracts = "contracts";
      bool no_core_types = false, refresh_peak = false;
    };
    auto o = std::make_shared<Opt>();
    add_common(cmd, o->common);
    cmd->add_option("--family", o->family, "bench family (bench/<family>/family.yaml)");
    cmd->add_option("--shapes", o->shapes, "gate | full | all | shape names (default gate)");
    cmd->add_option("--reps", o->reps, "repetitions per step in all, split over the trials (auto: from the noise)");
    cmd->add_option("--trials", o->trials, "processes per step (auto: enough to see a 2x-threshold slowdown with 80% power)");
    cmd->add_option("--budget", o->budget,
                    "seconds the run (and re-measuring inconclusive claims) may take; with --trials auto no trial "
                    "starts that would pass it, after the first two");
    cmd->add_option("--noise-from", o->noise_from, "a bench CSV whose between-trial noise sizes --trials auto "
                                                  "(default: the committed baseline of this machine, if any)");
    cmd->add_option("--threads", o->threads, "thread counts, e.g. 1,2");
    cmd->add_option("--precision", o->precisions, "precisions, e.g. f32,f64");
    cmd->add_option("--tiers", o->tiers, "tiers to run (ceiling,wrapped,hand,reference)");
    cmd->add_option("--min-time", o->min_time, "minimum seconds per repetition (Google Benchmark)");
    cmd->add_option("--out", o->out, "report folder");
    cmd->add_option("--contracts", o->contracts, "contract folder whose benchmarks claims are evaluated");
    cmd->add_flag("--no-core-types", o->no_core_types, "run the ceiling only under the default OpenBLAS core");
    cmd->add_flag("--refresh-peak", o->refresh_peak, "re-measure the machine peak");
    cmd->add_option("--shard", o->shard, "K/N: measure only every N-th shape from the K-th (a CI matrix or "
                                         "Slurm array job; join the CSVs with popper bench merge)");
    cmd->callback([o, cmd, &exit_code] {
      try {
        const auto started = std::chrono::steady_clock::now();
        const std::string build = o->common.build();
        const auto fam = bench::load_family(o->common.source_dir, o->family);
        const auto machine = bench::probe_machine();
        const auto peak = bench::cached_or_measured_peak(build + "/peak.json", machine, o->refresh_peak, progress);
        bench::CompareOptions co;
        co.source_dir = o->common.source_dir;
        co.build_dir = build;
        co.shapes = split_list(o->shapes);
        if (!o->shard.empty()) {
          const auto shard = bench::parse_shard(o->shard);
          co.shapes = bench::shard_shapes(bench::select_shapes(co.shapes, bench::list_family_shapes(build, fam), fam), shard);
          if (co.shapes.empty()) throw Error("--shard " + o->shard + ": this shard has no shapes (fewer shapes than shards)");
          std::cerr << "shard " << o->shard << ": " << co.shapes.size() << " shape(s)\n";
        }
        co.tiers = split_list(o->tiers);
        co.precisions = split_list(o->precisions);
        // Without --precision: the precisions the family measures (its peak map), so
        // a bf16-only family (nsa) is not silently reduced to its ceiling rows.
        if (cmd->get_option("--precision")->count() == 0 && !fam.peak.empty()) {
          co.precisions.clear();
          for (const auto& [prec, unit] : fam.peak) co.precisions.push_back(prec);
        }
        co.threads.clear();
        for (const auto& t : split_list(o->threads)) co.threads.push_back(std::stoi(t));
        co.min_time = o->min_time;
        co.blas_core_types = !o->no_core_types;
        co.progress = progress;
        const double planned_sigma =
            plan_trials(co, o->reps, o->trials, o->budget, o->noise_from, fam, machine, o->common.source_dir);
        auto table = bench::run_compare(co, fam, machine, &peak);

        // Contract claims, judged with their uncertainty; inconclusive groups are
        // measured again (more trials) while the budget lasts.
        Diagnostics diags;
        std::vector<Contract> contracts;
        if (fs::exists(o->contracts)) {
          auto set = load_contract_set({o->contracts}, diags);
          contracts = std::move(set.contracts);
          if (diags.has_errors())
            std::cerr << "warning: contracts have errors (popper validate " << o->contracts
                      << "); claims evaluated on the contracts that loaded\n";
        }
        const auto family_shapes = bench::list_family_shapes(build, fam);
        auto claims = bench::evaluate_claims(contracts, fam.family, table, &peak, fam.peak, family_shapes);
        int next_trial = co.trials;
        for (int round = 0; round < 3; ++round) {
          std::set<std::string> again;
          for (const auto& c : claims)
            for (const auto& [shape, prec, th] : c.inconclusive_groups) again.insert(shape);
          const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
          if (again.empty() || spent > o->budget) break;
          std::cerr << "claims inconclusive on " << again.size() << " shape(s): measuring 2 more trials of them ("
                    << static_cast<int>(spent) << " of " << static_cast<int>(o->budget) << " s of budget spent)\n";
          bench::CompareOptions more = co;
          more.shapes.assign(again.begin(), again.end());
          more.trials = 2;
          more.first_trial = next_trial;
          next_trial += 2;
          const auto extra = bench::run_compare(more, fam, machine, &peak);
          for (const auto& r : extra.rows)
            for (auto& t : table.rows)
              if (t.key == r.key)
                for (std::size_t i = 0; i < r.samples.size(); ++i) {
                  t.trials.resize(t.samples.size(), 0);
                  t.samples.push_back(r.samples[i]);
                  t.trials.push_back(r.trial_of(i));
                }
          bench::apply_peaks(table, fam, &peak);
          claims = bench::evaluate_claims(contracts, fam.family, table, &peak, fam.peak, family_shapes);
        }
        record_noise(table, co, planned_sigma);
        if (!o->shard.empty()) table.set_meta("shard", o->shard);
        table.set_meta("duration_seconds",
                       std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()));
        fs::create_directories(o->out);
        const std::string stem = o->out + "/bench-" + fam.family;
        bench::write_bench_csv(stem + ".csv", table);
        popper::write_file_atomic(stem + ".md", bench::render_markdown(table, fam.family));
        const auto kind = [&](const char* p) {
          auto it = fam.peak.find(p);
          return it == fam.peak.end() ? std::string() : it->second;
        };
        popper::write_file_atomic(stem + ".svg", bench::render_svg(table, fam.family, &peak, kind("f32"), kind("f64")));
        std::cout << bench::render_markdown(table, fam.family);
        std::cerr << "wrote " << stem << ".csv, .md, .svg\n";
        report_claims(o->out + "/bench-claims.json", fam.family, claims);
        // A kernel that computed a wrong answer is a failure of the run, whatever its speed.
        int incorrect = 0;
        for (const auto& r : table.rows)
          if (r.verdict.rfind("incorrect", 0) == 0) {
            std::cerr << "popper bench compare: INCORRECT " << r.key.to_string() << ": " << r.verdict << "\n";
            ++incorrect;
          }
        exit_code = incorrect > 0 ? 1 : 0;
      } catch (const std::exception& e) {
        std::cerr << "popper bench compare: " << e.what() << "\n";
        exit_code = 2;
      }
    });
  }

  // ---- merge ----
  {
    auto* cmd = bench->add_subcommand("merge", "Join bench CSVs (e.g. the shards of bench compare --shard K/N) into one");
    struct Opt {
      CommonOptions common;
      std::vector<std::string> inputs;
      std::string out, claims;
      bool allow_mixed = false;
    };
    auto o = std::make_shared<Opt>();
    add_common(cmd, o->common);
    cmd->add_option("inputs", o->inputs, "bench CSVs")->required();
    cmd->add_option("-o,--output", o->out, "merged CSV")->required();
    cmd->add_flag("--allow-mixed", o->allow_mixed, "merge tables from different machines or builds (marked mixed)");
    cmd->add_option("--claims", o->claims,
                    "contract folder: judge its benchmark claims on the merged table (runs measured apart, judged "
                    "together) and write bench-claims.json beside the output");
    cmd->callback([o, &exit_code] {
      try {
        std::vector<std::pair<std::string, bench::BenchTable>> tables;
        for (const auto& f : o->inputs) tables.emplace_back(f, bench::read_bench_csv(f));
        const auto merged = bench::merge_tables(tables, o->allow_mixed);
        bench::write_bench_csv(o->out, merged);
        std::cerr << "wrote " << o->out << " (" << merged.rows.size() << " rows from " << tables.size() << " tables)\n";
        if (!o->claims.empty()) {
          std::set<std::string> families;
          for (const auto& r : merged.rows) families.insert(r.key.family);
          if (families.size() != 1)
            throw Error("--claims: the merged table holds " + std::to_string(families.size()) +
                        " families; merge one family's CSVs to judge its claims");
          const auto fam = bench::load_family(o->common.source_dir, *families.begin());
          Diagnostics diags;
          auto set = load_contract_set({o->claims}, diags);
          if (diags.has_errors()) throw Error("--claims: " + o->claims + " has contract errors (popper validate it)");
          // % of peak needs the peaks of the machine that measured the table: only when it is this one.
          const auto machine = bench::probe_machine();
          std::optional<bench::PeakResult> peak;
          if (merged.meta("fingerprint") == bench::fingerprint(machine))
            peak = bench::cached_or_measured_peak(o->common.build() + "/peak.json", machine, false, progress);
          const auto claims = bench::evaluate_claims(set.contracts, fam.family, merged, peak ? &*peak : nullptr, fam.peak,
                                                     bench::list_family_shapes(o->common.build(), fam));
          const auto dir = fs::path(o->out).parent_path();
          const std::string path = (dir.empty() ? fs::path(".") : dir).string() + "/bench-claims.json";
          report_claims(path, fam.family, claims);
        }
        exit_code = 0;
      } catch (const std::exception& e) {
        std::cerr << "popper bench merge: " << e.what() << "\n";
        exit_code = 2;
      }
    });
  }

  // ---- check ----
  {
    auto* cmd = bench->add_subcommand(
        "check", "Judge current vs baseline rows with trial-aware intervals; exit 1 on REGRESSION or MISSING");
    struct Opt {
      CommonOptions common;
      std::string baseline, current, against, family;
      std::vector<std::string> shapes{"gate"}, threads{"1,2"}, precisions{"f32,f64"};
      bool rerun = false, strict = false, absolute = false;
      int trials = 6, jobs = 2;
      double budget = 900;
      bench::Thresholds th;
    };
    auto o = std::make_shared<Opt>();
    add_common(cmd, o->common);
    cmd->add_option("--baseline", o->baseline, "baseline CSV (baselines/<fingerprint>/<family>.csv)");
    cmd->add_option("--current", o->current, "current CSV (reports/bench-<family>.csv)");
    cmd->add_option("--against", o->against,
                    "instead of CSVs: build REF (a commit) and run it and this build in alternating trials now");
    cmd->add_option("--family", o->family, "with --against: the bench family");
    cmd->add_option("--shapes", o->shapes, "with --against: gate | full | shape names");
    cmd->add_option("--threads", o->threads, "with --against: thread counts");
    cmd->add_option("--precision", o->precisions, "with --against: precisions");
    cmd->add_option("--trials", o->trials, "with --against: alternating trials per side");
    cmd->add_flag("--rerun", o->rerun, "re-measure NOISY and REGRESSION rows (with the baseline's environment) while the budget lasts");
    cmd->add_option("--budget", o->budget, "seconds re-measuring may take");
    cmd->add_flag("--strict", o->strict, "NOISY rows fail too");
    cmd->add_flag("--absolute", o->absolute,
                  "compare absolute times even when the ceiling rows show the machine itself got slower or faster");
    cmd->add_option("--alpha", o->th.alpha, "false discovery rate over the table (Benjamini-Hochberg; a clean table flags a row with at most this chance)");
    cmd->add_option("--regression-threshold", o->th.regression, "fraction slower that is a regression (0.10)");
    cmd->add_option("--warning-threshold", o->th.warning, "fraction slower that is a warning (0.05)");
    cmd->callback([o, &exit_code] {
      try {
        const std::string build = o->common.build();
        const std::string src = o->common.source_dir;
        bench::BenchTable base, cur;
        if (!o->against.empty()) {
          if (o->family.empty()) throw Error("--against needs --family");
          std::tie(base, cur) = duet(src, build, o->against, o->family, split_list(o->shapes), split_list(o->threads),
                                     split_list(o->precisions), o->trials, o->jobs);
        } else {
          if (o->baseline.empty() || o->current.empty()) throw Error("give --baseline and --current, or --against REF --family F");
          try {
            base = bench::read_baseline(o->baseline);
          } catch (const bench::NoBaseline& e) {
            std::cerr << "popper bench check: " << e.what() << "\n";
            exit_code = 2;
            return;
          }
          cur = bench::read_bench_csv(o->current);
          if (const auto inj = cur.meta("injected_slowdown"))
            std::cerr << "note: the current run was measured with POPPER_BENCH_INJECT_SLOWDOWN=" << *inj << "\n";
        }
        bench::CheckOptions copt;
        copt.thresholds = o->th;
        copt.budget_seconds = o->budget;
        copt.normalize_on_drift = !o->absolute;
        if (o->rerun) {
          // Re-measure under the baseline's recorded environment, in new trials.
          // The new samples join the current's, so they measure what it
          // measured: with its injected slowdown, if any, and never with one
          // this process happens to have in its own environment.
          auto env = parse_environment(base.meta("environment").value_or(""));
          std::string env_text;
          for (const auto& [k, v] : env) env_text += " " + k + "=" + v;
          std::cerr << "re-measuring with the baseline's environment:" << (env_text.empty() ? " (none recorded)" : env_text);
          const std::string injected = cur.meta("injected_slowdown").value_or("");
          std::erase_if(env, [](const auto& kv) { return kv.first == "POPPER_BENCH_INJECT_SLOWDOWN"; });
          env.emplace_back("POPPER_BENCH_INJECT_SLOWDOWN", injected);  // empty: none
          if (!injected.empty()) std::cerr << ", and the current run's POPPER_BENCH_INJECT_SLOWDOWN=" << injected;
          std::cerr << "\n";
          int next = 0;
          for (const auto& r : cur.rows)
            for (std::size_t i = 0; i < r.samples.size(); ++i) next = std::max(next, r.trial_of(i) + 1);
          // One run per round over the rows asked for, in shared trials (so a
          // row and its ceiling see the same machine), planned once; the
          // cross product's extra rows are dropped.
          copt.remeasure = [build, src, env, next](const std::vector<bench::BenchKey>& keys) mutable
              -> std::optional<std::vector<bench::BenchRow>> {
            if (keys.empty()) return std::vector<bench::BenchRow>{};
            bench::CompareOptions co;
            co.source_dir = src;
            co.build_dir = build;
            co.tiers.clear();
            co.precisions.clear();
            co.threads.clear();
            co.shapes.clear();
            auto add = [](auto& list, const auto& v) {
              if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
            };
            for (const auto& k : keys) {
              add(co.shapes, k.shape);
              add(co.tiers, k.tier);
              add(co.precisions, k.precision);
              add(co.threads, k.threads);
              if (k.tier == "ceiling") add(co.ceiling_backends, k.backend);  // those configurations only, unscreened
            }
            co.trials = 2;
            co.first_trial = next;
            co.env = env;
            co.blas_core_types = false;
            co.progress = progress;
            const auto t = bench::run_compare(co, bench::load_family(src, keys.front().family), bench::probe_machine(), nullptr);
            std::vector<bench::BenchRow> out;
            for (const auto& r : t.rows)
              if (std::find(keys.begin(), keys.end(), r.key) != keys.end()) out.push_back(r);
            next += 2;
            return out;
          };
        }
        const auto report = bench::check_tables(base, cur, copt);
        std::cout << bench::format_check_report(report);
        exit_code = report.exit_code(o->strict);
        if (report.count(bench::Change::Noisy) > 0)
          std::cerr << report.count(bench::Change::Noisy) << " row(s) NOISY: too uncertain to decide at the "
                    << "regression threshold; re-measure with --rerun, add trials, or quiet the machine"
                    << (o->strict ? " (--strict: they fail)" : "") << "\n";
      } catch (const std::exception& e) {
        std::cerr << "popper bench check: " << e.what() << "\n";
        exit_code = 2;
      }
    });
  }

  // ---- gate ----
  {
    auto* cmd = bench->add_subcommand("gate", "CI regression gate: callgrind instruction counts on the gate shapes");
    struct Opt {
      CommonOptions common;
      std::string family = "gemm";
      std::string out, baseline, against;
      bool no_check = false;
      int jobs = 2;
      std::vector<std::string> only_shapes, only_tiers, only_precisions;
    };
    auto o = std::make_shared<Opt>();
    add_common(cmd, o->common);
    cmd->add_option("--family", o->family, "bench family, or all");
    cmd->add_option("--out", o->out, "CSV to write (default reports/bench-<family>-gate.csv)");
    cmd->add_option("--baseline", o->baseline, "baseline CSV (default baselines/<gate key>/<family>-gate.csv)");
    cmd->add_option("--against", o->against,
                    "without a committed baseline for this gate key, build REF (a commit; auto = the last commit "
                    "that changed baselines/) in the build tree and compare in the same run");
    cmd->add_flag("--no-check", o->no_check, "only measure and write the CSV");
    cmd->add_option("--jobs", o->jobs, "build jobs for --against");
    cmd->add_option("--shapes", o->only_shapes, "restrict to these gate shapes (baseline rows filtered alike)");
    cmd->add_option("--tiers", o->only_tiers, "restrict to these tiers, e.g. hand");
    cmd->add_option("--precision", o->only_precisions, "restrict to these precisions, e.g. f32");
    cmd->callback([o, &exit_code] {
      try {
        const std::string build = o->common.build();
        const std::vector<std::string> families =
            o->family == "all" ? bench::list_families(o->common.source_dir) : std::vector<std::string>{o->family};
        if (families.size() > 1 && (!o->out.empty() || !o->baseline.empty()))
          throw Error("--out and --baseline name one family's files; use them with one --family");
        const auto only_shapes = split_list(o->only_shapes), only_tiers = split_list(o->only_tiers),
                   only_precisions = split_list(o->only_precisions);
        auto keep = [](const std::vector<std::string>& filter, const std::string& v) {
          return filter.empty() || std::find(filter.begin(), filter.end(), v) != filter.end();
        };
        bench::GateOptions g;
        g.build_dir = build;
        g.progress = progress;
        g.env = bench::gate_environment(g.valgrind, build);
        const bench::GateKey key = bench::probe_gate_key(g);
        std::cerr << "gate key: " << key.id() << " (cpu path " << key.cpu_isa << " under valgrind, OpenBLAS "
                  << key.openblas_core << ")\n";
        if (key.cpu_isa != "avx512")
          std::cerr << "note: valgrind's CPU has no AVX-512, so the gate counts the " << key.cpu_isa
                    << " paths; AVX-512 paths are judged only by the timed check (popper bench check)\n";
        std::string ref_build, ref_sha;
        int worst = 0;
        for (const auto& family : families) {
          auto fam = bench::load_family(o->common.source_dir, family);
          auto restrict_to = [&](std::vector<std::string>& list, const std::vector<std::string>& filter, const char* what) {
            for (const auto& f : filter)
              if (std::find(list.begin(), list.end(), f) == list.end())
                throw Error(std::string("--") + what + " " + f + " is not in " + fam.path + " gate");
            std::erase_if(list, [&](const std::string& v) { return !keep(filter, v); });
          };
          restrict_to(fam.gate.shapes, only_shapes, "shapes");
          restrict_to(fam.gate.tiers, only_tiers, "tiers");
          restrict_to(fam.gate.precisions, only_precisions, "precision");
          const auto machine = bench::probe_machine();
          auto run = bench::run_gate(g, fam);
          const auto peak = bench::load_peak_cache(build + "/peak.json");
          auto md = bench::run_metadata(machine, o->common.source_dir, build,
                                        peak && peak->fingerprint == bench::fingerprint(machine) ? &*peak : nullptr);
          for (auto& kv : key.metadata()) md.push_back(kv);
          for (auto& kv : run.table.metadata) md.push_back(kv);
          run.table.metadata = md;
          const std::string out = o->out.empty() ? "reports/bench-" + fam.family + "-gate.csv" : o->out;
          if (fs::path(out).has_parent_path()) fs::create_directories(fs::path(out).parent_path());
          bench::write_bench_csv(out, run.table);
          bench::write_functions(bench::functions_path(out), run.functions);
          std::cerr << "wrote " << out << "\n";
          if (o->no_check) continue;

          // The baseline: given, committed for this key, or the base commit measured now.
          bench::BenchTable base;
          std::map<std::string, bench::FunctionCounts> base_functions;
          std::string base_name;
          const std::string committed = o->common.source_dir + "/baselines/" + key.id() + "/" + fam.family + "-gate.csv";
          const std::string base_path = !o->baseline.empty() ? o->baseline : committed;
          if (fs::exists(base_path)) {
            base = bench::read_bench_csv(base_path);
            base_functions = bench::read_functions(bench::functions_path(base_path));
            base_name = base_path;
            if (const auto k = base.meta("gate_key"); o->baseline.empty() && k && *k != key.id())
              throw Error(base_path + " says gate_key " + *k + ", not " + key.id() + ": it was copied, not recorded");
          } else if (!o->baseline.empty()) {
            throw Error("no baseline at " + o->baseline);
          } else if (!o->against.empty()) {
            if (ref_build.empty()) {
              bench::RefBuildOptions rb;
              rb.source_dir = o->common.source_dir;
              rb.build_dir = build;
              rb.ref = o->against == "auto" ? bench::default_reference(o->common.source_dir) : o->against;
              rb.families = families;
              rb.jobs = o->jobs;
              rb.progress = progress;
              std::cerr << "gate: no committed baseline for key " << key.id() << "; measuring the base commit "
                        << rb.ref << " in this run\n";
              ref_build = bench::build_reference(rb, &ref_sha);
            }
            if (!fs::exists(ref_build + "/bin/" + fam.executable)) {
              std::cerr << "gate: " << fam.family << " does not exist at " << ref_sha.substr(0, 12)
                        << ": its rows are NEW, nothing to compare\n";
            } else {
              bench::GateOptions gr = g;
              gr.build_dir = ref_build;
              auto ref_run = bench::run_gate(gr, fam);
              base = std::move(ref_run.table);
              base.metadata = run.table.metadata;  // same machine, same gate key, same run
              base.set_meta("commit", ref_sha);
              base_functions = std::move(ref_run.functions);
            }
            base_name = "commit " + ref_sha + " (built and measured in this run)";
          } else {
            std::cerr << "popper bench gate: no gate baseline for key " << key.id() << " (" << committed << ")\n"
                      << "  record one:  popper bench gate --family " << fam.family
                      << " --no-check && popper bench baseline save --from " << out << "\n"
                      << "  or compare with the base commit measured now:  popper bench gate --family " << fam.family
                      << " --against auto\n";
            worst = std::max(worst, 2);
            continue;
          }
          std::erase_if(base.rows, [&](const bench::BenchRow& r) {
            return !keep(only_shapes, r.key.shape) || !keep(only_tiers, r.key.tier) ||
                   !keep(only_precisions, r.key.precision);
          });
          // Counts are exact: a row beyond the threshold is a regression by itself (no re-run needed).
          const auto report = bench::check_tables(base, run.table, {}, {});
          std::cout << "family " << fam.family << ", baseline: " << base_name << "\n" << bench::format_check_report(report);
          for (const auto& rc : report.rows) {
            if (rc.change == bench::Change::Unchanged || rc.change == bench::Change::New ||
                rc.change == bench::Change::Missing)
              continue;
            const std::string k = rc.key.to_string();
            const auto moved = bench::top_function_changes(base_functions[k], run.functions[k]);
            if (moved.empty()) continue;
            std::cout << "  " << k << ": functions that moved most\n";
            for (const auto& line : moved) std::cout << "    " << line << "\n";
          }
          worst = std::max(worst, report.exit_code());
        }
        exit_code = worst;
      } catch (const std::exception& e) {
        std::cerr << "popper bench gate: " << e.what() << "\n";
        exit_code = 2;
      }
    });
  }

  // ---- baseline save ----
  {
    auto* baseline = bench->add_subcommand("baseline", "Manage committed baselines");
    baseline->require_subcommand(1);
    auto* cmd = baseline->add_subcommand("save", "Copy a bench CSV to baselines/<fingerprint>/ (keeps <name>.prev.csv)");
    struct Opt {
      std::string from = "reports/bench-gemm.csv";
      std::string dir = "baselines";
    };
    auto o = std::make_shared<Opt>();
    cmd->add_option("--from", o->from, "bench CSV to save (reports/bench-<family>[-gate].csv)");
    cmd->add_option("--dir", o->dir, "baselines folder");
    cmd->callback([o, &exit_code] {
      try {
        const auto table = bench::read_bench_csv(o->from);  // validates before anything is replaced
        // A gate baseline is keyed by what decides its counts; a timed one by the machine.
        auto fp = table.meta("gate_key");
        if (!fp) fp = table.meta("fingerprint");
        if (!fp || fp->empty()) throw Error(o->from + ": no '# fingerprint:' metadata; not produced by popper bench");
        if (const auto inj = table.meta("injected_slowdown"))
          throw Error(o->from + " was recorded with POPPER_BENCH_INJECT_SLOWDOWN=" + *inj + ": not a baseline");
        const fs::path folder = fs::path(o->dir) / *fp;
        fs::create_directories(folder);
        const fs::path target = folder / baseline_name(o->from);
        if (fs::exists(target)) {
          fs::path prev = target;
          prev.replace_extension(".prev.csv");
          popper::write_file_atomic(prev.string(), bench::format_bench_csv(bench::read_bench_csv(target.string())));
          std::cerr << "previous baseline kept as " << prev.string() << "\n";
        }
        bench::write_bench_csv(target.string(), table);
        if (fs::exists(bench::functions_path(o->from)))
          popper::write_file_atomic(bench::functions_path(target.string()), popper::read_file(bench::functions_path(o->from)));
        std::cout << "saved " << target.string() << " (" << table.rows.size() << " rows)\n";
        exit_code = 0;
      } catch (const std::exception& e) {
        std::cerr << "popper bench baseline save: " << e.what() << "\n";
        exit_code = 2;
      }
    });
  }
}

}  // namespace popper::cli
