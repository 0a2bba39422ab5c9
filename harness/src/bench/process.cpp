// fork/exec with stdout and stderr captured through temporary files.
#include "popper/bench/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace popper::bench {
namespace {

std::string slurp_fd(int fd) {
  std::string out;
  ::lseek(fd, 0, SEEK_SET);
  char buf[65536];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

int temp_fd() {
  char name[] = "/tmp/popper-bench-XXXXXX";
  const int fd = ::mkstemp(name);
  if (fd >= 0) ::unlink(name);
  return fd;
}

}  // namespace

std::string ProcessResult::describe() const {
  if (signal) return "killed by signal " + std::to_string(signal) + " (" + std::string(::strsignal(signal)) + ")";
  if (exit_code < 0) return "could not start";
  return "exit " + std::to_string(exit_code);
}

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& env_set,
                          const std::vector<std::string>& env_unset) {
  ProcessResult r;
  if (argv.empty()) return r;
  const int out_fd = temp_fd(), err_fd = temp_fd();
  if (out_fd < 0 || err_fd < 0) {
    if (out_fd >= 0) ::close(out_fd);
    if (err_fd >= 0) ::close(err_fd);
    return r;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    for (const auto& name : env_unset) ::unsetenv(name.c_str());
    for (const auto& [k, v] : env_set) ::setenv(k.c_str(), v.c_str(), 1);
    ::execvp(args[0], args.data());
    const char msg[] = "exec failed\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  if (pid < 0) {
    ::close(out_fd);
    ::close(err_fd);
    return r;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
    r.exit_code = 128 + r.signal;
  }
  r.out = slurp_fd(out_fd);
  r.err = slurp_fd(err_fd);
  ::close(out_fd);
  ::close(err_fd);
  return r;
}

}  // namespace popper::bench
