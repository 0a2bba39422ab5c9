// A ceiling program whose repetition on several threads leaves a thread of its
// process running past the turn's wait prints every row after it invalid
// (popper/ceiling_cli.h), as a suite's row is (popper/bench.hpp): in turns that
// thread would slow the other tiers alone.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"  // the header's static helpers this test does not call
#include "popper/ceiling_cli.h"
#pragma GCC diagnostic pop

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

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

}  // namespace
