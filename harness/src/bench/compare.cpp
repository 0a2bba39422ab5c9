// The interleaved three-tier run behind `popper bench compare` (compare.hpp).
#include "bench/compare.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "bench/ingest.hpp"
#include "bench/interval.hpp"
#include "bench/plan.hpp"
#include "bench/plausibility.hpp"
#include "bench/remeasure.hpp"
#include "bench/vendors.hpp"
#include "common/process.hpp"
#include "common/text.hpp"
#include "popper/error.hpp"
#include "popper/runtime_paths.hpp"
#include "popper/version.hpp"

namespace popper::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::string duration_text(double s) {
  const long t = static_cast<long>(s + 0.5);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  return buf;
}

// Measures the implausible vendor rows of `t` once more (run_compare in
// compare.hpp) and puts the new samples in their place.
void remeasure_implausible(BenchTable& t, const CompareOptions& opt, const FamilyDescriptor& fam,
                           const MachineInfo& machine, const PeakResult* peak) {
  const auto suspects = implausible_vendor_rows(t);
  if (suspects.empty()) return;
  CompareOptions again = opt;
  std::vector<BenchKey> keys;
  std::vector<std::string> noted;
  for (const auto& s : suspects) {
    keys.push_back(s.key);
    noted.push_back(s.key.to_string() + ": " + s.reason);
    if (opt.progress)
      opt.progress("implausible vendor row " + s.key.to_string() + ": " + s.reason + "; measuring it again");
  }
  restrict_to_rows(again, keys);
  again.first_trial = next_trial(t);
  again.budget_seconds = 0;
  again.remeasure_implausible = false;  // once
  again.top_up_trials = 0;
  const auto fresh = run_compare(again, fam, machine, peak);
  for (const auto& s : suspects) {
    const BenchRow* f = fresh.find(s.key);
    if (!f || f->samples.empty()) {
      if (opt.progress)
        opt.progress("implausible vendor row " + s.key.to_string() + ": no new samples; judged as measured");
      continue;
    }
    for (auto& r : t.rows)
      if (r.key == s.key) {
        r.samples = f->samples;
        r.trials = f->trials;
      }
  }
  t.set_meta_list("vendor_rows_remeasured", noted);
}

}  // namespace

void restrict_to_rows(CompareOptions& o, const std::vector<BenchKey>& keys) {
  o.shapes.clear(), o.tiers.clear(), o.precisions.clear(), o.threads.clear(), o.ceiling_backends.clear();
  auto add = [](auto& list, const auto& v) {
    if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
  };
  for (const auto& k : keys) {
    add(o.shapes, k.shape);
    add(o.tiers, k.tier);
    add(o.precisions, k.precision);
    add(o.threads, k.threads);
    if (k.tier == Tier::Ceiling) add(o.ceiling_backends, k.backend);  // those configurations only, unscreened
  }
}

bool trial_fits_budget(double elapsed_seconds, int trials_done, double budget_seconds) {
  if (trials_done < 2 || budget_seconds <= 0) return true;
  return elapsed_seconds * (trials_done + 1) / trials_done <= budget_seconds;
}

std::vector<std::string> list_family_shapes(const std::string& build_dir, const FamilyDescriptor& fam) {
  const std::string exe = build_dir + "/bin/" + fam.executable;
  const auto r = run_process({exe, "--benchmark_list_tests=true"});
  if (!r.ok()) throw Error(exe + " --benchmark_list_tests failed (" + r.describe() + "); build it first: " + r.err);
  std::vector<std::string> shapes;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    const auto n = parse_bench_name(line);
    if (!n || n->family != fam.family) continue;
    if (std::find(shapes.begin(), shapes.end(), n->shape) == shapes.end()) shapes.push_back(n->shape);
  }
  if (shapes.empty())
    throw Error(exe + " lists no benchmark named " + fam.family + "/<tier>/<shape>/<precision>/threads:<n>");
  return shapes;
}

std::vector<std::string> select_shapes(const std::vector<std::string>& spec, const std::vector<std::string>& all,
                                       const FamilyDescriptor& fam) {
  std::vector<std::string> out;
  auto add = [&](const std::string& s) {
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  const std::set<std::string> gate(fam.gate.shapes.begin(), fam.gate.shapes.end());
  for (const auto& s : spec) {
    if (s == "gate") {
      for (const auto& a : all)
        if (gate.count(a)) add(a);
    } else if (s == "full") {
      for (const auto& a : all)
        if (!gate.count(a)) add(a);
    } else if (s == "all") {
      for (const auto& a : all) add(a);
    } else if (std::find(all.begin(), all.end(), s) != all.end()) {
      add(s);
    } else {
      std::string known;
      for (const auto& a : all) known += (known.empty() ? "" : ", ") + a;
      throw Error("unknown shape '" + s + "' for family " + fam.family + " (known: " + known +
                  "; or gate | full | all)");
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> run_metadata(const MachineInfo& m, const std::string& source_dir,
                                                              const std::string& build_dir, const PeakResult* peak) {
  auto md = machine_metadata(m, source_dir);
  // The popper that ran and wrote the table; "commit" above is the source tree's.
  md.emplace_back("popper", build_id());
  const std::string cxx = cmake_cache_value(build_dir, "CMAKE_CXX_COMPILER");
  std::string version = cxx.empty() ? "" : capture_command("'" + cxx + "' --version | head -n 1");
  md.emplace_back("compiler", cxx + (version.empty() ? "" : " (" + version + ")"));
  const std::string bt = cmake_cache_value(build_dir, "CMAKE_BUILD_TYPE");
  std::string flags = cmake_cache_value(build_dir, "CMAKE_CXX_FLAGS");
  const std::string bt_flags = cmake_cache_value(
      build_dir, "CMAKE_CXX_FLAGS_" + [&] {
        std::string u = bt;
        for (char& ch : u) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        return u;
      }());
  md.emplace_back("build_type", bt.empty() ? "unknown" : bt);
  md.emplace_back("compiler_flags", flags + (flags.empty() ? "" : " ") + bt_flags);
  const std::string cuda = cmake_cache_value(build_dir, "POPPER_CUDA");
  md.emplace_back("cuda", cuda.empty() ? "unknown" : "POPPER_CUDA=" + cuda);
  if (peak) {
    for (auto& kv : peak_metadata(*peak)) md.push_back(kv);
  } else {
    md.emplace_back("peak_measured", "unknown (run `popper peak`)");
  }
  return md;
}

void apply_peaks(BenchTable& t, const FamilyDescriptor& fam, const PeakResult* peak) {
  for (auto& r : t.rows) {
    r.pct_of_peak = -1;
    if (!peak || r.unit != kUnitSeconds || r.samples.empty()) continue;
    if (r.key.tier == Tier::Device && !fam.device_tiers) continue;  // the host's peaks do not bound it
    const auto it = fam.peak.find(r.key.precision);
    if (it == fam.peak.end()) continue;
    double denom = row_peak(*peak, it->second, r.key.threads, r.work_per_iter, r.bytes_per_iter);
    double value = r.throughput();
    if (it->second == "bandwidth" || it->second == "device_bandwidth")
      value = r.median() > 0 ? r.bytes_per_iter / r.median() : 0;
    if (denom > 0) r.pct_of_peak = 100.0 * value / denom;
  }
}

std::vector<std::pair<std::string, std::string>> timing_environment() {
  std::vector<std::pair<std::string, std::string>> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = kv.substr(0, eq);
    if (k == "OPENBLAS_CORETYPE" || k == "OPENBLAS_NUM_THREADS" || k == "POPPER_ISA_MAX" || k.rfind("OMP_", 0) == 0 ||
        k.rfind("GOMP_", 0) == 0 || k.rfind("BLIS_", 0) == 0 || k == "POPPER_BENCH_INJECT_SLOWDOWN")
      env.emplace_back(k, kv.substr(eq + 1));
  }
  std::sort(env.begin(), env.end());
  return env;
}

BenchTable run_compare(const CompareOptions& opt, const FamilyDescriptor& fam, const MachineInfo& machine,
                       const PeakResult* peak) {
  auto say = [&](const std::string& s) {
    if (opt.progress) opt.progress(s);
  };
  if (opt.trials < 1 || opt.reps_per_trial < 1)
    throw InvalidArgument("bench compare: trials and repetitions must be >= 1");
  const std::string bin = opt.build_dir + "/bin/";
  const auto all_shapes = list_family_shapes(opt.build_dir, fam);
  const auto shapes = select_shapes(opt.shapes, all_shapes, fam);
  const bool want_ceiling = std::find(opt.tiers.begin(), opt.tiers.end(), Tier::Ceiling) != opt.tiers.end();
  std::vector<Tier> suite_tiers;
  for (Tier t : opt.tiers)
    if (t != Tier::Ceiling) suite_tiers.push_back(t);

  // Which suite rows exist (e.g. the reference tier only for small shapes).
  std::set<std::string> listed;
  {
    const auto r = run_process({bin + fam.executable, "--benchmark_list_tests=true"}, opt.env);
    std::istringstream in(r.out);
    std::string line;
    while (std::getline(in, line))
      if (const auto n = parse_bench_name(line)) listed.insert(format_bench_name(*n));
  }

  struct Step {
    std::string shape;
    Tier tier;
    std::string precision;
    int threads;
    std::string ceiling;
  };
  std::vector<Step> steps;
  for (const auto& shape : shapes)
    for (int threads : opt.threads) {
      if (want_ceiling)
        for (const auto& c : fam.ceilings) steps.push_back({shape, Tier::Ceiling, "", threads, c});
      for (const auto& prec : opt.precisions)
        for (Tier tier : suite_tiers)
          if (listed.count(format_bench_name({fam.family, tier, shape, prec, threads})))
            steps.push_back({shape, tier, prec, threads, ""});
    }

  // Ceiling vendors and their configurations (vendors.hpp), planned before any
  // timing: every core type / sub-configuration this CPU can execute (never
  // one that would die with SIGILL), screened on a gate shape.
  CeilingPlan plan;
  if (want_ceiling) {
    PlanOptions po;
    const bool exact = !opt.ceiling_backends.empty();
    po.enumerate = (exact || opt.blas_core_types) && fam.blas_core_types;
    const char* configs = std::getenv("POPPER_CEILING_CONFIGS");
    po.screen = !exact && !(configs && std::string(configs) == "all");
    po.only = opt.ceiling_backends;
    po.screen_threads = opt.threads;
    if (!opt.rescreen) po.screening_cache = opt.build_dir + "/ceiling-screening-" + fam.family + ".json";
    po.progress = say;
    plan = plan_ceiling(fam, machine, opt.build_dir, po);
    for (const auto& w : plan.warnings) say(w.message);
  }

  char min_time_text[32];  // --min-time for the ceilings and the suites alike
  std::snprintf(min_time_text, sizeof min_time_text, "%g", opt.min_time);
  const std::string min_time = min_time_text;
  std::vector<BenchRow> rows;
  std::vector<std::set<BenchKey>> step_rows(steps.size());  // the rows each step produced (top-up trials)
  std::size_t current_step = 0;
  auto add = [&](std::vector<BenchRow> got, int trial) {
    for (auto& g : got) {
      g.trials.assign(g.samples.size(), trial);
      step_rows[current_step].insert(g.key);
    }
    merge_rows(rows, got);
  };
  auto run_ceiling = [&](const Step& s, const VendorConfig& cfg, int trial) {
    std::vector<std::string> argv = {
        bin + "ceiling_" + s.ceiling, "--shape",    s.shape, "--reps", std::to_string(opt.reps_per_trial), "--threads",
        std::to_string(s.threads),    "--min-time", min_time};
    // The configuration's variables win over the run's timing environment.
    auto env = cfg.env_set(s.threads);
    const auto unset = cfg.env_unset();
    for (const auto& kv : opt.env) {
      const bool overridden = std::any_of(env.begin(), env.end(), [&](const auto& e) { return e.first == kv.first; }) ||
                              std::find(unset.begin(), unset.end(), kv.first) != unset.end();
      if (!overridden) env.push_back(kv);
    }
    const auto r = run_process(argv, env, unset);
    if (!r.ok()) {
      say("warning: ceiling_" + s.ceiling + " under " + cfg.setting() + " failed: " + r.describe() +
          "; its rows are left out");
      return;
    }
    if (r.out.rfind("# skipped", 0) == 0) {
      const std::string why = r.out.substr(0, r.out.find('\n'));
      if (opt.require_device) throw Error("ceiling_" + s.ceiling + " declined under --require-device: " + why);
      say("ceiling_" + s.ceiling + ": " + why);
      return;
    }
    auto got = rows_from_ceiling_csv(r.out, "ceiling_" + s.ceiling);
    std::erase_if(got, [&](const BenchRow& g) {
      return std::find(opt.precisions.begin(), opt.precisions.end(), g.key.precision) == opt.precisions.end();
    });
    for (auto& g : got) g.work_unit = fam.work_unit;
    add(std::move(got), trial);
  };
  auto run_suite = [&](const Step& s, int trial) {
    const std::string name = format_bench_name({fam.family, s.tier, s.shape, s.precision, s.threads});
    const std::string json_path = popper::make_temp_file("popper-gbench");
    if (json_path.empty()) throw Error("cannot create a temporary file");
    const auto r =
        run_process({bin + fam.executable,
                     "--benchmark_filter=^" + regex_escape(name) + "(/iterations:[0-9]+)?(/real_time|/manual_time)?$",
                     "--benchmark_repetitions=" + std::to_string(opt.reps_per_trial),
                     "--benchmark_report_aggregates_only=false", "--benchmark_min_time=" + min_time,
                     std::string("--benchmark_out=") + json_path, "--benchmark_out_format=json"},
                    opt.env);
    std::ifstream in(json_path);
    std::ostringstream ss;
    ss << in.rdbuf();
    ::unlink(json_path.c_str());
    if (!r.ok()) {
      say("warning: " + fam.executable + " " + name + " failed: " + r.describe() + "; row left out");
      return;
    }
    auto got = rows_from_gbench_json(ss.str(), fam.executable + " " + name, fam.work_unit);
    if (got.empty()) say("warning: " + fam.executable + " produced no row for " + name);
    for (const auto& g : got)
      if (g.verdict.failed()) say("warning: " + name + ": " + g.verdict.label);
    add(std::move(got), trial);
  };

  const auto t0 = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  std::size_t total = steps.size() * static_cast<std::size_t>(opt.trials);
  std::size_t done = 0, topped_up = 0;
  bool budget_spent = false;
  // One pass over the steps `which` (indices into steps), shuffled by the trial's seed.
  // Under a budget the pass stops before a step that would overrun it, so
  // the rows measured so far are still reported (a lent GPU's time is fixed).
  auto run_trial = [&](int trial, const std::string& label, std::vector<std::size_t> which) {
    std::mt19937_64 rng(opt.order_seed + static_cast<std::uint64_t>(trial));
    std::shuffle(which.begin(), which.end(), rng);
    for (std::size_t at = 0; at < which.size(); ++at) {
      const std::size_t i = which[at];
      const Step& s = steps[i];
      const double now = elapsed();
      if (opt.budget_seconds > 0 && done > 0 && now + now / static_cast<double>(done) > opt.budget_seconds) {
        say("budget: " + label + " stops after " + std::to_string(at) + " of " + std::to_string(which.size()) +
            " steps (" + duration_text(now) + " of the " + duration_text(opt.budget_seconds) +
            " budget spent); the steps left are not run in it");
        budget_spent = true;
        return;
      }
      const std::string eta =
          done ? ", ~" + duration_text(now / static_cast<double>(done) * static_cast<double>(total - done)) +
                     " remaining"
               : "";
      say("[" + label + ", " + std::to_string(done + 1) + "/" + std::to_string(total) + "] " + fam.family + " " +
          s.shape + " " + (s.precision.empty() ? "f32+f64" : s.precision) + " threads:" + std::to_string(s.threads) +
          " " + tier_text(s.tier) + (s.tier == Tier::Ceiling ? " (" + s.ceiling + ")" : "") + " — elapsed " +
          duration_text(now) + eta);
      current_step = i;
      if (s.tier == Tier::Ceiling) {
        for (const VendorConfig* cfg : plan.runnable(s.ceiling)) run_ceiling(s, *cfg, trial);
      } else {
        run_suite(s, trial);
      }
      ++done;
    }
  };
  std::vector<std::size_t> every(steps.size());
  for (std::size_t i = 0; i < every.size(); ++i) every[i] = i;
  int trials_run = 0;
  for (; trials_run < opt.trials && !budget_spent; ++trials_run) {
    if (!trial_fits_budget(elapsed(), trials_run, opt.budget_seconds)) {
      say("budget: " + std::to_string(trials_run) + " of " + std::to_string(opt.trials) + " trials took " +
          duration_text(elapsed()) + "; another would pass the " + duration_text(opt.budget_seconds) +
          " budget, so the run stops here (--budget, or --trials to fix the count)");
      break;
    }
    run_trial(opt.first_trial + trials_run,
              "trial " + std::to_string(trials_run + 1) + "/" + std::to_string(opt.trials), every);
  }

  // Top-up: the steps whose rows were noisier than the plan assumed get more
  // trials (at most opt.top_up_trials), as many as their own noise says power
  // needs, while the budget lasts.
  if (opt.top_up_trials > 0 && trials_run >= 2 && !budget_spent) {
    std::vector<int> extra(steps.size(), 0);
    std::size_t extra_steps = 0;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      double sigma = 0;
      for (const auto& r : rows)
        if (step_rows[i].count(r.key)) sigma = std::max(sigma, between_trial_log_sd({&r.samples, &r.trials}));
      const int need = sigma > 0 ? trials_to_flag(sigma, opt.top_up_alpha) : 0;
      extra[i] = std::clamp(need - trials_run, 0, opt.top_up_trials);
      if (extra[i] > 0) total += static_cast<std::size_t>(extra[i]), ++extra_steps;
    }
    if (extra_steps > 0)
      say("top-up: " + std::to_string(extra_steps) + " of " + std::to_string(steps.size()) +
          " steps were noisier than planned; up to " + std::to_string(opt.top_up_trials) + " more trials of them");
    const double per_step = done ? elapsed() / static_cast<double>(done) : 0;
    for (int round = 0; round < opt.top_up_trials; ++round) {
      std::vector<std::size_t> which;
      for (std::size_t i = 0; i < steps.size(); ++i)
        if (extra[i] > round) which.push_back(i);
      if (which.empty()) break;
      if (opt.budget_seconds > 0 && elapsed() + per_step * static_cast<double>(which.size()) > opt.budget_seconds) {
        say("top-up: the budget ends here (" + duration_text(elapsed()) + " spent)");
        break;
      }
      run_trial(opt.first_trial + trials_run + round,
                "top-up " + std::to_string(round + 1) + "/" + std::to_string(opt.top_up_trials), which);
      topped_up += which.size();
    }
  }
  say("done in " + duration_text(elapsed()));

  BenchTable t;
  t.metadata = run_metadata(machine, opt.source_dir, opt.build_dir, peak);
  // The host's roofline does not bound device rows: their % of peak is of
  // the device's measured peaks (the family's device peak kinds).
  if (fam.device_tiers) {
    std::erase_if(t.metadata, [](const auto& kv) { return kv.first == "roofline_peaks" || kv.first == "llc"; });
    std::string kinds;
    for (const auto& [precision, kind] : fam.peak) kinds += (kinds.empty() ? "" : ", ") + precision + ": " + kind;
    t.set_meta("device_peaks", "popper peak --device; " + kinds);
  }
  t.set_meta("family", fam.family);
  t.set_meta("kind", "timing (wall clock, trials of shuffled steps, one process per step)");
  t.set_meta("trials", std::to_string(opt.trials));
  t.set_meta("reps_per_trial", std::to_string(opt.reps_per_trial));
  t.set_meta("order_seed", std::to_string(opt.order_seed));
  std::string threads;
  for (int th : opt.threads) threads += (threads.empty() ? "" : ",") + std::to_string(th);
  t.set_meta("threads", threads);
  t.set_environment(timing_environment());
  if (const char* inj = std::getenv("POPPER_BENCH_INJECT_SLOWDOWN"); inj && *inj) t.set_meta("injected_slowdown", inj);
  if (topped_up > 0)
    t.set_meta("top_up", std::to_string(topped_up) + " process(es) in up to " + std::to_string(opt.top_up_trials) +
                             " more trials of the steps noisier than planned");
  if (!fam.wrapped_vendor.empty()) t.set_meta("wrapped_vendor", fam.wrapped_vendor);  // its rows are vendor rows
  t.rows = std::move(rows);
  if (want_ceiling) record_plan(plan, t);
  if (opt.remeasure_implausible) remeasure_implausible(t, opt, fam, machine, peak);
  mark_invalid_vendor_rows(t);
  t.set_footprint_reads();
  for (const auto& r : t.rows)
    if (!r.valid())
      say("invalid vendor row " + r.key.to_string() + ": " + r.invalid_reason + " (left out of every ratio)");
  apply_peaks(t, fam, peak);
  return t;
}

}  // namespace popper::bench
