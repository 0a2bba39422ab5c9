// popper_train (run as `popper train` and `popper budget baseline|run`): N
// training steps of a preset under popper::trace and the Jidoka gate of
// contracts/train/training-step-budget-v1.yaml.
//
//   run       progress bar, the brick table (budget, median, CV, efficiency,
//             over/under), MFU, the tracer's own cost, the Jidoka verdict, and
//             the traces (Chrome/Perfetto trace-event JSON and OTLP/JSON)
//   baseline  measures the budgets and stores them in
//             baselines/<machine fingerprint>/train-budget.json (the previous file kept
//             as train-budget.prev.json), keyed by preset, backend and threads
//
// Exit: 0; 1 the Jidoka gate stopped training; 2 usage, I/O or a missing budget.
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "bench/machine.hpp"
#include "bench/peak.hpp"
#include "impl/common/parallel.hpp"
#include "impl/train/budget.hpp"
#include "popper/error.hpp"
#include "popper/io.hpp"
#include "popper/version.hpp"
#include "workloads/train/shapes.h"

namespace {

using namespace popper::train;
namespace fs = std::filesystem;
namespace trace = popper::trace;

struct Options {
  std::string preset = "small", backend = "hand", baselines = "baselines", budget_file, trace_out = "reports", json_out,
              inject, source_dir = ".";
  int threads = 1;
  std::int64_t steps = 10, warmup = 2, inject_from = 3;
  std::uint64_t seed = 1;
  bool no_budget = false, quiet = false;
};

std::string build_dir() {
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "build" : exe.parent_path().parent_path().string();
}

std::string budget_path(const Options& o, const std::string& fingerprint) {
  return o.budget_file.empty() ? o.baselines + "/" + fingerprint + "/train-budget.json" : o.budget_file;
}

Config config_of(const Options& o) {
  const popper_train_shape* s = popper_train_find_shape(o.preset.c_str());
  if (!s) throw popper::InvalidArgument("no preset named '" + o.preset + "' (tiny, small, albor-350m)");
  return popper_train_config(*s);
}

// What the tracer costs one step of `spans` spans: begin_step, that many empty
// spans, end_step (which keeps the step's spans), on a warm tracer as in the
// loop; the fastest of 50 (a run a busy host preempted says nothing about the tracer).
double tracer_seconds_per_step(std::size_t spans) {
  trace::Tracer t(brick_names());
  double best = 1e9;
  for (int b = 0; b < 100; ++b) {
    const std::int64_t t0 = trace::now_ns();
    t.begin_step(b);
    for (std::size_t i = 0; i < spans; ++i) trace::Scope s(&t, "span", kGemmForward, static_cast<int>(i), 1.0, 1.0);
    t.end_step();
    const std::int64_t t1 = trace::now_ns();
    if (b >= 50) best = std::min(best, static_cast<double>(t1 - t0) * 1e-9);
  }
  return best;
}

// Median over the steps from `first` of the time no brick's span covers.
double median_gap(const trace::Tracer& t, std::size_t first) {
  std::vector<double> gaps;
  for (std::size_t i = first; i < t.steps().size(); ++i) {
    const auto& r = t.steps()[i];
    double g = static_cast<double>(r.end_ns - r.start_ns) * 1e-9;
    for (const double s : r.category_seconds) g -= s;
    gaps.push_back(g);
  }
  return trace::median(gaps);
}

void progress_bar(std::int64_t i, std::int64_t n, double loss, double seconds) {
  const int width = 30, done = static_cast<int>(width * (i + 1) / n);
  std::fprintf(stderr, "\r[%s%s] step %lld/%lld  loss %.4f  %.3f s/step ",
               std::string(static_cast<std::size_t>(done), '#').c_str(),
               std::string(static_cast<std::size_t>(width - done), '-').c_str(), static_cast<long long>(i) + 1,
               static_cast<long long>(n), loss, seconds);
  if (i + 1 == n) std::fputc('\n', stderr);
}

// Process CPU time (all threads), to tell the machine's share from the step's work on a shared host.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct RunResult {
  LoopReport report;
  std::unique_ptr<trace::Tracer> tracer;
  std::vector<double> cpu_s;  // per step
};
RunResult run_steps(const Options& o, const Budget* budget) {
  LoopOptions lo;
  lo.config = config_of(o);
  lo.step = {o.backend == "wrapped" ? Backend::Wrapped : Backend::Hand, o.threads, popper::cpu::Isa::Auto};
  lo.steps = o.steps, lo.seed = o.seed, lo.budget = budget;
  lo.jidoka.warmup = o.warmup;
  if (!o.inject.empty()) lo.inject = parse_injection(o.inject), lo.inject.from_step = o.inject_from;
  RunResult r;
  double last = cpu_seconds();
  lo.progress = [&](std::int64_t i, double loss, double s) {
    const double now = cpu_seconds();
    r.cpu_s.push_back(now - last);
    last = now;
    if (!o.quiet) progress_bar(i, o.steps, loss, s);
  };
  r.tracer = std::make_unique<trace::Tracer>(brick_names());
  r.report = run_training(lo, *r.tracer);
  if (r.report.stop) std::fputc('\n', stderr);
  return r;
}

std::string fmt_ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f ms", s * 1e3);
  return b;
}

int run(const Options& o) {
  const auto machine = popper::bench::probe_machine();
  const std::string fp = popper::bench::fingerprint(machine);
  std::vector<Budget> budgets;
  const Budget* budget = nullptr;
  const std::string bpath = budget_path(o, fp);
  if (!o.no_budget) {
    if (!fs::exists(bpath))
      throw popper::Error("no budget for this machine: " + bpath +
                          " does not exist. Measure one with `popper budget baseline --preset " + o.preset +
                          " --threads " + std::to_string(o.threads) + " --backend " + o.backend +
                          "`, or run without the gate (--no-budget)");
    budgets = budgets_from_json(popper::read_file(bpath), bpath, fp);
    budget = find_budget(budgets, o.preset, o.backend, o.threads);
    if (!budget)
      throw popper::Error(bpath + " has no budget for " + o.preset + "/" + o.backend + "/threads:" +
                          std::to_string(o.threads) + ": measure it with `popper budget baseline --preset " + o.preset +
                          " --threads " + std::to_string(o.threads) + " --backend " + o.backend + "`");
  }
  const auto peak = popper::bench::cached_or_measured_peak(build_dir() + "/peak.json", machine, false,
                                                           [](const std::string& s) { std::cerr << s << "\n"; });
  const trace::Peaks peaks{popper::bench::peak_for(peak, "fp32", o.threads),
                           popper::bench::peak_for(peak, "bandwidth", o.threads)};
  const Config c = config_of(o);
  std::printf(
      "popper train: preset %s (V %lld, H %lld, L %lld, %lld:%lld heads of %lld, I %lld, S %lld, B %lld), %s step, %d "
      "thread%s\n",
      o.preset.c_str(), static_cast<long long>(c.vocab), static_cast<long long>(c.hidden),
      static_cast<long long>(c.layers), static_cast<long long>(c.q_heads), static_cast<long long>(c.kv_heads),
      static_cast<long long>(c.head_dim), static_cast<long long>(c.intermediate), static_cast<long long>(c.seq),
      static_cast<long long>(c.batch), o.backend.c_str(), o.threads, o.threads == 1 ? "" : "s");
  if (budget)
    std::printf("budget: %s (measured %s at %s over %lld steps)\n", bpath.c_str(), budget->date.c_str(),
                budget->commit.c_str(), static_cast<long long>(budget->steps));
  else std::printf("budget: none (--no-budget): the Jidoka gate is off\n");
  std::fflush(stdout);  // before the progress bar on stderr

  RunResult r = run_steps(o, budget);
  const LoopReport& rep = r.report;
  const trace::Tracer& tr = *r.tracer;
  const std::size_t first = static_cast<std::size_t>(std::min<std::int64_t>(o.warmup, rep.steps_run - 1));
  const auto stats = trace::category_stats(tr, peaks, first);
  const Budget measured = measure_budget(tr, static_cast<std::int64_t>(first));
  const double gap = median_gap(tr, first);

  std::printf("\nbackend %s; %lld steps, %zu warm-up excluded; medians over the rest\n", rep.backend.c_str(),
              static_cast<long long>(rep.steps_run), first);
  std::printf("%-14s %12s %12s %6s %11s  %s\n", "brick", "budget", "median", "cv", "efficiency", "vs budget");
  for (std::size_t i = 0; i < stats.size(); ++i) {
    const auto& s = stats[i];
    const double b = budget ? budget->brick_s[i] : 0;
    char eff[24] = "-", vs[64] = "-";
    if (s.efficiency > 0) std::snprintf(eff, sizeof eff, "%.1f%%", 100 * s.efficiency);
    if (!s.bound_invalid.empty()) std::snprintf(eff, sizeof eff, "invalid");
    if (b > 0)
      std::snprintf(vs, sizeof vs, "%s (%+.1f%%)", s.median_s > b ? "over" : "under", 100 * (s.median_s / b - 1));
    std::printf("%-14s %12s %12s %5.1f%% %11s  %s%s%s\n", s.name.c_str(), budget ? fmt_ms(b).c_str() : "-",
                fmt_ms(s.median_s).c_str(), 100 * s.cv, eff, vs, s.escalated ? "  escalated: " : "", s.why.c_str());
  }
  std::printf("%-14s %12s %12s\n", "step", budget ? fmt_ms(budget->step_s).c_str() : "-",
              fmt_ms(measured.step_s).c_str());
  std::printf("%-14s %12s %12s  (%.2f%% of the step: the median time no brick's span covers)\n", "gap", "",
              fmt_ms(gap).c_str(), 100 * gap / measured.step_s);
  for (const auto& s : stats)
    if (!s.bound_invalid.empty()) std::printf("efficiency of %s: %s\n", s.name.c_str(), s.bound_invalid.c_str());
  const double tokens = static_cast<double>(c.tokens()), P = static_cast<double>(rep.matmul_params);
  const double mfu = peaks.flops_per_s > 0 ? 6 * P * tokens / (measured.step_s * peaks.flops_per_s) : 0;
  std::printf(
      "\nMFU = 6 P tokens / (T_step peak) = 6 x %.1fM x %.0f / (%.3f s x %.1f GFLOP/s FP32, %d thread%s, measured) = "
      "%.1f%%\n",
      P / 1e6, tokens, measured.step_s, peaks.flops_per_s / 1e9, o.threads, o.threads == 1 ? "" : "s", 100 * mfu);
  const double cpu_step = trace::median({r.cpu_s.begin() + static_cast<std::ptrdiff_t>(first), r.cpu_s.end()});
  const double core_peak = popper::bench::peak_for(peak, "fp32", 1);
  std::printf(
      "CPU time %.3f s per step (all threads; %.0f%% of the wall time x threads: the rest is what the host gave "
      "to other work); on CPU time, 6 P tokens / (CPU s x peak per core) = %.1f%%\n",
      cpu_step, 100 * cpu_step / (measured.step_s * o.threads),
      core_peak > 0 ? 100 * 6 * P * tokens / (cpu_step * core_peak) : 0.0);
  std::printf("throughput %.0f tokens/s\n", tokens / measured.step_s);
  const std::size_t spans = tr.detail().empty() ? 0 : tr.detail().back().spans.size();
  const double tracer_s = tracer_seconds_per_step(spans);
  std::printf("tracer: %zu spans per step cost %.1f us (measured on a warm tracer, best of 50) = %.4f%% of the step\n",
              spans, tracer_s * 1e6, 100 * tracer_s / measured.step_s);

  // Traces: the escalated bricks' op spans kept, every step's block spans and counters.
  trace::ExportOptions ex;
  ex.service = "popper train " + o.preset;
  ex.attributes = {
      {"preset", o.preset}, {"backend", rep.backend}, {"threads", std::to_string(o.threads)}, {"fingerprint", fp}};
  for (const auto& s : stats) ex.detailed.push_back(s.escalated);
  fs::create_directories(o.trace_out);
  const std::string stem = o.trace_out + "/train-" + o.preset + "-" + o.backend + "-t" + std::to_string(o.threads);
  popper::write_file_atomic(stem + ".trace.json", trace::to_chrome_json(tr, ex));
  popper::write_file_atomic(stem + ".otlp.json", trace::to_otlp_json(tr, ex));
  std::printf("traces: %s.trace.json (ui.perfetto.dev or chrome://tracing), %s.otlp.json (OTLP/JSON)\n", stem.c_str(),
              stem.c_str());

  if (rep.stop) std::printf("\n%s\n", rep.stop->text().c_str());
  else if (budget)
    std::printf("\nJidoka: no brick over 2.0x its budget in any 3-step window: training ran to the end\n");
  if (!o.json_out.empty()) {
    nlohmann::ordered_json j{{"preset", o.preset},
                             {"backend", rep.backend},
                             {"threads", o.threads},
                             {"steps", rep.steps_run},
                             {"warmup", first},
                             {"step_seconds", measured.step_s},
                             {"mfu", mfu},
                             {"cpu_seconds_per_step", cpu_step},
                             {"matmul_params", rep.matmul_params},
                             {"tokens_per_step", c.tokens()},
                             {"peak_fp32_flops", peaks.flops_per_s},
                             {"losses", rep.losses}};
    for (std::size_t i = 0; i < stats.size(); ++i)
      j["bricks"].push_back({{"name", stats[i].name},
                             {"budget_seconds", budget ? budget->brick_s[i] : 0.0},
                             {"median_seconds", stats[i].median_s},
                             {"cv", stats[i].cv},
                             {"efficiency", stats[i].efficiency},
                             {"bound_invalid", stats[i].bound_invalid},
                             {"escalated", stats[i].escalated},
                             {"why", stats[i].why}});
    j["jidoka"] = rep.stop ? rep.stop->text() : "";
    j["popper"] = popper::build_json();
    popper::write_file_atomic(o.json_out, j.dump(2) + "\n");
  }
  return rep.stop ? 1 : 0;
}

int baseline(const Options& o) {
  const auto machine = popper::bench::probe_machine();
  const std::string fp = popper::bench::fingerprint(machine);
  if (!o.inject.empty()) throw popper::InvalidArgument("a baseline is never measured with an injected delay");
  const std::string path = budget_path(o, fp);
  std::vector<Budget> budgets;
  if (fs::exists(path)) budgets = budgets_from_json(popper::read_file(path), path, fp);  // refuse a foreign file first
  std::printf("popper budget baseline: %s, %s, %d thread%s, %lld steps (%lld warm-up)\n", o.preset.c_str(),
              o.backend.c_str(), o.threads, o.threads == 1 ? "" : "s", static_cast<long long>(o.steps),
              static_cast<long long>(o.warmup));
  std::fflush(stdout);
  RunResult r = run_steps(o, nullptr);
  Budget b = measure_budget(*r.tracer, o.warmup);
  b.preset = o.preset, b.backend = o.backend, b.threads = o.threads;
  b.date = popper::bench::capture_command("date -u +%Y-%m-%dT%H:%M:%SZ");
  b.commit = popper::bench::capture_command("git -C '" + o.source_dir + "' rev-parse --short HEAD 2>/dev/null");
  if (b.commit.empty()) b.commit = "unknown";
  upsert_budget(budgets, b);
  fs::create_directories(fs::path(path).parent_path());
  if (fs::exists(path)) {
    fs::path prev = path;
    prev.replace_extension(".prev.json");
    popper::write_file_atomic(prev.string(), popper::read_file(path));
  }
  popper::write_file_atomic(path, budgets_to_json(fp, budgets));
  std::printf("%-14s %12s\n", "brick", "budget");
  for (int i = 0; i < kBrickCount; ++i)
    std::printf("%-14s %12s\n", brick_names()[static_cast<std::size_t>(i)].c_str(),
                fmt_ms(b.brick_s[static_cast<std::size_t>(i)]).c_str());
  std::printf("%-14s %12s\nsaved %s\n", "step", fmt_ms(b.step_s).c_str(), path.c_str());
  return 0;
}

void add_common(CLI::App* cmd, Options& o) {
  cmd->add_option("--preset", o.preset, "tiny | small | albor-350m (workloads/train/shapes.h)")->capture_default_str();
  cmd->add_option("--backend", o.backend, "hand (popper's kernels) | wrapped (OpenBLAS + the separate ops)")
      ->check(CLI::IsMember({"hand", "wrapped"}))
      ->capture_default_str();
  cmd->add_option("--threads", o.threads, "threads")->check(CLI::Range(1, 1024))->capture_default_str();
  cmd->add_option("--steps", o.steps, "training steps")->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "steps left out of the medians (and never judged by the gate)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "parameters and batches (the copy task)")->capture_default_str();
  cmd->add_option("--baselines", o.baselines, "baselines folder (budgets in <folder>/<fingerprint>/train-budget.json)")
      ->capture_default_str();
  cmd->add_option("--budget-file", o.budget_file, "budget file instead of the baselines folder's");
  cmd->add_option("--source-dir", o.source_dir, "repository root (the commit recorded with a baseline)");
  cmd->add_flag("--quiet", o.quiet, "no progress bar");
}

}  // namespace

// Every error, the setup's too, is a message and exit 2, never an abort.
int main(int argc, char** argv) try {
  CLI::App app{
      "popper_train: training steps of a preset under popper::trace and the Jidoka gate "
      "(contracts/train/training-step-budget-v1.yaml)"};
  app.require_subcommand(1);
  Options o;
  auto* run_cmd = app.add_subcommand("run", "N steps with the brick table, MFU, the Jidoka verdict and the traces");
  add_common(run_cmd, o);
  run_cmd->add_flag("--no-budget", o.no_budget, "run without a budget (no gate)");
  run_cmd->add_option("--inject-delay", o.inject,
                      "BRICK=FACTORx or BRICK=SECONDSs: make one brick slower (the Jidoka demo)");
  run_cmd->add_option("--inject-from", o.inject_from, "first step of the injected delay")->capture_default_str();
  run_cmd->add_option("--trace-out", o.trace_out, "folder of the trace files")->capture_default_str();
  run_cmd->add_option("--json", o.json_out, "also write the run's table as JSON");
  auto* base_cmd = app.add_subcommand("baseline", "measure the budgets of a preset and store them for this machine");
  add_common(base_cmd, o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (o.warmup >= o.steps) throw popper::InvalidArgument("--warmup must be below --steps");
  return run_cmd->parsed() ? run(o) : baseline(o);
} catch (const std::exception& e) {
  std::cerr << "\npopper train: " << e.what() << "\n";
  return 2;
}
