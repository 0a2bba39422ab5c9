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

}  // namespace popper
