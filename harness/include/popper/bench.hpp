// The bench API: what a family's Google Benchmark suite is written with, the
// one header it includes. A family declares its axes (shapes, precisions,
// thread counts, tiers) on a Family, and one body per case:
//
//   popper::bench::Family("dot")
//       .shapes({"n_4k", "n_1m"}).precisions({"f32"}).threads({1})
//       .tiers({Tier::Wrapped, Tier::Hand})
//       .add([](benchmark::State& st, const popper::bench::Case& c) {
//         ...build operands, run the tier once, check it...
//         popper::bench::measure(st, c, verdict, [&] { kernel(...); }, {.work = 2.0 * n, .bytes = 8.0 * n});
//       });
//   return popper::bench::run_suite(argc, argv, {{Tier::Hand, "cpu:avx2"}, ...});
//
// From those the framework makes the cross product and each benchmark's name
// (popper/bench_protocol.hpp: the one format the harness parses), skips a row
// with its typed verdict when the check failed, times each tier's call
// through a never-inlined function per tier (popper_bench_call_<tier>: the
// symbols the instruction gate's callgrind toggle counts), and adds the
// self-tests' injected slowdown to the hand tier.
//
// Environment read here: POPPER_BENCH_ITERATIONS=N pins the iteration count
// (the gate), POPPER_BENCH_INJECT_SLOWDOWN=f makes the hand tier do (1 + f)
// times its work (the check's self-test), POPPER_BENCH_MUTANT names a bench
// mutant (below), POPPER_BENCH_EVICT_BYTES sizes a cold row's eviction
// (popper/cache_evict.h). `--popper_machine_probe` prints what
// the instruction gate keys its baselines on and exits (machine_probe_json).
#pragma once
#include <benchmark/benchmark.h>

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "popper/bench_protocol.hpp"
#include "popper/bench_reference.hpp"
#include "popper/cache_evict.h"
#include "popper/pace.h"
#include "popper/turns.h"

namespace popper::bench {

// 0 when unset or invalid: Google Benchmark chooses the iteration count.
inline int fixed_iterations() {
  const char* v = std::getenv("POPPER_BENCH_ITERATIONS");
  if (!v || !*v) return 0;
  const long n = std::strtol(v, nullptr, 10);
  return n > 0 && n < 1000000 ? static_cast<int>(n) : 0;
}

// Fraction of extra work the hand tier must do (0 when unset or invalid).
inline double injected_slowdown() {
  const char* v = std::getenv("POPPER_BENCH_INJECT_SLOWDOWN");
  if (!v || !*v) return 0;
  const double f = std::strtod(v, nullptr);
  return f > 0 && f < 100 ? f : 0;
}

// Written by each wrapper with its own value: the bodies differ, so the
// compiler's identical-code folding cannot merge them into one symbol (which
// would make callgrind attribute every tier to one name).
inline volatile int popper_bench_last_tier = 0;

// The hand tier repeats the call whenever the injected debt reaches a whole
// call: over N calls it runs N + floor(N f) of them, work that scales with
// the kernel in every family (N = 4 or 8 gate iterations makes f = 0.25 exact).
template <class F>
[[gnu::noinline]] void popper_bench_call_hand(F& f) {
  popper_bench_last_tier = 1;
  f();
  static const double slowdown = injected_slowdown();
  static double debt = 0;
  for (debt += slowdown; debt >= 1.0; debt -= 1.0) f();
  benchmark::ClobberMemory();
}
template <class F>
[[gnu::noinline]] void popper_bench_call_wrapped(F& f) {
  popper_bench_last_tier = 2;
  f();
  benchmark::ClobberMemory();
}
template <class F>
[[gnu::noinline]] void popper_bench_call_reference(F& f) {
  popper_bench_last_tier = 3;
  f();
  benchmark::ClobberMemory();
}
template <class F>
[[gnu::noinline]] void popper_bench_call_pack(F& f) {
  popper_bench_last_tier = 4;
  f();
  benchmark::ClobberMemory();
}
template <class F>
[[gnu::noinline]] void popper_bench_call_device(F& f) {
  popper_bench_last_tier = 5;
  f();
  benchmark::ClobberMemory();
}

// One timed call of `tier`. A suite has no ceiling tier (the raw-C programs
// time it), so Ceiling times like Reference.
template <class F>
void call_tier(Tier tier, F& f) {
  switch (tier) {
    case Tier::Hand: popper_bench_call_hand(f); break;
    case Tier::Wrapped: popper_bench_call_wrapped(f); break;
    case Tier::Pack: popper_bench_call_pack(f); break;
    case Tier::Device: popper_bench_call_device(f); break;
    case Tier::Reference:
    case Tier::Ceiling: popper_bench_call_reference(f); break;
  }
}

// One point of a family's cross product.
struct Case {
  std::string family;
  Tier tier = Tier::Hand;
  int shape = 0;  // index into the family's shape axis
  std::string shape_name, precision;
  int threads = 1;
  CacheMode cache = CacheMode::Warm;
  BenchName name() const { return {family, tier, shape_name, precision, threads, cache}; }
};

// Work per call, reported as the counters the harness reads: `work` in the
// family's unit (FLOP or items), `bytes` the compulsory traffic of the roofline.
struct Work {
  double work = 0;
  double bytes = 0;
  const char* unit = "flop";  // flop | items: the family descriptor's work_unit
  // For a tier whose call returns before its work is done (a device stream,
  // worker threads it leaves running): waits until that work is done.
  // measure() times it after the timed loop; none for a call that returns done.
  std::function<void()> wait = {};
  // For a tier whose idle threads sleep (a pool that parks them after a short
  // spin): wakes them, untimed, after a cold row's eviction. The eviction
  // idles the process for milliseconds, which calls back to back over copies
  // of the operands never do, so the timed call starts as such a call does.
  // Woken is not enough where an idle core starts slower: popper's own suites
  // also keep the pool's workers spinning through the eviction, as a vendor's
  // threadpool polls through it (bench/common/cold_row_pool.hpp).
  std::function<void()> wake = {};
  // The end of what wake's tier holds awake: measure() runs it once the timed
  // loop is over, before the process hands its CPUs to the next process in
  // turns (popper/turns.h). A thread left spinning there runs on the CPUs the
  // other side of the ratio was given, and only that side's row is slowed.
  std::function<void()> rest = {};
};

// Ends a row that will not be timed: Google Benchmark reports it as an error
// whose message is the verdict's label.
inline void skip(benchmark::State& state, const Verdict& v) { state.SkipWithError(v.label.c_str()); }

// Whether a row with this verdict is timed: verified, or not verified (the
// oracle itself, or a check over budget that says what it did instead).
inline bool timeable(const Verdict& v) { return v.kind == VerdictKind::Verified || v.kind == VerdictKind::NotVerified; }

// Verification after timing: `refill(seed)` draws fresh operands into the
// buffers the timed call reads, `verify()` checks what the call then wrote.
// measure() runs both around one more call through the timed path, so a tier
// that returns a result cached from its first call, or a stale buffer, is
// caught, and the row is reported with that verdict instead of a time.
struct Recheck {
  std::function<void(std::uint64_t seed)> refill;
  std::function<Verdict()> verify;
  explicit operator bool() const { return refill && verify; }
};

// The bench mutant POPPER_BENCH_MUTANT names (bench_protocol.hpp
// kBenchMutants; None when unset), read once.
inline BenchMutant bench_mutant() {
  static const BenchMutant m = [] {
    const char* v = std::getenv("POPPER_BENCH_MUTANT");
    return v ? parse_bench_mutant(v) : BenchMutant::None;
  }();
  return m;
}

namespace detail {
// Set by measure() while the timed loop and the call after it run: the timed
// path, which is all a skipped-work fault touches (the check before timing passes).
inline thread_local bool in_timed_path = false;

// The unsynchronised-timing mutant's worker thread, a command queue: post()
// queues a call and returns; the worker runs the queued calls only when
// drain() asks for them (a synchronisation), or when kDepth are waiting (a
// full launch queue, which post() then waits on). drain() returns once every
// posted call has run. So the work of a short timed loop always outlives it.
class CallLane {
 public:
  CallLane() : worker_([this] { serve(); }) {}
  CallLane(const CallLane&) = delete;
  CallLane& operator=(const CallLane&) = delete;
  ~CallLane() {
    {
      const std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  void post(std::function<void()> f) {
    std::unique_lock<std::mutex> lock(m_);
    if (queue_.size() >= kDepth) {
      flush_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return queue_.size() < kDepth; });
    }
    queue_.push_back(std::move(f));
  }
  void drain() {
    std::unique_lock<std::mutex> lock(m_);
    flush_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
  }

 private:
  static constexpr std::size_t kDepth = 1024;
  void serve() {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || (flush_ && !queue_.empty()); });
      if (queue_.empty()) return;
      std::function<void()> f = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      f();
      lock.lock();
      busy_ = false;
      if (queue_.empty()) flush_ = false;
      cv_.notify_all();
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false, flush_ = false, stop_ = false;
  std::thread worker_;
};
inline CallLane& call_lane() {
  static CallLane lane;
  return lane;
}
// Seconds this process spent verifying after timing (run_suite prints it).
inline double recheck_seconds = 0;
// --benchmark_min_time (run_suite reads it; Google Benchmark's default).
inline double min_time_seconds = 0.5;
}  // namespace detail

// Whether this call of the case's tier is to do half its work (the
// skipped-work bench mutant, on the timed path of the hand tier only). A
// suite halves its outermost output dimension when it is true:
//   const std::size_t rows = pb::skips_work(c) ? m / 2 : m;
inline bool skips_work(const Case& c) {
  return bench_mutant() == BenchMutant::SkippedWork && c.tier == Tier::Hand && detail::in_timed_path;
}

// A timed loop of at least this fraction of the repetition's min time is a
// repetition, not one of Google Benchmark's runs that size it (which stop
// short of the min time).
inline constexpr double kTurnFraction = 0.9;

// Work that outlives its timer by more than this fraction of the timed loop
// makes the row invalid: its figure would be that much too fast.
inline constexpr double kMaxOutlivedFraction = 0.02;

// Times `call` as the case's tier when the verdict allows, else skips the
// row with the verdict. After the timed loop it waits for the work to be
// done (w.wait) and times that wait; then, given a recheck, verifies the
// tier again on fresh operands (one call more a row).
template <class F>
void measure(benchmark::State& state, const Case& c, const Verdict& v, F&& call, const Work& w,
             const Recheck& recheck = {}) {
  using Clock = std::chrono::steady_clock;
  if (!timeable(v)) return skip(state, v);
  const BenchMutant mutant = c.tier == Tier::Hand ? bench_mutant() : BenchMutant::None;
  // Under cached-result the tier computes once, then no more; under
  // unsynchronised-timing each call is handed to a worker thread.
  const bool cached = mutant == BenchMutant::CachedResult;
  const bool unsynchronised = mutant == BenchMutant::UnsynchronisedTiming;
  auto timed_call = [&] {
    if (unsynchronised) detail::call_lane().post([&call] { call(); });
    else if (!cached) call();
  };
  auto wait_for_work = [&] {
    if (unsynchronised) detail::call_lane().drain();
    if (w.wait) w.wait();
  };
  bool evicted_every_call = true;
  double timed_seconds = 0;  // what the loop's figure is made of
  // The timed loop over `f`: the plain call, or the call as the mutant under test makes it.
  auto time_loop = [&](auto& f) {
    if (c.cache == CacheMode::Cold) {
      // Each call timed alone, after the eviction (manual time: the eviction is
      // not counted). Google Benchmark sizes a repetition on the timed seconds
      // alone, so a call much shorter than the eviction would make it last
      // many times --benchmark_min_time. A repetition is therefore one
      // iteration of as many evicted calls as fill the min time, evictions
      // included (popper/cache_evict.h), as the ceilings' cold repetitions are.
      const bool keep_warm = mutant == BenchMutant::WarmUnderCold;
      const std::size_t per_call = popper_evict_bytes();
      std::size_t evicted = 0;
      long calls = 0;
      const bool fixed = fixed_iterations() > 0;  // the gate: one call an iteration, as Google Benchmark counts
      auto one_cold_call = [&] {
        if (!keep_warm) evicted += popper_evict();
        if (w.wake) w.wake();
        const auto t0 = Clock::now();
        call_tier(c.tier, f);
        const double t = std::chrono::duration<double>(Clock::now() - t0).count();
        timed_seconds += t;
        ++calls;
        return t;
      };
      for (auto _ : state) {
        if (fixed) {
          state.SetIterationTime(one_cold_call());
          continue;
        }
        const double before = timed_seconds;
        const auto start = Clock::now();
        const long calls_before = calls;
        do one_cold_call();
        while (std::chrono::duration<double>(Clock::now() - start).count() < detail::min_time_seconds);
        state.SetIterationTime((timed_seconds - before) / static_cast<double>(calls - calls_before));
      }
      evicted_every_call = evicted >= per_call * static_cast<std::size_t>(calls);
      if (!fixed) state.counters["calls"] = benchmark::Counter(static_cast<double>(calls));
    } else {
      const auto t0 = Clock::now();
      for (auto _ : state) call_tier(c.tier, f);
      timed_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    }
  };
  // The pace of a 1-thread CPU row's CPU around this repetition (popper/pace.h);
  // not under the gate's fixed iterations, which run under valgrind.
  const bool paced = c.threads == 1 && c.tier != Tier::Device && fixed_iterations() == 0;
  // A warm loop starts after one untimed call, as a ceiling's does
  // (popper/ceiling_cli.h): after the other side's turn, or the check, a
  // library's workers may be asleep and the caches hold other data. Not under
  // the cached-result mutant (its one call comes below) or the gate's counts.
  if (c.cache == CacheMode::Warm && !cached && fixed_iterations() == 0) {
    call();
    if (w.wait) w.wait();
  }
  if (paced) popper_pace_begin();
  detail::in_timed_path = true;  // through the call after timing, which goes the timed loop's way
  if (cached) call();
  const auto loop_start = Clock::now();
  if (unsynchronised || cached) time_loop(timed_call);
  else time_loop(call);
  // Google Benchmark sizes a repetition by shorter runs first; only a loop as
  // long as a repetition ends a turn, so the two sides of a ratio run in turns
  // alternate repetition by repetition (popper/turns.h).
  const bool repetition =
      std::chrono::duration<double>(Clock::now() - loop_start).count() >= kTurnFraction * detail::min_time_seconds;
  if (w.rest) w.rest();
  // A call that returns done has nothing to wait for, so it cannot outlive its
  // timer. The wait comes before the pace probe, which would give the work
  // the probe's time to finish unseen.
  double outlived = 0;
  if (unsynchronised || w.wait) {
    const auto loop_end = Clock::now();
    wait_for_work();
    outlived = std::chrono::duration<double>(Clock::now() - loop_end).count();
  }
  const double pace = paced ? popper_pace_end() : 0;
  // A thread of this process still running once the row's work is done would
  // run beside the next process in turns, on its CPUs, slowing that side of
  // the ratio alone; the turn waits for it, but only so long.
  const bool left_running = c.threads > 1 && c.tier != Tier::Device && popper_turn_wait_idle();
  if (repetition) popper_turn_yield();  // the next process in turns times its repetition now
  const auto recheck_start = Clock::now();
  if (recheck) {
    recheck.refill(0x9e3779b97f4a7c15ULL);
    timed_call();
    wait_for_work();
  }
  detail::in_timed_path = false;
  // Every call of a cold row follows a full eviction, or the row was timed warm.
  if (!evicted_every_call) return skip(state, Verdict::invalid(POPPER_NOT_EVICTED));
  if (left_running) return skip(state, Verdict::invalid(POPPER_TURN_LEFT_RUNNING));
  if (outlived > kMaxOutlivedFraction * timed_seconds) {
    char why[160];
    std::snprintf(why, sizeof why,
                  "the work outlived its timer: waiting for it after the timed loop took %.3g s, %.0f%% of the "
                  "loop's %.3g s",
                  outlived, 100.0 * outlived / std::max(timed_seconds, 1e-12), timed_seconds);
    return skip(state, Verdict::invalid(why));
  }
  if (recheck) {
    const Verdict after = recheck.verify();
    detail::recheck_seconds += std::chrono::duration<double>(Clock::now() - recheck_start).count();
    if (!after.is_verified()) {
      // A check that passed before timing and fails after it is a wrong answer the timing was taken from.
      const std::string_view why = std::string_view(after.label).substr(after.is_incorrect() ? 11 : 0);
      return skip(state, Verdict::incorrect("after timing, on fresh operands: " + std::string(why)));
    }
  }
  state.SetLabel(v.label);
  if (w.work > 0) state.counters[w.unit] = benchmark::Counter(w.work);
  if (w.bytes > 0) state.counters["bytes"] = benchmark::Counter(w.bytes);
  if (pace > 0) state.counters[kPaceCounter] = benchmark::Counter(pace);
}

// A family's axes and its per-case body; add() registers the cross product.
class Family {
 public:
  using Body = std::function<void(benchmark::State&, const Case&)>;
  using Keep = std::function<bool(const Case&)>;

  explicit Family(std::string name) : name_(std::move(name)) {}
  Family& shapes(std::vector<std::string> names) {
    shapes_ = std::move(names);
    return *this;
  }
  // The names of a workload table's shapes (any array of structs with a `name`).
  template <class Shape>
  Family& shapes(const Shape* table, int count) {
    shapes_.clear();
    for (int i = 0; i < count; ++i) shapes_.emplace_back(table[i].name);
    return *this;
  }
  Family& precisions(std::vector<std::string> p) {
    precisions_ = std::move(p);
    return *this;
  }
  Family& threads(std::vector<int> t) {
    threads_ = std::move(t);
    return *this;
  }
  Family& tiers(std::vector<Tier> t) {
    tiers_ = std::move(t);
    return *this;
  }
  // Warm only by default; a family whose kernel streams its operands once per
  // use in real work adds Cold (restrict it to some shapes with where()).
  Family& cache_modes(std::vector<CacheMode> m) {
    cache_modes_ = std::move(m);
    return *this;
  }
  // Only the cases `keep` accepts are registered (a reference tier on small shapes only).
  Family& where(Keep keep) {
    keep_ = std::move(keep);
    return *this;
  }
  Family& unit(benchmark::TimeUnit u) {
    unit_ = u;
    return *this;
  }
  // The body times each iteration itself (state.SetIterationTime: device events).
  Family& manual_time() {
    manual_time_ = true;
    return *this;
  }

  // Registers shape-major, then tier, precision, threads and cache mode: the order the
  // suites always ran in.
  std::vector<Case> cases() const {
    std::vector<Case> out;
    for (std::size_t s = 0; s < shapes_.size(); ++s)
      for (Tier t : tiers_)
        for (const std::string& p : precisions_)
          for (int n : threads_)
            for (CacheMode m : cache_modes_) {
              Case c{name_, t, static_cast<int>(s), shapes_[s], p, n, m};
              if (!keep_ || keep_(c)) out.push_back(std::move(c));
            }
    return out;
  }

  void add(const Body& body) const {
    const int iterations = fixed_iterations();
    for (Case& c : cases()) {
      const std::string name = format_bench_name(c.name());
      auto* b = benchmark::RegisterBenchmark(name.c_str(), [body, c](benchmark::State& st) { body(st, c); });
      if (manual_time_ || c.cache == CacheMode::Cold) b->UseManualTime();
      else b->UseRealTime();
      b->Unit(unit_);
      if (iterations > 0) b->Iterations(iterations);
      else if (c.cache == CacheMode::Cold) b->Iterations(1);  // measure() fills the repetition itself
    }
  }

 private:
  std::string name_;
  std::vector<std::string> shapes_, precisions_;
  std::vector<int> threads_{1};
  std::vector<Tier> tiers_;
  std::vector<CacheMode> cache_modes_{CacheMode::Warm};
  Keep keep_;
  benchmark::TimeUnit unit_ = benchmark::kMillisecond;
  bool manual_time_ = false;
};

// Freed memory stays in the process: no allocation is a private mmap, and the
// heap is never trimmed. Google Benchmark calls a benchmark again for every
// repetition and sizing run, so a suite that frees its operands between
// timed loops would, on a VM that hands freed pages back to its host, time
// the first calls after re-faulting them (a 75 MB operand: 130 ms instead of
// 3). The ceiling programs do the same (ceiling_open).
inline void keep_freed_memory() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
}

// The backend a tier's rows ran on, as the suite reports it ("openblas:Haswell", "cpu:avx2").
struct TierBackend {
  Tier tier;
  std::string backend;
};

// The end of every suite's main: each tier's backend goes into the JSON
// context as popper_backend_<tier>, then Google Benchmark runs what the suite
// registered. Returns main's exit code.
}  // namespace popper::bench

// OpenBLAS's kernel set when the suite links OpenBLAS (weak: null otherwise).
extern "C" char* openblas_get_corename(void) __attribute__((weak));
extern "C" char* openblas_get_config(void) __attribute__((weak));

namespace popper::bench {

// One JSON line: the widest x86 vector path this CPU (under valgrind, the one
// valgrind presents) runs, the cache sizes, and OpenBLAS's kernel set when
// linked. The gate's key for a project's family (popper's own tree asks its
// dispatch probe, which adds its kernels' own dispatch).
inline std::string machine_probe_json() {
  const char* isa = "scalar";
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    isa = "avx512";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) isa = "avx2";
#endif
  auto quoted = [](const char* s) {
    std::string out = "\"";
    for (const char* p = s ? s : ""; *p; ++p) {
      if (*p == '"' || *p == '\\') out += '\\';
      if (static_cast<unsigned char>(*p) >= 0x20) out += *p;
    }
    return out + "\"";
  };
  auto cache = [](int name) { return std::to_string(std::max(0L, ::sysconf(name))); };
  return std::string("{\"cpu_isa\":\"") + isa + "\",\"caches\":\"l1d=" + cache(_SC_LEVEL1_DCACHE_SIZE) +
         ",l2=" + cache(_SC_LEVEL2_CACHE_SIZE) + ",l3=" + cache(_SC_LEVEL3_CACHE_SIZE) +
         "\",\"openblas_core\":" + quoted(openblas_get_corename ? openblas_get_corename() : "none") +
         ",\"openblas_config\":" + quoted(openblas_get_config ? openblas_get_config() : "") + "}";
}

inline int run_suite(int argc, char** argv, std::initializer_list<TierBackend> backends) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--popper_machine_probe") {
      std::printf("%s\n", machine_probe_json().c_str());
      return 0;
    }
  for (const TierBackend& b : backends)
    benchmark::AddCustomContext(std::string("popper_backend_").append(to_string(b.tier)), b.backend);
  keep_freed_memory();
  for (int i = 1; i < argc; ++i)
    if (const std::string_view a = argv[i]; a.starts_with("--benchmark_min_time=")) {
      const double t = std::strtod(argv[i] + std::strlen("--benchmark_min_time="), nullptr);
      if (t > 0) detail::min_time_seconds = t;
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  popper_turn_yield();  // set up and started: wait for this process's first turn
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::fprintf(stderr, "%s%.6f s\n", kRecheckSecondsLine, detail::recheck_seconds);
  return 0;
}

}  // namespace popper::bench
