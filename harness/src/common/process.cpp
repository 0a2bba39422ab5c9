// fork/execve with stdout and stderr captured through temporary files.
// Everything the child needs (path, argv, envp) is built before fork, so the
// child only calls async-signal-safe functions: safe from threaded callers.
#include "common/process.hpp"
#include "popper/runtime_paths.hpp"

#include <fcntl.h>
#include <sched.h>
#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <thread>

namespace popper {
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
  std::string name = popper::temp_path("popper-bench-XXXXXX");
  const int fd = ::mkstemp(name.data());
  if (fd >= 0) ::unlink(name.c_str());
  return fd;
}

// The program as execve needs it: a path with a '/' is taken as is, else PATH is searched.
std::string resolve_program(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    std::string candidate = dir;
    candidate += '/';
    candidate += program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return program;
}

}  // namespace

std::string ProcessResult::describe() const {
  if (timed_out) return "timed out (killed)";
  if (signal) return "killed by signal " + std::to_string(signal) + " (" + std::string(::strsignal(signal)) + ")";
  if (exit_code < 0) return "could not start";
  return "exit " + std::to_string(exit_code);
}

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& env_set,
                          const std::vector<std::string>& env_unset, double timeout_seconds,
                          const std::vector<int>& cpus) {
  ProcessResult r;
  if (argv.empty()) return r;
  // The child's environment: ours, minus env_unset, with env_set applied.
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& name : env_unset) env.erase(name);
  for (const auto& [k, v] : env_set) env[k] = v;
  std::vector<std::string> env_strings;
  env_strings.reserve(env.size());
  for (const auto& [k, v] : env) env_strings.push_back(fmt::format("{}={}", k, v));
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  const std::string program = resolve_program(argv[0]);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  const int out_fd = temp_fd(), err_fd = temp_fd();
  if (out_fd < 0 || err_fd < 0) {
    if (out_fd >= 0) ::close(out_fd);
    if (err_fd >= 0) ::close(err_fd);
    return r;
  }
  cpu_set_t affinity;
  CPU_ZERO(&affinity);
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &affinity);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    if (!cpus.empty() && ::sched_setaffinity(0, sizeof affinity, &affinity) != 0) {
      const char msg[] = "cannot pin to the requested CPUs\n";
      (void)!::write(2, msg, sizeof msg - 1);
      ::_exit(126);
    }
    ::execve(program.c_str(), args.data(), envp.data());
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
  if (timeout_seconds > 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
    for (;;) {
      const pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        while (::waitpid(pid, &status, 0) < 0) {
        }
        r.timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } else {
    while (::waitpid(pid, &status, 0) < 0) {
    }
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

}  // namespace popper
