// Running a program (the bench's ceilings, suites and valgrind; the audit's
// test binary under each mutant; git for the report) with a modified
// environment, capturing stdout and stderr. No shell is involved.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace popper {

struct ProcessResult {
  int exit_code = -1;      // -1 when it could not start
  int signal = 0;          // non-zero when killed by a signal (e.g. SIGILL)
  bool timed_out = false;  // killed after timeout_seconds
  std::string out, err;
  bool ok() const { return exit_code == 0 && signal == 0; }
  std::string describe() const;  // "exit 2" | "killed by signal 4 (SIGILL)" | "timed out (killed)"
};

// argv[0] is searched on PATH unless it contains '/'. timeout_seconds > 0
// kills the child (SIGKILL) when it runs longer. A non-empty `cpus` pins the
// child to those CPUs before it starts (it fails to start, exit 126, when
// they cannot be set). Safe to call from several threads.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& env_set = {},
                          const std::vector<std::string>& env_unset = {}, double timeout_seconds = 0,
                          const std::vector<int>& cpus = {});

// One program to start: as run_process's arguments.
struct Launch {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env_set;
  std::vector<std::string> env_unset;
  std::vector<int> cpus;
};

// Runs the launches together, one at a time, in turns (popper/turns.h): each
// gets a socket whose number is in POPPER_BENCH_TURNS and runs until it
// yields (sends a byte); then the next one alive runs until it yields, round
// and round, and one that exits leaves the round. They start one after
// another, each once the one before has yielded for the first time, so none
// starts while another is timed, and a program that never yields runs alone
// to its end. All still running are killed (SIGKILL, timed_out) when the
// turns take longer than timeout_seconds (> 0) in all. One result per launch,
// in their order.
std::vector<ProcessResult> run_in_turns(const std::vector<Launch>& launches, double timeout_seconds = 0);

}  // namespace popper
