#include "bench/pace.hpp"

#include <fmt/format.h>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <tuple>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace popper::bench {

namespace {

// About 7 ms on a Zen 3 core (10 FMAs every 5 cycles): longer than a time
// slice, so a thread competing for the CPU shows (a 2 ms loop can run whole
// between its turns).
constexpr long kIterations = 4'500'000;
volatile long iterations = kIterations;  // read each time: no two loops are folded into one

// acc = acc * m + c converges to 0.1: no denormal, no overflow, whatever n.
#if defined(__x86_64__)
__attribute__((noinline, target("avx2,fma"))) double fma_loop_avx2(long n) {
  const __m256d m = _mm256_set1_pd(0.999999), c = _mm256_set1_pd(1e-7);
  __m256d a0 = _mm256_set1_pd(1.0), a1 = _mm256_set1_pd(1.1), a2 = _mm256_set1_pd(1.2), a3 = _mm256_set1_pd(1.3),
          a4 = _mm256_set1_pd(1.4), a5 = _mm256_set1_pd(1.5), a6 = _mm256_set1_pd(1.6), a7 = _mm256_set1_pd(1.7),
          a8 = _mm256_set1_pd(1.8), a9 = _mm256_set1_pd(1.9);
  // Ten independent chains cover the FMA latency on both pipes: the loop is bound by their throughput.
  for (long i = 0; i < n; ++i) {
    a0 = _mm256_fmadd_pd(a0, m, c), a1 = _mm256_fmadd_pd(a1, m, c), a2 = _mm256_fmadd_pd(a2, m, c);
    a3 = _mm256_fmadd_pd(a3, m, c), a4 = _mm256_fmadd_pd(a4, m, c), a5 = _mm256_fmadd_pd(a5, m, c);
    a6 = _mm256_fmadd_pd(a6, m, c), a7 = _mm256_fmadd_pd(a7, m, c), a8 = _mm256_fmadd_pd(a8, m, c);
    a9 = _mm256_fmadd_pd(a9, m, c);
  }
  const __m256d s = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)),
                                                _mm256_add_pd(_mm256_add_pd(a4, a5), _mm256_add_pd(a6, a7))),
                                  _mm256_add_pd(a8, a9));
  alignas(32) double out[4];
  _mm256_store_pd(out, s);
  return out[0] + out[1] + out[2] + out[3];
}
#endif

// Without FMA: ten multiply-add chains.
__attribute__((noinline)) double fma_loop_portable(long n) {
  double a[10];
  for (int j = 0; j < 10; ++j) a[j] = 1.0 + 0.1 * j;
  for (long i = 0; i < n; ++i)
    for (double& x : a) x = x * 0.999999 + 1e-7;
  double s = 0;
  for (double x : a) s += x;
  return s;
}

double fma_loop(long n, PaceLoop loop) {
#if defined(__x86_64__)
  static const bool fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (fma && loop == PaceLoop::Widest) return fma_loop_avx2(n);
#endif
  return fma_loop_portable(n);
}

double seconds_of_loop(PaceLoop loop) {
  static std::atomic<double> sink{0};  // the result is used, so the loop is kept
  const auto t0 = std::chrono::steady_clock::now();
  const double v = fma_loop(iterations, loop);
  const auto t1 = std::chrono::steady_clock::now();
  sink.store(v, std::memory_order_relaxed);
  return std::chrono::duration<double>(t1 - t0).count();
}

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

PaceMeter::PaceMeter(std::vector<int> cpus) : cpus_(std::move(cpus)), before_(measure_pace(cpus_)) {}

double PaceMeter::seconds() const {
  const double after = measure_pace(cpus_);
  return before_ < 0 || after < 0 ? -1 : std::max(before_, after);
}

std::map<int, double> fastest_pace(const BenchTable& t) {
  std::map<int, double> out;
  for (const auto& r : t.rows)
    for (const auto& [trial, s] : r.pace) {
      if (s <= 0) continue;
      const auto [it, fresh] = out.emplace(r.key.threads, s);
      if (!fresh) it->second = std::min(it->second, s);
    }
  return out;
}

bool ran_slow(const BenchRow& r, int trial, const std::map<int, double>& fastest) {
  const auto p = r.pace.find(trial);
  const auto f = fastest.find(r.key.threads);
  return p != r.pace.end() && f != fastest.end() && p->second > kSlowPace * f->second;
}

std::set<int> mixed_pace_trials(const BenchRow& a, const BenchRow& b, const std::map<int, double>& fastest) {
  std::set<int> in_a, out;
  for (std::size_t i = 0; i < a.samples.size(); ++i) in_a.insert(a.trial_of(i));
  for (std::size_t i = 0; i < b.samples.size(); ++i) {
    const int t = b.trial_of(i);
    if (in_a.count(t) && ran_slow(a, t, fastest) != ran_slow(b, t, fastest)) out.insert(t);
  }
  return out;
}

BenchRow without_trials(const BenchRow& r, const std::set<int>& trials) {
  BenchRow kept = r;
  kept.samples.clear();
  kept.trials.clear();
  for (std::size_t i = 0; i < r.samples.size(); ++i)
    if (!trials.count(r.trial_of(i))) {
      kept.samples.push_back(r.samples[i]);
      kept.trials.push_back(r.trial_of(i));
    }
  for (int t : trials) kept.pace.erase(t);
  return kept;
}

std::string pace_summary(const BenchTable& t) {
  const auto fastest = fastest_pace(t);
  struct Count {
    int slow = 0, all = 0;
  };
  std::map<int, std::map<Tier, Count>> by;
  // A ceiling process writes a row per precision, each with the process's pace: count it once.
  std::set<std::tuple<std::string, std::string, int, std::string, int, double>> seen;
  for (const auto& r : t.rows)
    for (const auto& [trial, s] : r.pace)
      if (s > 0 && seen.insert({r.key.backend, r.key.shape, r.key.threads, r.key.cache_mode, trial, s}).second) {
        Count& c = by[r.key.threads][r.key.tier];
        ++c.all;
        c.slow += ran_slow(r, trial, fastest);
      }
  std::string out;
  for (const auto& [threads, tiers] : by) {
    std::string parts;
    for (const auto& [tier, c] : tiers)
      parts += fmt::format("{}{} {} of {}", parts.empty() ? "" : ", ", tier_text(tier), c.slow, c.all);
    out += fmt::format("{}{} thread{}: fastest {:.2f} ms; slow (over {}x) in {}", out.empty() ? "" : "; ", threads,
                       threads == 1 ? "" : "s", 1e3 * fastest.at(threads), kSlowPace, parts);
  }
  return out;
}

std::string pace_csv(const BenchTable& t) {
  const auto fastest = fastest_pace(t);
  std::string out = "row,trial,pace_seconds,median_seconds,slow\n";
  for (const auto& r : t.rows)
    for (const auto& [trial, s] : r.pace) {
      std::vector<double> mine;
      for (std::size_t i = 0; i < r.samples.size(); ++i)
        if (r.trial_of(i) == trial) mine.push_back(r.samples[i]);
      if (mine.empty()) continue;
      std::sort(mine.begin(), mine.end());
      const std::size_t n = mine.size();
      const double median = n % 2 ? mine[n / 2] : 0.5 * (mine[n / 2 - 1] + mine[n / 2]);
      out += fmt::format("{},{},{:.6g},{:.6g},{}\n", r.key.to_string(), trial, s, median,
                         ran_slow(r, trial, fastest) ? "yes" : "no");
    }
  return out;
}

}  // namespace popper::bench
