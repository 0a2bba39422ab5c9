// The interleaved three-tier run behind `popper bench compare` (compare.hpp).
#include "bench/compare.hpp"

#include <fmt/format.h>

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
#include "bench/pace.hpp"
#include "bench/placement.hpp"
#include "bench/plan.hpp"
#include "bench/plausibility.hpp"
#include "bench/remeasure.hpp"
#include "bench/trials.hpp"
#include "bench/vendors.hpp"
#include "common/process.hpp"
#include "common/text.hpp"
#include "popper/error.hpp"
#include "popper/runtime_paths.hpp"
#include "popper/version.hpp"

namespace popper::bench {
namespace {

// Measures the implausible vendor rows of `t` once more (run_compare in
// compare.hpp), with every other row of their groups, and puts the new
// samples in their place; under a budget, in what is left of it after
// `spent_seconds`, and not at all once it is spent (the rows then stay
// implausible and are left out).
void remeasure_implausible(BenchTable& t, const CompareOptions& opt, const FamilyDescriptor& fam,
                           const MachineInfo& machine, const PeakResult* peak, double spent_seconds) {
  const auto suspects = implausible_vendor_rows(t);
  if (suspects.empty()) return;
  const bool spent = opt.budget_seconds > 0 && spent_seconds >= opt.budget_seconds;
  CompareOptions again = opt;
  std::vector<std::string> noted;
  for (const auto& s : suspects) {
    noted.push_back(s.key.to_string() + ": " + s.reason);
    if (opt.progress)
      opt.progress("implausible vendor row " + s.key.to_string() + ": " + s.reason +
                   (spent ? "; the budget is spent, so it is not measured again"
                          : "; measuring it again, with the other rows of its shape, precision and threads"));
  }
  if (spent) return;
  const std::vector<BenchKey> keys = rows_to_remeasure(t, suspects);
  restrict_to_rows(again, keys);
  again.first_trial = next_trial(t);
  again.budget_seconds = opt.budget_seconds > 0 ? opt.budget_seconds - spent_seconds : 0;
  again.remeasure_implausible = false;  // once
  again.top_up_trials = 0;
  const auto fresh = run_compare(again, fam, machine, peak);
  for (const auto& key : keys) {
    const BenchRow* f = fresh.find(key);
    if (!f || f->samples.empty()) {
      if (opt.progress) opt.progress("row " + key.to_string() + ": no new samples; judged as measured");
      continue;
    }
    for (auto& r : t.rows)
      if (r.key == key) r = *f;  // samples and every per-trial probe; marks and peaks are set after
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
  o.rows = keys;
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
      throw Error(fmt::format("unknown shape '{}' for family {} (known: {}; or gate | full | all)", s, fam.family,
                              fmt::join(all, ", ")));
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

namespace {

// Stage "plan": the steps of one trial. Each selected shape and thread count
// gets its ceiling programs and the suite rows the suite lists (e.g. the
// reference tier only for small shapes); steps_that_run keeps, once the
// ceilings are screened, those with something to run.
std::vector<Step> plan_steps(const CompareOptions& opt, const FamilyDescriptor& fam) {
  const auto shapes = select_shapes(opt.shapes, list_family_shapes(opt.build_dir, fam), fam);
  const bool want_ceiling = std::find(opt.tiers.begin(), opt.tiers.end(), Tier::Ceiling) != opt.tiers.end();
  std::set<std::string> listed;
  const auto r = run_process({opt.build_dir + "/bin/" + fam.executable, "--benchmark_list_tests=true"}, opt.env);
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (const auto n = parse_bench_name(line)) listed.insert(format_bench_name(*n));
  std::vector<Step> steps;
  for (const auto& shape : shapes)
    for (int threads : opt.threads)
      for (CacheMode cache : {CacheMode::Warm, CacheMode::Cold}) {
        const std::size_t suite_steps = steps.size();
        for (const auto& prec : opt.precisions)
          for (Tier tier : opt.tiers)
            if (tier != Tier::Ceiling &&
                listed.count(format_bench_name({fam.family, tier, shape, prec, threads, cache})))
              steps.push_back({shape, tier, prec, threads, "", cache});
        // Cold ceilings where the suite times cold: their rows are what cold rows are compared with.
        const bool cold_here = steps.size() > suite_steps;
        if (want_ceiling)
          for (const auto& c : cache == CacheMode::Warm ? fam.ceilings : fam.cold_ceilings)
            if (cache == CacheMode::Warm || cold_here) steps.push_back({shape, Tier::Ceiling, "", threads, c, cache});
      }
  return steps;
}

// Stage "screen": the ceiling vendors and their configurations (vendors.hpp),
// planned before any timing: every core type or sub-configuration this CPU
// can execute (never one that would die with SIGILL), screened on a gate shape.
CeilingPlan screen_ceilings(const CompareOptions& opt, const FamilyDescriptor& fam, const MachineInfo& machine) {
  PlanOptions po;
  const bool exact = !opt.ceiling_backends.empty();
  po.enumerate = (exact || opt.blas_core_types) && fam.blas_core_types;
  const char* configs = std::getenv("POPPER_CEILING_CONFIGS");
  po.screen = !exact && !(configs && std::string(configs) == "all");
  po.only = opt.ceiling_backends;
  po.screen_threads = opt.threads;
  if (!opt.rescreen) po.screening_cache = opt.build_dir + "/ceiling-screening-" + fam.family + ".json";
  po.progress = opt.progress;
  auto plan = plan_ceiling(fam, machine, opt.build_dir, po);
  if (opt.progress)
    for (const auto& w : plan.warnings) opt.progress(w.message);
  return plan;
}

// Stage "tabulate": the rows with the run's metadata, implausible vendor rows
// measured again then marked, and every row's % of peak.
BenchTable tabulate(std::vector<BenchRow> rows, std::size_t topped_up, const CeilingPlan* plan,
                    const CompareOptions& opt, const FamilyDescriptor& fam, const MachineInfo& machine,
                    const PeakResult* peak, double spent_seconds) {
  BenchTable t;
  t.metadata = run_metadata(machine, opt.source_dir, opt.build_dir, peak);
  // The host's roofline does not bound device rows: their % of peak is of
  // the device's measured peaks (the family's device peak kinds).
  if (fam.device_tiers) {
    std::erase_if(t.metadata, [](const auto& kv) { return kv.first == "roofline_peaks" || kv.first == "llc"; });
    std::vector<std::string> kinds;
    kinds.reserve(fam.peak.size());
    for (const auto& [precision, kind] : fam.peak) kinds.push_back(fmt::format("{}: {}", precision, kind));
    t.set_meta("device_peaks", fmt::format("popper peak --device; {}", fmt::join(kinds, ", ")));
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
                             " more trials of the steps noisier than planned and the steps they pair with");
  if (!fam.wrapped_vendor.empty()) t.set_meta("wrapped_vendor", fam.wrapped_vendor);  // its rows are vendor rows
  t.rows = std::move(rows);
  // A run of a few rows (restrict_to_rows) lacks the rows a vendor row is
  // judged against: the table the caller adds them to judges them.
  const bool whole = opt.rows.empty();
  if (plan) {
    CeilingPlan checked = *plan;
    if (whole)
      for (const auto& said : confirm_misdetections(checked, t))
        if (opt.progress) opt.progress(said);
    record_plan(checked, t);
  }
  if (whole && opt.remeasure_implausible) remeasure_implausible(t, opt, fam, machine, peak, spent_seconds);
  mark_invalid_vendor_rows(t);
  t.set_footprint_reads();
  for (const auto& r : t.rows)
    if (whole && !r.valid() && opt.progress)
      opt.progress("invalid vendor row " + r.key.to_string() + ": " + r.invalid_reason + " (left out of every ratio)");
  apply_peaks(t, fam, peak);
  return t;
}

}  // namespace

// plan, screen, time, top up, tabulate.
BenchTable run_compare(const CompareOptions& opt, const FamilyDescriptor& fam, const MachineInfo& machine,
                       const PeakResult* peak) {
  if (opt.trials < 1 || opt.reps_per_trial < 1)
    throw InvalidArgument("bench compare: trials and repetitions must be >= 1");
  auto steps = plan_steps(opt, fam);
  const bool want_ceiling = std::find(opt.tiers.begin(), opt.tiers.end(), Tier::Ceiling) != opt.tiers.end();
  const CeilingPlan plan = want_ceiling ? screen_ceilings(opt, fam, machine) : CeilingPlan{};
  steps = steps_that_run(std::move(steps), plan, opt.rows);
  // A cold row evicts twice the LLC (popper/cache_evict.h): the probe doubles its sizes, so the
  // real LLC is up to twice what it measured, and four times the measure covers it.
  CompareOptions timed = opt;
  if (peak && peak->llc_bytes > 0)
    timed.env.emplace_back("POPPER_BENCH_EVICT_BYTES", fmt::format("{:.0f}", 4 * peak->llc_bytes));
  TrialRunner runner(timed, fam, plan, std::move(steps));
  const int trials_run = runner.run_planned();
  const std::size_t topped_up = runner.top_up(trials_run);
  if (opt.progress)
    opt.progress(fmt::format("done in {}; verification after timing took {:.1f} s of it ({:.1f}%)",
                             duration_text(runner.elapsed()), runner.recheck_seconds(),
                             100.0 * runner.recheck_seconds() / std::max(runner.elapsed(), 1e-9)));
  BenchTable t = tabulate(runner.take_rows(), topped_up, want_ceiling ? &plan : nullptr, opt, fam, machine, peak,
                          runner.elapsed());
  t.set_meta("cpus", cpu_list_text(runner.cpus()) + " (every process pinned: a row with T threads on the first T)");
  if (const std::string stolen = runner.steal().summary(); !stolen.empty()) t.set_meta("steal", stolen);
  if (const std::string pace = pace_summary(t); !pace.empty()) t.set_meta("pace", pace);
  return t;
}

}  // namespace popper::bench
