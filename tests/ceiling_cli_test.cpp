// A ceiling program whose repetition on several threads leaves a thread of its
// process running past the turn's wait prints every row after it invalid
// (popper/ceiling_cli.h), as a suite's row is (popper/bench.hpp): in turns that
// thread would slow the other tiers alone.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"  // the header's static helpers this test does not call
#include "popper/ceiling_cli.h"
#pragma GCC diagnostic pop

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "popper/binding.hpp"

namespace {

TEST(CeilingCli, AThreadLeftRunningAfterARepetitionMakesTheRowsAfterItInvalid) {
  ceiling_threads_left_running = 0;
  ceiling_args two{};
  two.threads = 2;
  // A helper that finished: the rows keep the program's verdict.
  std::thread([] {}).join();
  ceiling_pace_end(&two);
  EXPECT_STREQ(ceiling_row_verdict("verified"), "verified");

  // On one thread the check does not apply: there is no worker to leave running.
  std::atomic<bool> stop{false};
  std::thread spinning([&stop] {
    while (!stop.load()) {
    }
  });
  ceiling_args one{};
  one.threads = 1;
  ceiling_pace_begin(&one);
  ceiling_pace_end(&one);
  EXPECT_STREQ(ceiling_row_verdict("verified"), "verified");

  ceiling_pace_end(&two);
  stop = true;
  spinning.join();
  EXPECT_TRUE(std::string(ceiling_row_verdict("verified")).starts_with("invalid: a thread of this process still ran"));
  EXPECT_EQ(std::string(ceiling_row_verdict("verified")).find(','), std::string::npos) << "a CSV field";
  ceiling_threads_left_running = 0;
}

// Where the eviction buffer cannot be allocated, popper_evict returns 0 and the
// process goes on: the cold row it timed is invalid, not a reason to exit. Run
// in a child whose address space is capped just above what it uses.
TEST(CeilingCli, AColdRowWhoseEvictionCannotAllocateIsInvalidAndTheProcessGoesOn) {
  if (popper::sanitizer_build())
    GTEST_SKIP() << "AddressSanitizer reserves its shadow memory: an address-space cap does not apply";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto child = [] {
    setenv("POPPER_BENCH_EVICT_BYTES", "268435456", 1);  // 256 MiB, over the cap below
    long pages = 0, resident = 0;
    FILE* statm = std::fopen("/proc/self/statm", "r");
    if (!statm || std::fscanf(statm, "%ld %ld", &pages, &resident) != 2) std::_Exit(3);
    std::fclose(statm);
    const auto limit = static_cast<rlim_t>(pages * sysconf(_SC_PAGESIZE) + (64L << 20));
    const rlimit cap{limit, limit};
    if (setrlimit(RLIMIT_AS, &cap) != 0) std::_Exit(4);
    if (popper_evict() != 0) std::_Exit(5);
    ceiling_not_evicted = 0;
    ceiling_args cold{};
    cold.threads = 1;
    cold.cold = 1;
    ceiling_time_calls(
        &cold, 2, [](void*) {}, nullptr);
    const std::string verdict = ceiling_row_verdict("verified");
    if (verdict.find(',') != std::string::npos) std::_Exit(7);  // a CSV field
    std::_Exit(verdict == "invalid: " POPPER_NOT_EVICTED ? 0 : 6);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), "cannot allocate 268435456 bytes to evict the caches");
}

}  // namespace
