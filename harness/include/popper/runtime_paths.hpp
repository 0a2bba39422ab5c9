// Where a popper program finds what it reads and writes at run time, so a
// binary runs wherever it is copied (`make bundle`, an install) and not only in
// the tree that built it. No absolute path is compiled in:
//
//   program_dir()   the directory of the running executable (/proc/self/exe)
//   build_root()    program_dir()/..: a build tree or an unpacked bundle, which
//                   hold bin/, peak.json and build artifacts such as the
//                   ptxas logs under <family>/
//   data_dir()      $POPPER_DATA_DIR when set, else build_root()/share/popper:
//                   contracts/, tests/corpus/, config/, bench/<f>/family.yaml
//                   (a build tree links them to its source folders at
//                   configure time; a bundle or an install copies them)
//   data_path(rel)  data_dir()/rel
//   temp_path(name) the system temp directory ($TMPDIR, else /tmp)/name
//   make_temp_file(stem) a new empty file temp_path(stem-XXXXXX); "" if none
//   make_temp_dir(stem)  a new empty directory temp_path(stem-XXXXXX); "" if none
//   make_run_dir(stem)   make_temp_dir(stem-<pid>), once the stem-<pid>-XXXXXX
//                        directories of processes that are gone are removed
#pragma once
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace popper {

inline std::filesystem::path program_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::current_path(ec) : exe.parent_path();
}

inline std::filesystem::path build_root() { return program_dir().parent_path(); }

inline std::filesystem::path data_dir() {
  if (const char* d = std::getenv("POPPER_DATA_DIR"); d && *d) return d;
  return build_root() / "share" / "popper";
}

inline std::string data_path(const std::string& rel) { return (data_dir() / rel).string(); }

inline std::string temp_path(const std::string& name) {
  std::error_code ec;
  auto dir = std::filesystem::temp_directory_path(ec);
  if (ec) dir = "/tmp";
  return (dir / name).string();
}

inline std::string make_temp_file(const std::string& stem) {
  std::string path = temp_path(stem + "-XXXXXX");
  const int fd = ::mkstemp(path.data());
  if (fd < 0) return "";
  ::close(fd);
  return path;
}

inline std::string make_temp_dir(const std::string& stem) {
  std::string path = temp_path(stem + "-XXXXXX");
  return ::mkdtemp(path.data()) ? path : std::string();
}

// A run's scratch directory, which its owner removes when it ends. A process
// stopped by a signal (or SIGKILL) cannot, so each new run first removes the
// directories of the stem whose process no longer exists.
inline std::string make_run_dir(const std::string& stem) {
  namespace fs = std::filesystem;
  const std::string prefix = stem + "-";
  std::vector<fs::path> orphans;
  std::error_code ec;
  for (fs::directory_iterator it(fs::path(temp_path(prefix)).parent_path(), ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());  // <pid>-XXXXXX
    const auto dash = rest.find('-');
    if (dash == 0 || dash > 9 || rest.find_first_not_of("0123456789") != dash || rest.size() != dash + 7) continue;
    const auto pid = static_cast<pid_t>(std::strtol(rest.c_str(), nullptr, 10));
    if (pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) orphans.push_back(it->path());
  }
  for (const auto& p : orphans) fs::remove_all(p, ec);
  return make_temp_dir(prefix + std::to_string(::getpid()));
}

}  // namespace popper
