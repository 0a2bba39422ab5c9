// run_in_turns (common/process.hpp): programs run together, one at a time,
// each until it yields on the socket POPPER_BENCH_TURNS names (popper/turns.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/process.hpp"

namespace {

namespace fs = std::filesystem;

struct Log {
  fs::path path = fs::temp_directory_path() / ("popper-turns-" + std::to_string(::getpid()) + ".log");
  Log() { fs::remove(path); }
  ~Log() { fs::remove(path); }
  std::string text() const {
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
};

// A bash program (dash takes no fd over 9) that yields as popper/turns.h does:
// a byte out, then one in.
popper::Launch script(const std::string& body) {
  return {{"/bin/bash", "-c", "fd=$POPPER_BENCH_TURNS; y() { printf y >&$fd; head -c1 <&$fd >/dev/null; }; " + body},
          {},
          {},
          {}};
}

// Member `name` yields once to start, then writes name1..name3, each followed
// by a yield, then nameend.
popper::Launch member(const std::string& name, const Log& log) {
  const std::string to = " >> " + log.path.string();
  return script("y; for i in 1 2 3; do echo " + name + "$i" + to + "; y; done; echo " + name + "end" + to);
}

}  // namespace

// Rule: each runs until it yields, then the next one still running does, in
// launch order, round and round; one that exits leaves the round.
TEST(ProcessTurns, EachRunsUntilItYieldsThenTheNext) {
  const Log log;
  const auto r = popper::run_in_turns({member("a", log), member("b", log)}, 30);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].ok()) << r[0].describe() << r[0].err;
  EXPECT_TRUE(r[1].ok()) << r[1].describe() << r[1].err;
  EXPECT_EQ(log.text(), "a1\nb1\na2\nb2\na3\nb3\naend\nbend\n");
}

// Rule: a program that never yields runs alone, to its end, as it starts: the
// next one starts only after it.
TEST(ProcessTurns, AProgramThatNeverYieldsRunsAlone) {
  const Log log;
  const std::string to = " >> " + log.path.string();
  const auto r = popper::run_in_turns(
      {member("a", log), script("echo c1" + to + "; sleep 0.2; echo c2" + to), member("b", log)}, 30);
  EXPECT_TRUE(r[1].ok()) << r[1].err;
  EXPECT_EQ(log.text(), "c1\nc2\na1\nb1\na2\nb2\na3\nb3\naend\nbend\n");
}

// Rule: each result is its own program's: exit code, stdout, stderr; a launch
// that cannot start is reported so and does not stop the others.
TEST(ProcessTurns, EachResultIsItsOwn) {
  const auto r = popper::run_in_turns(
      {script("y; echo out; echo err >&2; exit 3"), {{"/nonexistent/program"}, {}, {}, {}}, script("y; y; echo two")},
      30);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].exit_code, 3);
  EXPECT_EQ(r[0].out, "out\n");
  EXPECT_EQ(r[0].err, "err\n");
  EXPECT_EQ(r[1].exit_code, 127);
  EXPECT_TRUE(r[2].ok()) << r[2].describe() << r[2].err;
  EXPECT_EQ(r[2].out, "two\n");
}

// Rule: past the timeout every program still running is killed and marked
// timed out, and the call returns.
TEST(ProcessTurns, PastTheTimeoutTheRestAreKilled) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = popper::run_in_turns({script("y; exit 0"), script("y; sleep 30")}, 1);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 10);
  EXPECT_TRUE(r[0].ok());
  EXPECT_TRUE(r[1].timed_out);
  EXPECT_FALSE(r[1].ok());
}
