// fork/execve with stdout and stderr captured through temporary files.
// Everything the child needs (path, argv, envp) is built before fork, so the
// child only calls async-signal-safe functions: safe from threaded callers.
#include "common/process.hpp"
#include "popper/runtime_paths.hpp"
#include "popper/turns.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sched.h>
#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
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

namespace {

// Everything execve needs, built before fork: the child calls only
// async-signal-safe functions.
struct Prepared {
  std::string program;
  std::vector<std::string> arg_strings, env_strings;
  std::vector<char*> args, envp;
  cpu_set_t affinity;
  bool pin = false;
};

// The child's environment: ours, minus env_unset, with env_set applied.
std::unique_ptr<Prepared> prepare(const std::vector<std::string>& argv,
                                  const std::vector<std::pair<std::string, std::string>>& env_set,
                                  const std::vector<std::string>& env_unset, const std::vector<int>& cpus) {
  auto p = std::make_unique<Prepared>();
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& name : env_unset) env.erase(name);
  for (const auto& [k, v] : env_set) env[k] = v;
  p->env_strings.reserve(env.size());
  for (const auto& [k, v] : env) p->env_strings.push_back(fmt::format("{}={}", k, v));
  for (auto& e : p->env_strings) p->envp.push_back(e.data());
  p->envp.push_back(nullptr);
  p->program = resolve_program(argv[0]);
  p->arg_strings = argv;
  for (auto& a : p->arg_strings) p->args.push_back(a.data());
  p->args.push_back(nullptr);
  CPU_ZERO(&p->affinity);
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &p->affinity);
  p->pin = !cpus.empty();
  return p;
}

// fork + execve with stdout and stderr to out_fd and err_fd; `keep_fd` (>= 0)
// stays open across execve. Returns the pid, or -1.
pid_t spawn(const Prepared& p, int out_fd, int err_fd, int keep_fd = -1) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::dup2(out_fd, 1);
  ::dup2(err_fd, 2);
  if (p.pin && ::sched_setaffinity(0, sizeof p.affinity, &p.affinity) != 0) {
    const char msg[] = "cannot pin to the requested CPUs\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(126);
  }
  if (keep_fd >= 0) ::fcntl(keep_fd, F_SETFD, 0);
  ::execve(p.program.c_str(), p.args.data(), p.envp.data());
  const char msg[] = "exec failed\n";
  (void)!::write(2, msg, sizeof msg - 1);
  ::_exit(127);
}

void set_status(ProcessResult& r, int status) {
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
    r.exit_code = 128 + r.signal;
  }
}

void reap(pid_t pid, ProcessResult& r) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  set_status(r, status);
}

// Captured output: read back and closed.
void collect(ProcessResult& r, int out_fd, int err_fd) {
  r.out = slurp_fd(out_fd);
  r.err = slurp_fd(err_fd);
  ::close(out_fd);
  ::close(err_fd);
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& env_set,
                          const std::vector<std::string>& env_unset, double timeout_seconds,
                          const std::vector<int>& cpus) {
  ProcessResult r;
  if (argv.empty()) return r;
  const auto prepared = prepare(argv, env_set, env_unset, cpus);
  const int out_fd = temp_fd(), err_fd = temp_fd();
  if (out_fd < 0 || err_fd < 0) {
    if (out_fd >= 0) ::close(out_fd);
    if (err_fd >= 0) ::close(err_fd);
    return r;
  }
  const pid_t pid = spawn(*prepared, out_fd, err_fd);
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
  set_status(r, status);
  collect(r, out_fd, err_fd);
  return r;
}

std::vector<ProcessResult> run_in_turns(const std::vector<Launch>& launches, double timeout_seconds) {
  struct Member {
    int out_fd = -1, err_fd = -1, sock = -1;  // sock: our end of its turns socket
    pid_t pid = -1;
    bool alive = false;
  };
  std::vector<ProcessResult> results(launches.size());
  std::vector<Member> m(launches.size());
  auto start = [&](std::size_t i) {
    if (launches[i].argv.empty()) return;
    int pair[2];
    m[i].out_fd = temp_fd();
    m[i].err_fd = temp_fd();
    if (m[i].out_fd < 0 || m[i].err_fd < 0 || ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
      for (int fd : {m[i].out_fd, m[i].err_fd})
        if (fd >= 0) ::close(fd);
      m[i].out_fd = m[i].err_fd = -1;
      return;
    }
    auto env = launches[i].env_set;
    env.emplace_back(POPPER_TURNS_ENV, std::to_string(pair[1]));
    const auto prepared = prepare(launches[i].argv, env, launches[i].env_unset, launches[i].cpus);
    m[i].pid = spawn(*prepared, m[i].out_fd, m[i].err_fd, pair[1]);
    ::close(pair[1]);
    m[i].sock = pair[0];
    m[i].alive = m[i].pid > 0;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  bool expired = false;
  // Waits for member i to yield, or to exit (then reaped). Past the deadline
  // it stops, and every member still alive is killed below.
  auto until_yield = [&](std::size_t i) {
    for (;;) {
      int wait_ms = -1;
      if (timeout_seconds > 0) {
        const auto left = deadline - std::chrono::steady_clock::now();
        wait_ms = static_cast<int>(
            std::max<long long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(left).count() + 1));
      }
      pollfd pfd{m[i].sock, POLLIN, 0};
      const int n = ::poll(&pfd, 1, wait_ms);
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) {
        expired = true;
        return;
      }
      char byte = 0;
      const ssize_t got = ::recv(m[i].sock, &byte, 1, 0);
      if (got < 0 && errno == EINTR) continue;
      if (got == 1) return;
      m[i].alive = false;  // it exited (or closed its end): it leaves the round
      reap(m[i].pid, results[i]);
      return;
    }
  };
  // One at a time up to its first yield: a program that never yields (no
  // turns in it) then runs alone to its end, as it would outside turns.
  for (std::size_t i = 0; i < m.size() && !expired; ++i) {
    start(i);
    if (m[i].alive) until_yield(i);
  }
  for (std::size_t i = 0; !expired;) {
    std::size_t alive = 0;
    for (const auto& x : m) alive += x.alive;
    if (alive == 0) break;
    while (!m[i].alive) i = (i + 1) % m.size();
    const char go = 'g';
    (void)::send(m[i].sock, &go, 1, MSG_NOSIGNAL);  // one that closed its end shows it by its exit below
    until_yield(i);
    i = (i + 1) % m.size();
  }
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (m[i].alive) {
      ::kill(m[i].pid, SIGKILL);
      reap(m[i].pid, results[i]);
      results[i].timed_out = true;
    }
    if (m[i].sock >= 0) ::close(m[i].sock);
    if (m[i].out_fd >= 0) collect(results[i], m[i].out_fd, m[i].err_fd);
  }
  return results;
}

}  // namespace popper
