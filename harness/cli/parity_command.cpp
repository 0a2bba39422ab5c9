// `popper parity ...`: the multi-backend parity gate. The gate runs popper's
// own kernels, which the harness does not link (a harness-only install has
// none), so this command executes popper_parity from the same bin directory
// with the arguments it was given.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "commands.hpp"

namespace popper::cli {

void add_parity_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("parity",
                                 "Run the multi-backend parity gate on the canary model or a qwen2 Q4_K GGUF "
                                 "(popper parity --help lists its options)");
  cmd->allow_extras();
  cmd->set_help_flag();  // --help goes to popper_parity
  cmd->callback([cmd, &exit_code] {
    const std::string exe = default_build_dir() + "/bin/popper_parity";
    if (!std::filesystem::exists(exe)) {
      std::cerr << "popper parity: " << exe
                << " not found: it is built with popper's kernels (not in a POPPER_HARNESS_ONLY build)\n";
      exit_code = 2;
      return;
    }
    std::vector<std::string> args{exe};
    for (const auto& a : cmd->remaining()) args.push_back(a);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::cout.flush();
    execv(exe.c_str(), argv.data());
    std::cerr << "popper parity: cannot run " << exe << ": " << std::strerror(errno) << "\n";
    exit_code = 2;
  });
}

}  // namespace popper::cli
