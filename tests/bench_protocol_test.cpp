// The bench protocol (popper/bench_protocol.hpp) and the suite API's cross
// product (popper/bench.hpp): names and verdicts written and read in one place.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "popper/bench.hpp"
#include "popper/bench_protocol.hpp"

namespace pb = popper::bench;

TEST(BenchProtocol, EveryTierNameRoundTrips) {
  std::set<std::string> names;
  for (pb::Tier t : pb::kTiers) {
    const std::string_view name = pb::to_string(t);
    EXPECT_NE(name, "?");
    EXPECT_TRUE(names.insert(std::string(name)).second) << name << " names two tiers";
    EXPECT_EQ(pb::parse_tier(name), t);
  }
  EXPECT_FALSE(pb::parse_tier("Hand"));
  EXPECT_FALSE(pb::parse_tier(""));
  EXPECT_EQ(pb::tier_names(), "ceiling, wrapped, hand, reference, pack, device");
}

TEST(BenchProtocol, BenchNamesRoundTripForEveryTier) {
  for (pb::Tier t : pb::kTiers)
    for (int threads : {1, 2, 16})
      for (pb::CacheMode m : {pb::CacheMode::Warm, pb::CacheMode::Cold}) {
        const pb::BenchName n{"gemm", t, "small_64", "f32", threads, m};
        const std::string text = pb::format_bench_name(n);
        const auto back = pb::parse_bench_name(text);
        ASSERT_TRUE(back) << text;
        EXPECT_EQ(*back, n) << text;
        // Google Benchmark appends its own parts; they are not the protocol's.
        EXPECT_EQ(pb::parse_bench_name(text + "/iterations:4/real_time"), n);
        EXPECT_EQ(pb::parse_bench_name(text + "/manual_time"), n);
      }
  // A warm row's name is the name rows had before cache modes: baselines keep matching.
  EXPECT_EQ(pb::format_bench_name({"q4k", pb::Tier::Hand, "big_32768x4096", "q4k", 2}),
            "q4k/hand/big_32768x4096/q4k/threads:2");
  EXPECT_EQ(pb::format_bench_name({"q4k", pb::Tier::Hand, "big_32768x4096", "q4k", 2, pb::CacheMode::Cold}),
            "q4k/hand/big_32768x4096/q4k/threads:2/cold");
  EXPECT_EQ(pb::parse_bench_name("q4k/hand/big/q4k/threads:2/warm")->cache, pb::CacheMode::Warm);
}

TEST(BenchProtocol, MalformedNamesAreNotProtocolRows) {
  for (const char* bad :
       {"gemm/hand/square_1k/f32", "gemm/hand/square_1k/f32/threads:x", "gemm/hand/square_1k/f32/threads:0",
        "gemm/hand/square_1k/f32/threads:-1", "gemm/hand/square_1k/f32/threads:2x",
        "gemm/turbo/square_1k/f32/threads:1", "gemm//square_1k/f32/threads:1", "/hand/square_1k/f32/threads:1",
        "gemm/hand/square_1k/f32/extra/threads:1", "gemm/hand/square_1k/f32/threads:1/tepid",
        "gemm/hand/square_1k/f32/cold/threads:1", "train_trace/span", ""})
    EXPECT_FALSE(pb::parse_bench_name(bad)) << bad;
}

TEST(BenchProtocol, VerdictLabelsReadBackAsTheirKind) {
  const pb::Verdict made[] = {pb::Verdict::verified(),
                              pb::Verdict::verified("sampled 256"),
                              pb::Verdict::incorrect("max err 1e-3 > bound 1e-6"),
                              pb::Verdict::incorrect("max relative error", 2e-9, 1e-10),
                              pb::Verdict::invalid("read at 150% of the bound"),
                              pb::Verdict::not_run("no usable CUDA device"),
                              pb::Verdict::not_verified("the reference is the oracle")};
  for (const pb::Verdict& v : made) EXPECT_EQ(pb::Verdict::parse(v.label), v) << v.label;
  EXPECT_EQ(pb::Verdict::verified("sampled 256").label, "verified(sampled 256)");
  EXPECT_EQ(pb::Verdict::incorrect("max relative error", 2e-9, 1e-10).label,
            "incorrect: max relative error 2e-09 > 1e-10");
  EXPECT_TRUE(pb::Verdict::parse("incorrect: x").failed());
  EXPECT_TRUE(pb::Verdict::parse("invalid: x").failed());
  EXPECT_FALSE(pb::Verdict::parse("not_run: x").failed());
  EXPECT_EQ(pb::Verdict::parse("not_verified: no oracle").kind, pb::VerdictKind::NotVerified);
}

TEST(BenchProtocol, ErrorMessagesReadAsNotRunOnlyWhenTheySaySo) {
  // CUTLASS's declines are not wrong answers.
  for (const char* declined : {"not_run: no device", "not_supported: sm_70", "invalid_problem: k = 0"})
    EXPECT_EQ(pb::Verdict::parse(declined, true).kind, pb::VerdictKind::NotRun) << declined;
  // Any other skip message is a wrong answer, prefixed once.
  EXPECT_EQ(pb::Verdict::parse("threw bad_alloc", true).label, "incorrect: threw bad_alloc");
  EXPECT_EQ(pb::Verdict::parse("incorrect: cosine 0.2", true).label, "incorrect: cosine 0.2");
  EXPECT_EQ(pb::Verdict::parse("verified", true).kind, pb::VerdictKind::Incorrect);
}

TEST(BenchApi, FamilyRegistersTheCrossProductItKeeps) {
  const auto cases = pb::Family("dot")
                         .shapes({"n_4k", "n_1m"})
                         .precisions({"f32", "f64"})
                         .threads({1, 2})
                         .tiers({pb::Tier::Wrapped, pb::Tier::Hand, pb::Tier::Reference})
                         .where([](const pb::Case& c) { return c.tier != pb::Tier::Reference || c.threads == 1; })
                         .cases();
  // 2 shapes x (2 tiers x 2 precisions x 2 threads + the reference's 2 precisions x 1 thread).
  ASSERT_EQ(cases.size(), 2u * (2 * 2 * 2 + 2));
  std::set<std::string> names;
  for (const auto& c : cases) {
    const std::string name = pb::format_bench_name(c.name());
    EXPECT_TRUE(names.insert(name).second) << name << " registered twice";
    EXPECT_EQ(pb::parse_bench_name(name), c.name());
  }
  // Shape-major: every case of the first shape before the second's.
  EXPECT_EQ(cases.front().shape_name, "n_4k");
  EXPECT_EQ(cases.front().shape, 0);
  EXPECT_EQ(cases.back().shape_name, "n_1m");
  EXPECT_EQ(cases.back().shape, 1);
  EXPECT_TRUE(names.count("dot/reference/n_1m/f64/threads:1"));
  EXPECT_FALSE(names.count("dot/reference/n_1m/f64/threads:2"));
}

TEST(BenchApi, CacheModesAreAnAxisOfTheCrossProduct) {
  const auto cases = pb::Family("dot")
                         .shapes({"n_4k", "n_1m"})
                         .precisions({"f32"})
                         .tiers({pb::Tier::Hand})
                         .cache_modes({pb::CacheMode::Warm, pb::CacheMode::Cold})
                         .where([](const pb::Case& c) { return c.cache == pb::CacheMode::Warm || c.shape == 1; })
                         .cases();
  std::vector<std::string> names;
  for (const auto& c : cases) names.push_back(pb::format_bench_name(c.name()));
  EXPECT_EQ(names, (std::vector<std::string>{"dot/hand/n_4k/f32/threads:1", "dot/hand/n_1m/f32/threads:1",
                                             "dot/hand/n_1m/f32/threads:1/cold"}));
}

TEST(BenchApi, TimeableVerdicts) {
  EXPECT_TRUE(pb::timeable(pb::Verdict::verified()));
  EXPECT_TRUE(pb::timeable(pb::Verdict::not_verified("oracle")));
  EXPECT_FALSE(pb::timeable(pb::Verdict::incorrect("x")));
  EXPECT_FALSE(pb::timeable(pb::Verdict::invalid("x")));
  EXPECT_FALSE(pb::timeable(pb::Verdict::not_run("x")));
}

TEST(BenchProtocol, EveryBenchMutantNameRoundTrips) {
  for (const auto& m : pb::kBenchMutants) {
    EXPECT_EQ(pb::parse_bench_mutant(m.name), m.id) << m.name;
    EXPECT_NE(m.id, pb::BenchMutant::None);
    // A label the guarding check writes is one the harness reads back as a failed row.
    EXPECT_TRUE(pb::Verdict::parse(m.caught_by, true).failed()) << m.caught_by;
  }
  EXPECT_EQ(pb::parse_bench_mutant(""), pb::BenchMutant::None);
  EXPECT_EQ(pb::parse_bench_mutant("cached"), pb::BenchMutant::None);
}

namespace {
// --benchmark_min_time for measure()'s cold repetitions while it lives.
class ScopedMinTime {
 public:
  explicit ScopedMinTime(double seconds) : saved_(pb::detail::min_time_seconds) {
    pb::detail::min_time_seconds = seconds;
  }
  ~ScopedMinTime() { pb::detail::min_time_seconds = saved_; }
  ScopedMinTime(const ScopedMinTime&) = delete;
  ScopedMinTime& operator=(const ScopedMinTime&) = delete;

 private:
  double saved_;
};

// Runs `body` as one registered benchmark of 4 iterations and returns its error message ("" when timed);
// `counters`, when given, receives the run's counters.
std::string run_one(const std::string& name, std::function<void(benchmark::State&)> body,
                    std::map<std::string, double>* counters = nullptr) {
  struct Capture : benchmark::BenchmarkReporter {
    std::string error;
    std::map<std::string, double> counters;
    bool ran = false;
    bool ReportContext(const Context&) override { return true; }
    void ReportRuns(const std::vector<Run>& runs) override {
      for (const auto& r : runs) {
        ran = true;
        if (r.error_occurred) error = r.error_message;
        for (const auto& [k, v] : r.counters) counters[k] = v.value;
      }
    }
  } capture;
  benchmark::RegisterBenchmark(name.c_str(), [body](benchmark::State& st) { body(st); })->Iterations(4);
  benchmark::RunSpecifiedBenchmarks(&capture, "^" + name + "/");
  benchmark::ClearRegisteredBenchmarks();
  EXPECT_TRUE(capture.ran) << name;
  if (counters) *counters = capture.counters;
  return capture.error;
}
}  // namespace

// A tier whose call hands its work to another thread returns before the work
// is done. Given its wait, measure() times the wait after the timed loop and
// reports the row invalid; the same tier waiting inside its call is timed.
TEST(BenchApi, WorkThatOutlivesItsTimerMakesTheRowInvalid) {
  // Unsynchronised, each call takes 5 ms and leaves work that ends a tenth of
  // the loop so far after the call returns (at least 3 ms), however long a
  // loaded or emulated machine takes to start its thread: five times the 2%
  // allowed, yet within the 7 ms pace probe that follows a native 1-thread
  // loop. Synchronised, each call waits for 100 ms of work, so the 2% of its
  // loop (8 ms) holds a preemption on a loaded 2-core runner.
  using Clock = std::chrono::steady_clock;
  auto row = [](bool waits_inside_the_call) {
    return [waits_inside_the_call](benchmark::State& st) {
      std::vector<std::future<void>> pending;
      Clock::time_point first_call{};
      pb::Case c;
      c.family = "async";
      pb::Work w{.work = 1, .bytes = 0, .unit = "items", .wait = [&] {
                   for (auto& f : pending) f.wait();
                   pending.clear();
                 }};
      pb::measure(
          st, c, pb::Verdict::verified(),
          [&] {
            if (first_call == Clock::time_point{}) first_call = Clock::now();
            std::promise<Clock::time_point> returned;
            pending.push_back(std::async(
                std::launch::async, [at = returned.get_future(), start = first_call, waits_inside_the_call]() mutable {
                  using std::chrono::milliseconds;
                  const Clock::time_point t = at.get();
                  const Clock::duration lasts = waits_inside_the_call
                                                    ? milliseconds(100)
                                                    : std::max<Clock::duration>((t - start) / 10, milliseconds(3));
                  std::this_thread::sleep_until(t + lasts);
                }));
            if (!waits_inside_the_call) std::this_thread::sleep_for(std::chrono::milliseconds(5));
            returned.set_value(Clock::now());
            if (waits_inside_the_call) w.wait();
          },
          w);
    };
  };
  const std::string unsynchronised = run_one("async/unsynchronised", row(false));
  EXPECT_TRUE(unsynchronised.starts_with("invalid: the work outlived its timer")) << unsynchronised;
  EXPECT_EQ(run_one("async/synchronised", row(true)), "");
}

// A cold row's eviction idles the process, so a tier that parks its threads
// gives a wake: measure() runs it after every eviction, before every timed
// call, and the warm loop never.
TEST(BenchApi, ColdRowsWakeTheTierBeforeEveryCall) {
  auto row = [](pb::CacheMode cache, int& wakes, int& calls_after_a_wake, int& calls) {
    return [cache, &wakes, &calls_after_a_wake, &calls](benchmark::State& st) {
      bool woken = false;
      pb::Case c;
      c.family = "wake";
      c.cache = cache;
      pb::Work w{.work = 1, .bytes = 0, .unit = "items", .wake = [&] {
                   ++wakes;
                   woken = true;
                 }};
      pb::measure(
          st, c, pb::Verdict::verified(),
          [&] {
            ++calls;
            if (woken) ++calls_after_a_wake;
            woken = false;
          },
          w);
    };
  };
  int wakes = 0, after = 0, calls = 0;
  {
    const ScopedMinTime short_repetitions(0.01);  // each of the 4 iterations is a repetition of cold calls
    EXPECT_EQ(run_one("wake/cold", row(pb::CacheMode::Cold, wakes, after, calls)), "");
  }
  EXPECT_GT(calls, 0);
  EXPECT_EQ(wakes, calls);
  EXPECT_EQ(after, calls);
  wakes = after = calls = 0;
  EXPECT_EQ(run_one("wake/warm", row(pb::CacheMode::Warm, wakes, after, calls)), "");
  EXPECT_GT(calls, 0);
  EXPECT_EQ(wakes, 0);
}

// A tier's workers held awake for a cold row (Work::rest) go back to sleep
// once the timed loop ends: before the recheck, and so before the turn ends
// (the yield sits between the two), never while a timed call is still to come.
TEST(BenchApi, ColdRowsRestTheTierBeforeTheTurnEnds) {
  int measures = 0, rests = 0;
  bool rested = false, refilled = false, called_after_rest = false, refilled_before_rest = false;
  auto row = [&](benchmark::State& st) {
    ++measures;
    rested = refilled = false;
    pb::Case c;
    c.family = "rest";
    c.cache = pb::CacheMode::Cold;
    pb::Recheck recheck;
    recheck.refill = [&](std::uint64_t) {
      refilled_before_rest |= !rested;
      refilled = true;
    };
    recheck.verify = [] { return pb::Verdict::verified(); };
    pb::measure(
        st, c, pb::Verdict::verified(), [&] { called_after_rest |= rested && !refilled; },
        {.work = 1,
         .unit = "items",
         .wake = [] {},
         .rest =
             [&] {
               ++rests;
               rested = true;
             }},
        recheck);
  };
  const ScopedMinTime short_repetitions(0.01);
  EXPECT_EQ(run_one("rest/cold", row), "");
  EXPECT_GT(measures, 0);
  EXPECT_EQ(rests, measures);
  EXPECT_FALSE(called_after_rest);
  EXPECT_FALSE(refilled_before_rest);
}

// A row on several threads that leaves one of its process's threads running
// after its work is done (a pool held spinning) is invalid: in turns that
// thread would run beside the other side's repetition. One whose threads
// sleep is timed.
TEST(BenchApi, ThreadsLeftRunningAfterTheLoopMakeTheRowInvalid) {
  auto row = [](bool keep_spinning) {
    return [keep_spinning](benchmark::State& st) {
      std::atomic<bool> stop{false};
      std::thread helper([&] {
        while (keep_spinning && !stop.load()) {
        }
      });
      pb::Case c;
      c.family = "left";
      c.threads = 2;
      pb::measure(st, c, pb::Verdict::verified(), [] {}, {.work = 1, .unit = "items"});
      stop = true;
      helper.join();
    };
  };
  EXPECT_TRUE(run_one("left/spinning", row(true)).starts_with("invalid: a thread of this process still ran"));
  EXPECT_EQ(run_one("left/asleep", row(false)), "");
}

// Google Benchmark sizes a repetition on the timed seconds, which leave out
// a cold row's evictions: a call far shorter than its eviction would make a
// repetition last thousands of evictions. A cold repetition is instead one
// iteration of the evicted calls that fill the min time, evictions included.
TEST(BenchApi, ColdRepetitionsLastTheMinTimeEvictionsIncluded) {
  int calls = 0;
  pb::Family("coldsize")
      .shapes({"s"})
      .precisions({"f32"})
      .tiers({pb::Tier::Hand})
      .cache_modes({pb::CacheMode::Cold})
      .add([&calls](benchmark::State& st, const pb::Case& c) {
        pb::measure(
            st, c, pb::Verdict::verified(), [&calls] { ++calls; }, pb::Work{.work = 1, .unit = "items"});
      });
  struct Capture : benchmark::BenchmarkReporter {
    std::vector<Run> runs;
    bool ReportContext(const Context&) override { return true; }
    void ReportRuns(const std::vector<Run>& r) override { runs.insert(runs.end(), r.begin(), r.end()); }
  } capture;
  // The eviction buffer's first touch (its page faults) is made first, and
  // the repetition lasts five evictions at least: one eviction is 512 MiB on
  // a host that reports a 260 MiB L3, and a 200 ms repetition held a single
  // call there while another test streamed memory beside it.
  popper_evict();
  const auto e0 = std::chrono::steady_clock::now();
  popper_evict();
  const double evict_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - e0).count();
  const double repetition_seconds = std::max(0.2, 5 * evict_seconds);
  const auto t0 = std::chrono::steady_clock::now();
  {
    const ScopedMinTime min_time(repetition_seconds);
    benchmark::RunSpecifiedBenchmarks(&capture, "^coldsize/");
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  benchmark::ClearRegisteredBenchmarks();
  ASSERT_EQ(capture.runs.size(), 1u);
  const auto& run = capture.runs[0];
  EXPECT_FALSE(run.error_occurred) << run.error_message;
  EXPECT_EQ(run.iterations, 1);
  EXPECT_GE(calls, 2) << "a repetition of five evictions' time holds more than one eviction (one took " << evict_seconds
                      << " s)";
  EXPECT_EQ(run.counters.at("calls").value, calls);
  // Sized on timed seconds alone, the empty calls would run until Google
  // Benchmark's iteration cap: hours of evictions.
  EXPECT_LT(wall, 30.0) << "seconds for a repetition of " << repetition_seconds << " s";
}

// A core's private caches keep its last reads whatever another core reads
// (a non-inclusive last-level cache), so a cold row's eviction reads on every
// CPU the row's process may use, and on no other.
TEST(BenchApi, ColdEvictionReadsOnEveryCpuOfTheProcess) {
  cpu_set_t all;
  ASSERT_EQ(::sched_getaffinity(0, sizeof all, &all), 0);
  const int cpus = CPU_COUNT(&all);
  if (cpus < 2) GTEST_SKIP() << "requires 2 CPUs: this process may use " << cpus;
  popper_evict();
  EXPECT_EQ(*popper_evict_other_cpus_read(), std::min(cpus - 1, 64));
  // Pinned to one CPU, as a 1-thread row is: no other CPU reads.
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(::sched_getcpu(), &one);
  ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
  popper_evict();
  EXPECT_EQ(*popper_evict_other_cpus_read(), 0);
  ASSERT_EQ(::sched_setaffinity(0, sizeof all, &all), 0);
}

// A 1-thread CPU row carries the pace probed around each repetition (its
// process runs on one CPU, the probe's); a row on more threads, a device row
// and a row under the gate's fixed iterations (valgrind) carry none.
TEST(BenchApi, OneThreadRowsCarryThePaceAroundEachRepetition) {
  auto row = [](pb::Tier tier, int threads) {
    return [tier, threads](benchmark::State& st) {
      pb::Case c;
      c.family = "paced";
      c.tier = tier;
      c.threads = threads;
      pb::measure(
          st, c, pb::Verdict::verified(), [] {}, pb::Work{.work = 1, .bytes = 0, .unit = "items"});
    };
  };
  std::map<std::string, double> counters;
  EXPECT_EQ(run_one("paced/one", row(pb::Tier::Hand, 1), &counters), "");
  EXPECT_GT(counters[pb::kPaceCounter], 0);
  EXPECT_LT(counters[pb::kPaceCounter], 10) << "seconds";
  EXPECT_EQ(run_one("paced/two", row(pb::Tier::Hand, 2), &counters), "");
  EXPECT_EQ(counters.count(pb::kPaceCounter), 0u);
  EXPECT_EQ(run_one("paced/device", row(pb::Tier::Device, 1), &counters), "");
  EXPECT_EQ(counters.count(pb::kPaceCounter), 0u);
  ::setenv("POPPER_BENCH_ITERATIONS", "4", 1);
  EXPECT_EQ(run_one("paced/gate", row(pb::Tier::Hand, 1), &counters), "");
  ::unsetenv("POPPER_BENCH_ITERATIONS");
  EXPECT_EQ(counters.count(pb::kPaceCounter), 0u);
}
