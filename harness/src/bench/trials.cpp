#include "bench/trials.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <tuple>
#include <utility>

#include "bench/ingest.hpp"
#include "bench/interval.hpp"
#include "bench/pace.hpp"
#include "bench/placement.hpp"
#include "bench/plan.hpp"
#include "bench/steal.hpp"
#include "common/process.hpp"
#include "common/text.hpp"
#include "popper/error.hpp"
#include "popper/runtime_paths.hpp"

namespace popper::bench {

std::string duration_text(double seconds) {
  const long t = std::lround(std::max(0.0, seconds));
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  return buf;
}

TrialRunner::TrialRunner(const CompareOptions& opt, const FamilyDescriptor& fam, const CeilingPlan& plan,
                         std::vector<Step> steps)
    : opt_(opt),
      fam_(fam),
      plan_(plan),
      steps_(std::move(steps)),
      bin_(opt.build_dir + "/bin/"),
      cpus_(opt.cpus.empty() ? bench_cpus() : opt.cpus),
      step_rows_(steps_.size()),
      total_(steps_.size() * static_cast<std::size_t>(opt.trials)),
      t0_(std::chrono::steady_clock::now()) {
  char text[32];  // --min-time for the ceilings and the suites alike
  std::snprintf(text, sizeof text, "%g", opt.min_time);
  min_time_ = text;
  // A step runs its repetitions of about min_time each, plus setup and
  // verification (seconds on the largest shapes); one far past that is a hung
  // kernel or a loop mis-sized, and is killed with its rows left out rather
  // than stalling the run without a word.
  step_timeout_ = opt.step_timeout_seconds > 0 ? opt.step_timeout_seconds
                                               : kStepTimeoutFloorSeconds + 10.0 * opt.reps_per_trial * opt.min_time;
  suite_env_ = opt.env;
  if (std::none_of(suite_env_.begin(), suite_env_.end(), [](const auto& kv) { return kv.first == kReferenceDirEnv; }))
    references_.emplace().add_to(suite_env_);
}

SharedReferences::SharedReferences() : dir_(popper::make_run_dir("popper-bench-reference")) {}
SharedReferences::~SharedReferences() {
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}
void SharedReferences::add_to(Environment& env) const {
  if (!dir_.empty()) env.emplace_back(kReferenceDirEnv, dir_);
}

double TrialRunner::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

std::string TrialRunner::timeout_text(const ProcessResult& r) const {
  return r.timed_out ? fmt::format(" after {:g} s, the step limit", step_timeout_) : "";
}

void TrialRunner::say(const std::string& s) const {
  if (opt_.progress) opt_.progress(s);
}

void TrialRunner::add(std::vector<BenchRow> got, int trial, double pace, double link) {
  for (auto& g : got) {
    g.trials.assign(g.samples.size(), trial);
    if (pace > 0) g.pace[trial] = pace;
    if (link > 0) g.link[trial] = link;
    if (g.read_bound > 0) g.read[trial] = g.read_bound;
    if (!host_timed(fam_, g.key.tier)) g.sample_pace.clear();  // the suite's own probes are of the host too
    step_rows_[current_step_].insert(g.key);
  }
  merge_rows(rows_, got);
}

// One process of a step: a suite row, or a ceiling program under one
// configuration for one precision ("": every precision it measures).
struct TrialRunner::Process {
  std::size_t step = 0;
  const VendorConfig* cfg = nullptr;  // a ceiling's configuration
  std::string precision;
  std::string json_path;  // a suite's Google Benchmark JSON
  Launch launch;
};

std::vector<TrialRunner::Process> TrialRunner::processes_of(std::size_t step, bool split_precisions) const {
  const Step& s = steps_[step];
  const std::vector<int> cpus = cpus_for(cpus_, s.threads);
  std::vector<Process> out;
  if (s.tier != Tier::Ceiling) {
    const std::string name = format_bench_name({fam_.family, s.tier, s.shape, s.precision, s.threads, s.cache});
    Process p{step, nullptr, s.precision, popper::make_temp_file("popper-gbench"), {}};
    if (p.json_path.empty()) throw Error("cannot create a temporary file");
    p.launch = {
        {bin_ + fam_.executable,
         "--benchmark_filter=^" + regex_escape(name) + "(/iterations:[0-9]+)?(/real_time|/manual_time)?$",
         "--benchmark_repetitions=" + std::to_string(opt_.reps_per_trial), "--benchmark_report_aggregates_only=false",
         "--benchmark_min_time=" + min_time_, "--benchmark_out=" + p.json_path, "--benchmark_out_format=json"},
        suite_env_,
        {},
        cpus};
    out.push_back(std::move(p));
    return out;
  }
  for (const VendorConfig* cfg : plan_.runnable(s.ceiling)) {
    const auto precision = ceiling_precision(s, cfg->backend(), opt_.rows);
    if (!precision) continue;
    // The configuration's variables win over the run's timing environment.
    auto env = cfg->env_set(s.threads);
    const auto unset = cfg->env_unset();
    for (const auto& kv : opt_.env) {
      const bool overridden = std::any_of(env.begin(), env.end(), [&](const auto& e) { return e.first == kv.first; }) ||
                              std::find(unset.begin(), unset.end(), kv.first) != unset.end();
      if (!overridden) env.push_back(kv);
    }
    // In turns, a program that times every precision would time the second
    // after the suites' rows of it had ended: one process per precision.
    std::vector<std::string> precisions{*precision};
    if (precision->empty() && split_precisions) precisions = opt_.precisions;
    for (const std::string& p : precisions) {
      std::vector<std::string> argv = {bin_ + "ceiling_" + s.ceiling,
                                       "--shape",
                                       s.shape,
                                       "--reps",
                                       std::to_string(opt_.reps_per_trial),
                                       "--threads",
                                       std::to_string(s.threads),
                                       "--min-time",
                                       min_time_};
      if (!p.empty()) argv.insert(argv.end(), {"--precision", p});
      if (s.cache == CacheMode::Cold) argv.insert(argv.end(), {"--cache", "cold"});
      out.push_back({step, cfg, p, "", {std::move(argv), env, unset, cpus}});
    }
  }
  return out;
}

void TrialRunner::ingest(const Process& p, const ProcessResult& r, int trial, double pace, double link) {
  const Step& s = steps_[p.step];
  current_step_ = p.step;
  if (!p.cfg) {
    const std::string name = format_bench_name({fam_.family, s.tier, s.shape, s.precision, s.threads, s.cache});
    std::ifstream in(p.json_path);
    std::ostringstream ss;
    ss << in.rdbuf();
    ::unlink(p.json_path.c_str());
    if (!r.ok()) {
      say("warning: " + fam_.executable + " " + name + " failed: " + r.describe() + timeout_text(r) + "; row left out");
      return;
    }
    if (const auto at = r.err.rfind(kRecheckSecondsLine); at != std::string::npos)
      recheck_seconds_ += std::strtod(r.err.c_str() + at + std::strlen(kRecheckSecondsLine), nullptr);
    auto got = rows_from_gbench_json(ss.str(), fam_.executable + " " + name, fam_.work_unit);
    if (got.empty()) say("warning: " + fam_.executable + " produced no row for " + name);
    for (const auto& g : got)
      if (g.verdict.failed()) say("warning: " + name + ": " + g.verdict.label);
    add(std::move(got), trial, pace, link);
    return;
  }
  if (!r.ok()) {
    say("warning: ceiling_" + s.ceiling + " under " + p.cfg->setting() + " failed: " + r.describe() + timeout_text(r) +
        "; its rows are left out");
    return;
  }
  if (r.out.rfind("# skipped", 0) == 0) {
    const std::string why = r.out.substr(0, r.out.find('\n'));
    if (opt_.require_device) throw Error("ceiling_" + s.ceiling + " declined under --require-device: " + why);
    say("ceiling_" + s.ceiling + ": " + why);
    return;
  }
  auto got = rows_from_ceiling_csv(r.out, "ceiling_" + s.ceiling);
  std::erase_if(got, [&](const BenchRow& g) {  // a program may measure more than it was asked
    return std::find(opt_.precisions.begin(), opt_.precisions.end(), g.key.precision) == opt_.precisions.end() ||
           (!p.precision.empty() && g.key.precision != p.precision);
  });
  for (auto& g : got) {
    g.work_unit = fam_.work_unit;
    g.key.cache_mode = std::string(to_string(s.cache));  // the ceiling CSV has no cache column: the mode asked for
  }
  add(std::move(got), trial, pace, link);
}

void TrialRunner::run_alone(const Process& p, int trial) {
  const Step& s = steps_[p.step];
  const PaceMeter pace(p.launch.cpus, host_timed(fam_, s.tier));
  const StealMeter steal(p.launch.cpus);
  const auto r = run_process(p.launch.argv, p.launch.env_set, p.launch.env_unset, step_timeout_, p.launch.cpus);
  steal_.add(s.tier, s.threads, steal.fraction());
  const double paced = pace.seconds(), linked = pace.link_seconds();
  ingest(p, r, trial, paced, linked);
}

void shorten_worker_spin(Launch& l, CacheMode cache, const char* caller_value) {
  if (cache != CacheMode::Warm || caller_value) return;
  for (const auto& [k, v] : l.env_set)
    if (k == kThreadTimeoutVar) return;
  l.env_set.emplace_back(kThreadTimeoutVar, kTurnThreadTimeout);
}

void TrialRunner::run_together(const std::vector<Process>& ps, int trial) {
  const Step& first = steps_[ps.front().step];
  const StealMeter steal(ps.front().launch.cpus);
  const char* caller_timeout = std::getenv(kThreadTimeoutVar);
  std::vector<Launch> launches;
  for (const auto& p : ps) {
    launches.push_back(p.launch);
    shorten_worker_spin(launches.back(), steps_[p.step].cache, caller_timeout);
  }
  const auto results = run_in_turns(launches, step_timeout_ * static_cast<double>(ps.size()));
  const double stolen = steal.fraction();
  // No pace or link of their own: a probe around the turns reads all the
  // processes alike, and each met the host's changes as the others did. A
  // 1-thread row's probes around each repetition still judge it.
  for (std::size_t i = 0; i < ps.size(); ++i) {
    steal_.add(steps_[ps[i].step].tier, first.threads, stolen);
    ingest(ps[i], results[i], trial, -1, -1);
  }
}

bool step_times_any(const Step& s, const std::vector<BenchKey>& rows) {
  return std::any_of(rows.begin(), rows.end(), [&](const BenchKey& k) {
    return k.tier == s.tier && k.shape == s.shape && k.threads == s.threads && k.cache_mode == to_string(s.cache) &&
           (s.tier == Tier::Ceiling || k.precision == s.precision);
  });
}

std::optional<std::string> ceiling_precision(const Step& s, const std::string& backend,
                                             const std::vector<BenchKey>& rows) {
  if (rows.empty()) return "";
  std::set<std::string> precisions;
  for (const auto& k : rows)
    if (k.tier == Tier::Ceiling && backend_of_configuration(k.backend, backend) && k.shape == s.shape &&
        k.threads == s.threads && k.cache_mode == to_string(s.cache))
      precisions.insert(k.precision);
  if (precisions.empty()) return std::nullopt;
  return precisions.size() == 1 ? *precisions.begin() : "";
}

std::vector<Step> steps_that_run(std::vector<Step> steps, const CeilingPlan& plan, const std::vector<BenchKey>& rows) {
  std::erase_if(steps, [&](const Step& s) {
    if (!rows.empty() && !step_times_any(s, rows)) return true;
    if (s.tier != Tier::Ceiling) return false;
    const auto configs = plan.runnable(s.ceiling);
    return std::none_of(configs.begin(), configs.end(),
                        [&](const VendorConfig* c) { return ceiling_precision(s, c->backend(), rows).has_value(); });
  });
  return steps;
}

namespace {
// A trial's block: the steps of one shape, thread count and cache mode.
std::tuple<std::string, int, CacheMode> block_of(const Step& s) { return {s.shape, s.threads, s.cache}; }
}  // namespace

std::vector<std::size_t> trial_order(const std::vector<Step>& steps, std::vector<std::size_t> which,
                                     std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::map<std::tuple<std::string, int, CacheMode>, std::vector<std::size_t>> by_block;
  for (const std::size_t i : which) by_block[block_of(steps[i])].push_back(i);
  std::vector<std::vector<std::size_t>> blocks;
  for (auto& [key, block] : by_block) {
    std::shuffle(block.begin(), block.end(), rng);
    blocks.push_back(std::move(block));
  }
  std::shuffle(blocks.begin(), blocks.end(), rng);
  std::vector<std::size_t> order;
  for (const auto& block : blocks) order.insert(order.end(), block.begin(), block.end());
  return order;
}

// One pass over the steps `which` (indices into steps_), in the trial's order:
// a block's steps (one shape, thread count and cache mode) in turns when
// opt_.turns holds, else one process after another.
void TrialRunner::run_trial(int trial, const std::string& label, std::vector<std::size_t> which, bool first_pass) {
  which = trial_order(steps_, std::move(which), opt_.order_seed + static_cast<std::uint64_t>(trial));
  for (std::size_t at = 0; at < which.size();) {
    std::size_t end = at + 1;
    if (opt_.turns)
      while (end < which.size() && block_of(steps_[which[end]]) == block_of(steps_[which[at]])) ++end;
    const std::size_t count = end - at;
    const double now = elapsed();
    const double forecast =
        first_pass || done_ == 0 ? 0 : now / static_cast<double>(done_) * static_cast<double>(count);
    if (opt_.budget_seconds > 0 && done_ > 0 && now + forecast > opt_.budget_seconds) {
      say("budget: " + label + " stops after " + std::to_string(at) + " of " + std::to_string(which.size()) +
          " steps (" + duration_text(now) + " of the " + duration_text(opt_.budget_seconds) +
          " budget spent); the steps left are not run in it");
      budget_spent_ = true;
      return;
    }
    const std::string eta = done_ ? fmt::format(", ~{} remaining", duration_text(now / static_cast<double>(done_) *
                                                                                 static_cast<double>(total_ - done_)))
                                  : "";
    std::vector<Process> ps;
    std::vector<std::string> what;
    for (std::size_t i = at; i < end; ++i) {
      auto mine = processes_of(which[i], count > 1);
      const Step& s = steps_[which[i]];
      std::string precision = s.precision;
      for (const auto& p : mine)
        precision =
            p.precision.empty() || (!precision.empty() && precision != p.precision) ? "every precision" : p.precision;
      what.push_back(
          fmt::format("{} {}{}", tier_text(s.tier), precision, s.tier == Tier::Ceiling ? " (" + s.ceiling + ")" : ""));
      for (auto& p : mine) ps.push_back(std::move(p));
    }
    const Step& s = steps_[which[at]];
    const std::string range = count > 1 ? fmt::format("{}-{}", done_ + 1, done_ + count) : fmt::format("{}", done_ + 1);
    say(fmt::format("[{}, {}/{}] {} {} threads:{}{} {}{} — elapsed {}{}", label, range, total_, fam_.family, s.shape,
                    s.threads, s.cache == CacheMode::Cold ? " cold" : "",
                    ps.size() > 1 && count > 1 ? "in turns: " : "", fmt::join(what, ", "), duration_text(now), eta));
    if (ps.size() > 1 && count > 1) run_together(ps, trial);
    else
      for (const auto& p : ps) run_alone(p, trial);
    done_ += count;
    at = end;
  }
}

int TrialRunner::run_planned() {
  std::vector<std::size_t> every(steps_.size());
  for (std::size_t i = 0; i < every.size(); ++i) every[i] = i;
  int trials_run = 0;
  for (; trials_run < opt_.trials && !budget_spent_; ++trials_run) {
    if (!trial_fits_budget(elapsed(), trials_run, opt_.budget_seconds)) {
      say("budget: " + std::to_string(trials_run) + " of " + std::to_string(opt_.trials) + " trials took " +
          duration_text(elapsed()) + "; another would pass the " + duration_text(opt_.budget_seconds) +
          " budget, so the run stops here (--budget, or --trials to fix the count)");
      break;
    }
    run_trial(opt_.first_trial + trials_run,
              "trial " + std::to_string(trials_run + 1) + "/" + std::to_string(opt_.trials), every, trials_run == 0);
  }
  return trials_run;
}

std::size_t TrialRunner::top_up(int trials_run) {
  if (opt_.top_up_trials <= 0 || trials_run < 2 || budget_spent_) return 0;
  // As many more trials as each step's own noise says power needs, capped.
  std::vector<int> extra(steps_.size(), 0);
  std::size_t extra_steps = 0, processes = 0;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    double sigma = 0;
    for (const auto& r : rows_)
      if (step_rows_[i].count(r.key)) sigma = std::max(sigma, between_trial_log_sd({&r.samples, &r.trials}));
    const int need = sigma > 0 ? trials_to_flag(sigma, opt_.top_up_alpha) : 0;
    extra[i] = std::clamp(need - trials_run, 0, opt_.top_up_trials);
  }
  // A ratio pairs its two sides by trial (interval.hpp), and its sides are
  // steps of one block and precision (a ceiling step's is every one): a trial
  // of one of them alone pairs with nothing. So such steps top up together,
  // as far as the noisiest of them needs.
  const auto pairs_with = [&](std::size_t a, std::size_t b) {
    const Step &x = steps_[a], &y = steps_[b];
    return block_of(x) == block_of(y) && (x.precision == y.precision || x.precision.empty() || y.precision.empty());
  };
  const std::vector<int> own = extra;
  for (std::size_t i = 0; i < steps_.size(); ++i)
    for (std::size_t j = 0; j < steps_.size(); ++j)
      if (pairs_with(i, j)) extra[i] = std::max(extra[i], own[j]);
  std::size_t noisy = 0;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    noisy += own[i] > 0;
    if (extra[i] > 0) total_ += static_cast<std::size_t>(extra[i]), ++extra_steps;
  }
  if (extra_steps > 0)
    say("top-up: " + std::to_string(noisy) + " of " + std::to_string(steps_.size()) +
        " steps were noisier than planned; up to " + std::to_string(opt_.top_up_trials) + " more trials of them" +
        (extra_steps > noisy ? " and of the " + std::to_string(extra_steps - noisy) + " steps they pair with" : ""));
  const double per_step = done_ ? elapsed() / static_cast<double>(done_) : 0;
  for (int round = 0; round < opt_.top_up_trials; ++round) {
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < steps_.size(); ++i)
      if (extra[i] > round) which.push_back(i);
    if (which.empty()) break;
    if (opt_.budget_seconds > 0 && elapsed() + per_step * static_cast<double>(which.size()) > opt_.budget_seconds) {
      say("top-up: the budget ends here (" + duration_text(elapsed()) + " spent)");
      break;
    }
    run_trial(opt_.first_trial + trials_run + round,
              "top-up " + std::to_string(round + 1) + "/" + std::to_string(opt_.top_up_trials), which);
    processes += which.size();
    if (budget_spent_) break;
  }
  return processes;
}

}  // namespace popper::bench
