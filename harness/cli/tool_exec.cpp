// Commands that need popper's kernels run a tool built with them, from the
// same bin directory: the harness does not link the kernels (a harness-only
// install has none). exec_tool replaces this process with it.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "commands.hpp"

namespace popper::cli {

void exec_tool(const std::string& command, const std::string& tool, const std::vector<std::string>& args,
               int& exit_code) {
  const std::string exe = default_build_dir() + "/bin/" + tool;
  if (!std::filesystem::exists(exe)) {
    std::cerr << "popper " << command << ": " << exe
              << " not found: it is built with popper's kernels (not in a POPPER_HARNESS_ONLY build)\n";
    exit_code = 2;
    return;
  }
  std::vector<std::string> all{exe};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(all.size() + 1);
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  execv(exe.c_str(), argv.data());
  std::cerr << "popper " << command << ": cannot run " << exe << ": " << std::strerror(errno) << "\n";
  exit_code = 2;
}

}  // namespace popper::cli
