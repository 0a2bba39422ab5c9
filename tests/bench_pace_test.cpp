// The pace probe around a run's processes (pace.hpp): which processes ran on
// a slow CPU, and what a ratio sets aside. How claims use it is pinned in
// bench_claims_test.cpp (ARatioSetsAsideTrialsInWhichOneSideRanOnASlowCpu).
#include "bench/pace.hpp"
#include "popper/pace.h"

#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <iterator>
#include <thread>

#include "bench/ingest.hpp"
#include "bench/placement.hpp"

namespace pb = popper::bench;

namespace {

pb::BenchRow row(pb::Tier tier, int threads, const std::map<int, double>& pace) {
  pb::BenchRow r;
  r.key = {"gemm", tier, "cpu", "a", "f64", threads, "warm"};
  for (const auto& [trial, s] : pace) {
    r.samples.push_back(trial + 1.0);
    r.trials.push_back(trial);
  }
  r.pace = pace;
  return r;
}

}  // namespace

TEST(BenchPace, SlowIsOverTheFastestPaceOnAsManyCpus) {
  pb::BenchTable t;
  t.rows = {row(pb::Tier::Hand, 1, {{0, 2e-3}, {1, 2.5e-3}}), row(pb::Tier::Ceiling, 1, {{0, 2.3e-3}, {1, 2.41e-3}}),
            row(pb::Tier::Hand, 2, {{0, 3e-3}, {1, 4e-3}})};
  const auto fastest = pb::fastest_pace(t);
  EXPECT_EQ(fastest, (std::map<int, double>{{1, 2e-3}, {2, 3e-3}}));
  EXPECT_TRUE(pb::ran_slow(t.rows[0], 1, fastest));   // 1.25x
  EXPECT_FALSE(pb::ran_slow(t.rows[1], 0, fastest));  // 1.15x
  EXPECT_TRUE(pb::ran_slow(t.rows[1], 1, fastest));   // 1.205x
  EXPECT_FALSE(pb::ran_slow(t.rows[2], 0, fastest));  // the 2-CPU floor itself, 1.5x the 1-CPU one
  EXPECT_TRUE(pb::ran_slow(t.rows[2], 1, fastest));   // 1.33x of the 2-CPU floor
  EXPECT_FALSE(pb::ran_slow(t.rows[2], 7, fastest));  // no such trial: unknown is not slow
  EXPECT_FALSE(pb::ran_slow(row(pb::Tier::Hand, 4, {}), 0, fastest));
}

TEST(BenchPace, MixedTrialsAreSharedTrialsWithOneSideSlow) {
  const std::map<int, double> fastest{{1, 2e-3}};
  const auto a = row(pb::Tier::Wrapped, 1, {{0, 3e-3}, {1, 3e-3}, {2, 2e-3}, {3, 2e-3}, {4, 3e-3}});
  const auto b = row(pb::Tier::Ceiling, 1, {{0, 3e-3}, {1, 2e-3}, {2, 3e-3}, {3, 2e-3}});
  EXPECT_EQ(pb::mixed_pace_trials(a, b, fastest), (std::set<int>{1, 2}));  // 4: not shared
  const auto kept = pb::without_trials(a, {1, 2});
  EXPECT_EQ(kept.trials, (std::vector<int>{0, 3, 4}));
  EXPECT_EQ(kept.samples, (std::vector<double>{1, 4, 5}));
  EXPECT_EQ(kept.pace.size(), 3u);
}

TEST(BenchPace, MergingRowsKeepsEveryTrialsPace) {
  std::vector<pb::BenchRow> rows = {row(pb::Tier::Hand, 1, {{0, 2e-3}})};
  auto later = row(pb::Tier::Hand, 1, {{5, 3e-3}});
  later.sample_pace = {2.5e-3};
  later.link = {{5, 6e-8}};
  rows[0].read = {{0, 20e9}}, rows[0].read_bound = 20e9;  // each process's read probe too
  later.read = {{5, 30e9}}, later.read_bound = 30e9;
  pb::merge_rows(rows, {later});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].pace, (std::map<int, double>{{0, 2e-3}, {5, 3e-3}}));
  EXPECT_EQ(rows[0].link, (std::map<int, double>{{5, 6e-8}}));
  EXPECT_EQ(rows[0].read, (std::map<int, double>{{0, 20e9}, {5, 30e9}}));
  EXPECT_EQ(rows[0].read_bound, 30e9);  // the fastest of them, not the first trial's
  EXPECT_EQ(pb::without_trials(rows[0], {0}).read, (std::map<int, double>{{5, 30e9}}));
  EXPECT_EQ(rows[0].sample_pace, (std::vector<double>{0, 2.5e-3}));
  EXPECT_EQ(pb::without_trials(rows[0], {0}).sample_pace, (std::vector<double>{2.5e-3}));
}

TEST(BenchPace, TheSummaryAndTheCsvNameTheSlowProcesses) {
  pb::BenchTable t;
  EXPECT_EQ(pb::pace_summary(t), "");
  t.rows = {row(pb::Tier::Hand, 1, {{0, 2e-3}, {1, 3e-3}}), row(pb::Tier::Ceiling, 1, {{0, 2.1e-3}})};
  EXPECT_EQ(pb::pace_summary(t), "1 thread: fastest 2.00 ms; slow (over 1.2x) in ceiling 0 of 1, hand 1 of 2");
  auto f32 = t.rows[1];  // the same ceiling process's other precision: one process
  f32.key.precision = "f32";
  t.rows.push_back(f32);
  EXPECT_EQ(pb::pace_summary(t), "1 thread: fastest 2.00 ms; slow (over 1.2x) in ceiling 0 of 1, hand 1 of 2");
  t.rows.pop_back();
  EXPECT_EQ(pb::pace_csv(t),
            "row,trial,pace_seconds,median_seconds,slow,repetition_pace_seconds,repetition_seconds,link_seconds,far,"
            "read_gbs\n"
            "gemm/hand/cpu/a/f64/threads:1/warm,0,0.002,1,no,,,0,no,0\n"
            "gemm/hand/cpu/a/f64/threads:1/warm,1,0.003,2,yes,,,0,no,0\n"
            "gemm/ceiling/cpu/a/f64/threads:1/warm,0,0.0021,1,no,,,0,no,0\n");
  t.rows[1].sample_pace = {2.6e-3};
  EXPECT_EQ(pb::pace_summary(t),
            "1 thread: fastest 2.00 ms; slow (over 1.2x) in ceiling 0 of 1, hand 1 of 2; repetitions probed in their "
            "process: slow (over 1.2x) in 1 of 1");
  // Its every probed repetition ran slow: the trial is slow, as the claims judge it (steady_samples).
  EXPECT_NE(pb::pace_csv(t).find("gemm/ceiling/cpu/a/f64/threads:1/warm,0,0.0021,1,yes,0.0026,1,0,no,0\n"),
            std::string::npos);
  // In turns no process is probed around, only its repetitions: both still say which ran slow.
  auto turns = row(pb::Tier::Wrapped, 1, {});
  turns.samples = {1, 2, 3}, turns.trials = {0, 0, 1}, turns.sample_pace = {2e-3, 3e-3, 2.9e-3};
  t.rows = {turns};
  EXPECT_EQ(pb::pace_summary(t),
            "1 thread: fastest 2.00 ms; repetitions probed in their process: slow (over 1.2x) in 2 of 3");
  EXPECT_EQ(pb::pace_csv(t),
            "row,trial,pace_seconds,median_seconds,slow,repetition_pace_seconds,repetition_seconds,link_seconds,far,"
            "read_gbs\n"
            "gemm/wrapped/cpu/a/f64/threads:1/warm,0,0,1.5,no,0.002;0.003,1;2,0,no,0\n"
            "gemm/wrapped/cpu/a/f64/threads:1/warm,1,0,3,yes,0.0029,3,0,no,0\n");
  // On two CPUs, the link too: the wrapped process of trial 1 ran with its CPUs far apart.
  auto two = row(pb::Tier::Wrapped, 2, {{0, 3e-3}, {1, 3e-3}});
  two.link = {{0, 6e-8}, {1, 3.3e-7}};
  two.read = {{1, 25.5e9}};  // and the read its suite probed there, where it probed one
  t.rows = {two};
  EXPECT_EQ(pb::pace_summary(t),
            "2 threads: fastest 3.00 ms; slow (over 1.2x) in wrapped 0 of 2; link closest 0.060 us; far (over 2x) in "
            "wrapped 1 of 2");
  EXPECT_NE(pb::pace_csv(t).find("gemm/wrapped/cpu/a/f64/threads:2/warm,1,0.003,2,no,,,3.3e-07,yes,25.5\n"),
            std::string::npos);
}

// The link (pace.hpp): a cache line's round trip between a process's CPUs.
// The 2-vCPU Zen 4 guest's vCPUs sat on one CCD of the host (51-79 ns) or on
// two (312-382 ns), switching every few seconds, and OpenBLAS's 2-thread GEMM
// took twice as long in the second placement.
TEST(BenchPace, TheLinkIsARoundTripBetweenTheProcesssCpus) {
  EXPECT_EQ(pb::measure_link({::sched_getcpu()}), 0.0);  // one CPU: no link
  EXPECT_LT(pb::measure_link({::sched_getcpu(), CPU_SETSIZE - 1}), 0.0) << "a CPU no thread can be pinned to";
  cpu_set_t all;
  ASSERT_EQ(::sched_getaffinity(0, sizeof all, &all), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &all)) cpus.push_back(c);
  if (cpus.size() < 2) GTEST_SKIP() << "requires 2 CPUs: this process may use " << cpus.size();
  const double s = pb::measure_link(cpus);
  EXPECT_GT(s, 0.0);
  EXPECT_LT(s, 1e-3) << "a round trip of one cache line between two CPUs, in seconds";
}

// A process the device times (family.hpp's host_timed) is not probed: its pace and link are unknown.
TEST(BenchPace, AMeterThatDoesNotProbeReadsUnknown) {
  const pb::PaceMeter none({::sched_getcpu()}, false);
  EXPECT_LT(none.seconds(), 0.0);
  EXPECT_LT(none.link_seconds(), 0.0);
  EXPECT_GT(pb::PaceMeter({::sched_getcpu()}).seconds(), 0.0);
}

TEST(BenchPace, FarIsOverTwiceTheClosestLinkAndATrialsSidesDifferingTwiceAreSetAside) {
  auto a = row(pb::Tier::Wrapped, 2, {{0, 3e-3}, {1, 3e-3}, {2, 3e-3}, {3, 3e-3}, {4, 3e-3}});
  auto b = row(pb::Tier::Ceiling, 2, {{0, 3e-3}, {1, 3e-3}, {2, 3e-3}, {3, 3e-3}, {4, 3e-3}});
  a.link = {{0, 6e-8}, {1, 3.3e-7}, {2, 1e-7}, {3, 3.1e-7}, {4, 6.2e-8}};
  b.link = {{0, 5.5e-8}, {1, 6e-8}, {2, 3.2e-7}, {3, 3.4e-7}};  // trial 4: no link on b's side
  pb::BenchTable t;
  t.rows = {a, b, row(pb::Tier::Hand, 1, {{0, 2e-3}})};
  const auto closest = pb::closest_link(t);
  EXPECT_EQ(closest, (std::map<int, double>{{2, 5.5e-8}}));  // a 1-CPU process has no link
  EXPECT_FALSE(pb::ran_far(a, 0, closest));
  EXPECT_TRUE(pb::ran_far(a, 1, closest));
  EXPECT_FALSE(pb::ran_far(a, 2, closest));  // 1.8x: near
  EXPECT_FALSE(pb::ran_far(a, 9, closest));  // no such trial: unknown is not far
  // Trials 1 and 2: 5.5x and 3.2x apart; trial 3: both far, judged as they are; trial 4: unknown on one side.
  EXPECT_EQ(pb::mixed_link_trials(a, b), (std::set<int>{1, 2}));
  EXPECT_EQ(pb::without_trials(a, {1, 2}).link, (std::map<int, double>{{0, 6e-8}, {3, 3.1e-7}, {4, 6.2e-8}}));
  // A closer third placement (25 ns) makes both of the others far, but a trial that drew
  // 60 ns on one side and 330 ns on the other still drew two placements.
  auto c = row(pb::Tier::Hand, 2, {{0, 3e-3}});
  c.link = {{0, 2.5e-8}};
  t.rows.push_back(c);
  EXPECT_TRUE(pb::ran_far(a, 0, pb::closest_link(t)));
  EXPECT_TRUE(pb::ran_far(b, 2, pb::closest_link(t)));
  EXPECT_EQ(pb::mixed_link_trials(a, b), (std::set<int>{1, 2}));
}

// Inside a process the host's share of the core changes within a second: a
// 64^3 f64 OpenBLAS row on the 2-vCPU EPYC read 14.5 us in some of a
// process's repetitions and 18-19 in others, while the probes around the
// process read steady. So each repetition of a 1-thread row carries its own
// probe, and a trial keeps its steady repetitions.
TEST(BenchPace, ATrialKeepsItsRepetitionsProbedAtASteadyPace) {
  pb::BenchRow r = row(pb::Tier::Ceiling, 1, {});
  r.samples = {10, 20, 30, 40, 50, 60};
  r.trials = {0, 0, 1, 1, 2, 2};
  r.sample_pace = {2e-3, 3e-3, 3e-3, 2.9e-3, 0, 0};
  r.pace = {{0, 3.1e-3}, {1, 2e-3}, {2, 3e-3}};
  const std::map<int, double> fastest{{1, 2e-3}};
  const auto kept = pb::steady_samples(r, fastest);
  EXPECT_EQ(kept.samples, (std::vector<double>{10, 30, 40, 50, 60}));
  EXPECT_EQ(kept.trials, (std::vector<int>{0, 1, 1, 2, 2}));
  EXPECT_EQ(kept.sample_pace, (std::vector<double>{2e-3, 3e-3, 2.9e-3, 0, 0}));
  // Trial 0 was timed steady, whatever the probes around its process read; trial 1's every
  // repetition ran slow, so it did; trial 2 was not probed inside and keeps its process's pace.
  EXPECT_EQ(kept.pace, (std::map<int, double>{{0, 2e-3}, {1, 2.9e-3}, {2, 3e-3}}));
  EXPECT_FALSE(pb::ran_slow(kept, 0, fastest));
  EXPECT_TRUE(pb::ran_slow(kept, 1, fastest));
  // The in-process probes count toward the fastest pace.
  pb::BenchTable t;
  r.sample_pace[0] = 1.5e-3;
  t.rows = {r};
  EXPECT_EQ(pb::fastest_pace(t), (std::map<int, double>{{1, 1.5e-3}}));
  EXPECT_EQ(pb::steady_samples(r, {}).samples, r.samples);  // no fastest pace: nothing to judge by
}

// One burst of a faster host does not set the run's pace: past 100 probes the
// reference is the 1% quantile, not the least.
TEST(BenchPace, FastestPaceIsNotOneBurst) {
  pb::BenchRow r = row(pb::Tier::Hand, 1, {{0, 8.2e-3}});
  r.sample_pace.assign(300, 8.2e-3);
  r.sample_pace[7] = 6.7e-3, r.sample_pace[70] = 6.8e-3;  // two probes of 301 in a burst
  r.sample_pace[100] = 7.4e-3, r.sample_pace[200] = 7.5e-3;
  pb::BenchTable t;
  t.rows = {r};
  EXPECT_EQ(pb::fastest_pace(t), (std::map<int, double>{{1, 7.5e-3}}));  // rank (301 - 1) / 100 = 3: the fourth
  t.rows[0].sample_pace.resize(99);                                      // 100 probes: the least
  EXPECT_EQ(pb::fastest_pace(t), (std::map<int, double>{{1, 6.7e-3}}));
}

// The probe must see what it guards against: the loop shares its CPU with
// whatever else runs there (the host's other hyperthread, or here a rival
// thread), and reads slow. A thread new to a busy CPU may run its ~7 ms whole
// before the scheduler turns to a rival of equal weight (about half the time
// on this guest's kernel, and once in 300 runs 12 probes in a row did), so the
// probes run niced: the rival then takes its turns during each of them.
class BenchPaceLoop : public testing::TestWithParam<pb::PaceLoop> {};

TEST_P(BenchPaceLoop, AProbeSeesARivalOnItsCpu) {
  const std::vector<int> cpu = {pb::allowed_cpus().front()};
  double alone = 1e9;
  for (int i = 0; i < 3; ++i) alone = std::min(alone, pb::measure_pace(cpu, GetParam()));
  ASSERT_GT(alone, 0);
  std::atomic<bool> stop{false}, started{false}, pinned{false};
  std::thread rival([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu[0], &set);
    pinned = ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set) == 0;
    started = true;
    volatile double x = 1;
    while (pinned && !stop.load(std::memory_order_relaxed)) x = x * 0.999999 + 1e-7;
  });
  while (!started) std::this_thread::yield();
  double beside = -1;
  std::thread niced([&] {
    // Its probe threads inherit the nice value (Linux keeps it per thread).
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
    if (pinned) beside = pb::measure_pace(cpu, GetParam());
  });
  niced.join();
  stop = true;
  rival.join();
  ASSERT_TRUE(pinned) << "cannot pin a thread to CPU " << cpu[0];
  EXPECT_GT(beside, pb::kSlowPace * alone) << "alone " << alone << " s, beside a rival " << beside << " s";
  EXPECT_EQ(pb::measure_pace({}, GetParam()), -1);
}

// Every FMA of the loop takes its addend from memory, so the loop is bound by
// the load ports as well as the FP pipes: a sibling on the load ports moved
// OpenBLAS's 64^3 DGEMM by 25% while a loop of constant addends read steady
// (popper/pace.h). With the addends constant, the sum would not follow them.
TEST_P(BenchPaceLoop, EveryFmaTakesItsAddendFromMemory) {
  const bool widest = GetParam() == pb::PaceLoop::Widest;
  alignas(64) static double zeros[POPPER_PACE_DOUBLES], tiny[POPPER_PACE_DOUBLES];
  std::fill(std::begin(tiny), std::end(tiny), 1e-7);
  const long n = 100 * POPPER_PACE_ROUND;
  const double from_zeros = popper_pace_loop(widest, zeros, n), from_tiny = popper_pace_loop(widest, tiny, n);
  // Each chain (10, of 4 lanes where AVX2 runs) gains c (1 - m^n) / (1 - m) from addends c.
  const double gain = (popper_pace_runs_avx2(widest) ? 40 : 10) * 1e-7 * (1 - std::pow(0.999999, n)) / 1e-6;
  EXPECT_NEAR(from_tiny - from_zeros, gain, 1e-6 * gain) << "zeros " << from_zeros << ", 1e-7 " << from_tiny;
}

// Every loop, whatever this CPU has: the portable one is what a CPU without FMA runs.
INSTANTIATE_TEST_SUITE_P(EveryLoop, BenchPaceLoop, testing::Values(pb::PaceLoop::Widest, pb::PaceLoop::Portable),
                         [](const auto& p) { return p.param == pb::PaceLoop::Widest ? "Widest" : "Portable"; });
