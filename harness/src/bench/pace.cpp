#include "bench/pace.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "popper/pace.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <tuple>

namespace popper::bench {

namespace {

double seconds_of_loop(PaceLoop loop) { return popper_pace_seconds(loop == PaceLoop::Widest ? 1 : 0); }

bool pin_this_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set) == 0;
}

}  // namespace

double measure_pace(const std::vector<int>& cpus, PaceLoop loop) {
  if (cpus.empty()) return -1;
  std::vector<double> per_cpu(cpus.size(), -1);
  std::atomic<std::size_t> ready{0};
  std::vector<std::thread> threads;
  threads.reserve(cpus.size());
  for (std::size_t i = 0; i < cpus.size(); ++i)
    threads.emplace_back([&, i] {
      const bool pinned = pin_this_thread(cpus[i]);
      // Start together: the loops share what the CPUs share (a core, a host's sibling).
      ready.fetch_add(1);
      while (ready.load() < cpus.size()) std::this_thread::yield();
      if (pinned) per_cpu[i] = seconds_of_loop(loop);
    });
  for (auto& t : threads) t.join();
  if (std::any_of(per_cpu.begin(), per_cpu.end(), [](double x) { return x < 0; })) return -1;
  return *std::max_element(per_cpu.begin(), per_cpu.end());
}

namespace {

// The least mean round trip of kLinkBatches batches of kLinkTrips between a
// thread pinned to `a` and one pinned to `b`; < 0 when a pin failed or a side
// stopped answering for kLinkPatience.
constexpr int kLinkBatches = 5;
constexpr long kLinkTrips = 200;
constexpr auto kLinkPatience = std::chrono::seconds(1);

double link_between(int a, int b) {
  struct alignas(64) Line {
    std::atomic<long> trips{0};  // odd: a served trip n = (v - 1) / 2; even: b returned it
  } line;
  std::atomic<int> pinned{0};
  std::atomic<bool> stop{false}, failed{false};
  // Waits until the line reads `want`; false once the other side gave up or is past patience.
  auto wait_for = [&](long want) {
    const auto deadline = std::chrono::steady_clock::now() + kLinkPatience;
    for (long spin = 1; line.trips.load(std::memory_order_acquire) != want; ++spin)
      if (spin % 4096 == 0 && (stop.load() || std::chrono::steady_clock::now() > deadline)) {
        failed = true, stop = true;
        return false;
      }
    return true;
  };
  auto start_together = [&](int cpu) {
    if (!pin_this_thread(cpu)) failed = true, stop = true;
    pinned.fetch_add(1);
    while (pinned.load() < 2) std::this_thread::yield();
    return !stop.load();
  };
  double best = -1;
  std::thread other([&] {
    if (!start_together(b)) return;
    for (long n = 0; n < kLinkBatches * kLinkTrips; ++n) {
      if (!wait_for(2 * n + 1)) return;
      line.trips.store(2 * n + 2, std::memory_order_release);
    }
  });
  std::thread server([&] {
    if (!start_together(a)) return;
    for (long n = 0, batch = 0; batch < kLinkBatches; ++batch) {
      const auto t0 = std::chrono::steady_clock::now();
      for (long i = 0; i < kLinkTrips; ++i, ++n) {
        line.trips.store(2 * n + 1, std::memory_order_release);
        if (!wait_for(2 * n + 2)) return;
      }
      const double mean = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / kLinkTrips;
      best = best < 0 ? mean : std::min(best, mean);
    }
  });
  server.join();
  other.join();
  return failed ? -1 : best;
}

}  // namespace

double measure_link(const std::vector<int>& cpus) {
  double worst = 0;
  for (std::size_t k = 1; k < cpus.size(); ++k) {
    const double s = link_between(cpus[0], cpus[k]);
    if (s < 0) return -1;
    worst = std::max(worst, s);
  }
  return worst;
}

PaceMeter::PaceMeter(std::vector<int> cpus, bool probe)
    : cpus_(std::move(cpus)),
      before_(probe ? measure_pace(cpus_) : -1),
      link_before_(probe ? measure_link(cpus_) : -1) {}

// An end left unknown (not probed, or a failed probe) leaves the process's
// pace unknown, so the other end is not measured.
double PaceMeter::seconds() const {
  if (before_ < 0) return -1;
  const double after = measure_pace(cpus_);
  return after < 0 ? -1 : std::max(before_, after);
}

double PaceMeter::link_seconds() const {
  if (link_before_ < 0) return -1;
  const double after = measure_link(cpus_);
  return after < 0 ? -1 : std::max(link_before_, after);
}

namespace {
// Keeps in `least` the least positive s seen for each thread count.
void keep_least(std::map<int, double>& least, int threads, double s) {
  if (s <= 0) return;
  const auto [it, fresh] = least.emplace(threads, s);
  if (!fresh) it->second = std::min(it->second, s);
}
}  // namespace

std::map<int, double> fastest_pace(const BenchTable& t) {
  std::map<int, std::vector<double>> paces;  // every positive probe, by thread count
  for (const auto& r : t.rows) {
    for (const auto& [trial, s] : r.pace)
      if (s > 0) paces[r.key.threads].push_back(s);
    for (double s : r.sample_pace)
      if (s > 0) paces[r.key.threads].push_back(s);
  }
  std::map<int, double> out;
  for (auto& [threads, v] : paces) {
    const auto k = static_cast<std::ptrdiff_t>((v.size() - 1) / kFastestPaceRank);
    std::nth_element(v.begin(), v.begin() + k, v.end());
    out[threads] = v[static_cast<std::size_t>(k)];
  }
  return out;
}

BenchRow steady_samples(const BenchRow& r, const std::map<int, double>& fastest) {
  const auto f = fastest.find(r.key.threads);
  if (f == fastest.end()) return r;
  const double limit = kSlowPace * f->second;
  auto steady = [&](std::size_t i) { return r.pace_of(i) > 0 && r.pace_of(i) <= limit; };
  std::map<int, double> steady_max, slow_min;  // by trial, over its probed samples
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    const double p = r.pace_of(i);
    if (p <= 0) continue;
    const int t = r.trial_of(i);
    if (steady(i)) steady_max[t] = std::max(steady_max[t], p);
    else slow_min[t] = slow_min.count(t) ? std::min(slow_min[t], p) : p;
  }
  BenchRow kept = r;
  kept.samples.clear(), kept.trials.clear(), kept.sample_pace.clear();
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    const int t = r.trial_of(i);
    // A trial with a steady repetition keeps those; one without keeps every repetition.
    if (steady_max.count(t) && r.pace_of(i) > 0 && !steady(i)) continue;
    kept.samples.push_back(r.samples[i]);
    kept.trials.push_back(t);
    kept.sample_pace.push_back(r.pace_of(i));
  }
  // The process ran at the pace of the repetitions it kept: steady when it kept steady ones.
  for (const auto& [t, p] : steady_max) kept.pace[t] = p;
  for (const auto& [t, p] : slow_min)
    if (!steady_max.count(t)) kept.pace[t] = std::max(kept.pace.count(t) ? kept.pace[t] : 0.0, p);
  return kept;
}

bool ran_slow(const BenchRow& r, int trial, const std::map<int, double>& fastest) {
  const auto p = r.pace.find(trial);
  const auto f = fastest.find(r.key.threads);
  return p != r.pace.end() && f != fastest.end() && p->second > kSlowPace * f->second;
}

std::set<int> shared_trials(const BenchRow& a, const BenchRow& b) {
  const std::set<int> in_a = a.trials_ran();
  std::set<int> out;
  for (int t : b.trials_ran())
    if (in_a.contains(t)) out.insert(t);
  return out;
}

std::set<int> mixed_pace_trials(const BenchRow& a, const BenchRow& b, const std::map<int, double>& fastest) {
  std::set<int> out = shared_trials(a, b);
  std::erase_if(out, [&](int t) { return ran_slow(a, t, fastest) == ran_slow(b, t, fastest); });
  return out;
}

std::set<int> both_slow_trials(const BenchRow& a, const BenchRow& b, const std::map<int, double>& fastest) {
  std::set<int> out = shared_trials(a, b);
  std::erase_if(out, [&](int t) { return !ran_slow(a, t, fastest) || !ran_slow(b, t, fastest); });
  return out;
}

std::map<int, double> closest_link(const BenchTable& t) {
  std::map<int, double> out;
  for (const auto& r : t.rows)
    for (const auto& [trial, s] : r.link) keep_least(out, r.key.threads, s);
  return out;
}

bool ran_far(const BenchRow& r, int trial, const std::map<int, double>& closest) {
  const auto l = r.link.find(trial);
  const auto c = closest.find(r.key.threads);
  return l != r.link.end() && c != closest.end() && l->second > kFarLink * c->second;
}

std::set<int> mixed_link_trials(const BenchRow& a, const BenchRow& b) {
  std::set<int> out;
  for (const auto& [t, la] : a.link)
    if (const auto lb = b.link.find(t); lb != b.link.end() && la > 0 && lb->second > 0 &&
                                        std::max(la, lb->second) > kFarLink * std::min(la, lb->second))
      out.insert(t);
  return out;
}

BenchRow without_trials(const BenchRow& r, const std::set<int>& trials) {
  BenchRow kept = r;
  kept.samples.clear();
  kept.trials.clear();
  kept.sample_pace.clear();
  for (std::size_t i = 0; i < r.samples.size(); ++i)
    if (!trials.count(r.trial_of(i))) {
      kept.samples.push_back(r.samples[i]);
      kept.trials.push_back(r.trial_of(i));
      kept.sample_pace.push_back(r.pace_of(i));
    }
  for (int t : trials) kept.pace.erase(t), kept.link.erase(t), kept.read.erase(t);
  return kept;
}

namespace {
struct Count {
  int marked = 0, all = 0;
};

// By thread count and tier: the processes with a probe in `probe` (BenchRow::pace
// or ::link), and those of them `marked` (ran slow, ran far).
template <class Marked>
std::map<int, std::map<Tier, Count>> count_processes(const BenchTable& t, std::map<int, double> BenchRow::*probe,
                                                     Marked marked) {
  std::map<int, std::map<Tier, Count>> by;
  // A ceiling process writes a row per precision, each with the process's probe: count it once.
  std::set<std::tuple<std::string, std::string, int, std::string, int, double>> seen;
  for (const auto& r : t.rows)
    for (const auto& [trial, s] : r.*probe)
      if (s > 0 && seen.insert({r.key.backend, r.key.shape, r.key.threads, r.key.cache_mode, trial, s}).second) {
        Count& c = by[r.key.threads][r.key.tier];
        ++c.all;
        c.marked += marked(r, trial);
      }
  return by;
}
}  // namespace

std::string pace_summary(const BenchTable& t) {
  const auto fastest = fastest_pace(t);
  const auto by =
      count_processes(t, &BenchRow::pace, [&](const BenchRow& r, int trial) { return ran_slow(r, trial, fastest); });
  std::map<int, Count> reps;  // repetitions probed inside their process
  for (const auto& r : t.rows)
    for (double s : r.sample_pace)
      if (s > 0) {
        Count& c = reps[r.key.threads];
        ++c.all;
        c.marked += s > kSlowPace * fastest.at(r.key.threads);
      }
  const auto closest = closest_link(t);
  const auto far =
      count_processes(t, &BenchRow::link, [&](const BenchRow& r, int trial) { return ran_far(r, trial, closest); });
  auto by_tier = [](const std::map<Tier, Count>& tiers) {
    std::string parts;
    for (const auto& [tier, c] : tiers)
      parts += fmt::format("{}{} {} of {}", parts.empty() ? "" : ", ", tier_text(tier), c.marked, c.all);
    return parts;
  };
  // In turns (compare.hpp) no process is probed around, only a 1-thread
  // row's repetitions: a thread count is summed up by whichever it has.
  std::set<int> counts;
  for (const auto* m : {&by, &far})
    for (const auto& [threads, tiers] : *m) counts.insert(threads);
  for (const auto& [threads, c] : reps) counts.insert(threads);
  std::string out;
  for (const int threads : counts) {
    std::vector<std::string> parts;
    if (const auto f = fastest.find(threads); f != fastest.end())
      parts.push_back(fmt::format("fastest {:.2f} ms", 1e3 * f->second));
    if (const auto it = by.find(threads); it != by.end())
      parts.push_back(fmt::format("slow (over {}x) in {}", kSlowPace, by_tier(it->second)));
    if (const auto it = reps.find(threads); it != reps.end())
      parts.push_back(fmt::format("repetitions probed in their process: slow (over {}x) in {} of {}", kSlowPace,
                                  it->second.marked, it->second.all));
    if (const auto it = far.find(threads); it != far.end())
      parts.push_back(fmt::format("link closest {:.3f} us; far (over {}x) in {}", 1e6 * closest.at(threads), kFarLink,
                                  by_tier(it->second)));
    out += fmt::format("{}{} thread{}: {}", out.empty() ? "" : "; ", threads, threads == 1 ? "" : "s",
                       fmt::join(parts, "; "));
  }
  return out;
}

std::string pace_csv(const BenchTable& t) {
  const auto fastest = fastest_pace(t);
  const auto closest = closest_link(t);
  std::string out =
      "row,trial,pace_seconds,median_seconds,slow,repetition_pace_seconds,repetition_seconds,link_seconds,far,"
      "read_gbs\n";
  for (const auto& r : t.rows) {
    // A trial's pace as the claims judge it: its process's probe, or in turns
    // that of the repetitions it kept (steady_samples); pace_seconds is the
    // process's own probe, 0 where none was taken.
    const BenchRow judged = steady_samples(r, fastest);
    for (const auto& judged_trial : judged.pace) {
      const int trial = judged_trial.first;
      const auto own = r.pace.find(trial);
      const double s = own == r.pace.end() ? 0.0 : own->second;
      std::vector<double> mine;
      std::string rep_paces, rep_seconds;  // ';'-separated, in the order measured
      for (std::size_t i = 0; i < r.samples.size(); ++i)
        if (r.trial_of(i) == trial) {
          mine.push_back(r.samples[i]);
          if (r.pace_of(i) > 0) {
            rep_paces += fmt::format("{}{:.6g}", rep_paces.empty() ? "" : ";", r.pace_of(i));
            rep_seconds += fmt::format("{}{:.6g}", rep_seconds.empty() ? "" : ";", r.samples[i]);
          }
        }
      if (mine.empty()) continue;
      std::sort(mine.begin(), mine.end());
      const std::size_t n = mine.size();
      const double median = n % 2 ? mine[n / 2] : 0.5 * (mine[n / 2 - 1] + mine[n / 2]);
      const auto link = r.link.find(trial);
      const auto read = r.read.find(trial);
      out += fmt::format("{},{},{:.6g},{:.6g},{},{},{},{:.6g},{},{:.4g}\n", r.key.to_string(), trial, s, median,
                         ran_slow(judged, trial, fastest) ? "yes" : "no", rep_paces, rep_seconds,
                         link == r.link.end() ? 0.0 : link->second, ran_far(r, trial, closest) ? "yes" : "no",
                         read == r.read.end() ? 0.0 : read->second * 1e-9);
    }
  }
  return out;
}

}  // namespace popper::bench
