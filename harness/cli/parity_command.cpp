// `popper parity ...`: the multi-backend parity gate, run by popper_parity
// (tool_exec.cpp) with the arguments it was given.
#include "commands.hpp"

namespace popper::cli {

void add_parity_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("parity",
                                 "Run the multi-backend parity gate on the canary model or a qwen2 Q4_K GGUF "
                                 "(popper parity --help lists its options)");
  cmd->allow_extras();
  cmd->set_help_flag();  // --help goes to popper_parity
  cmd->callback([cmd, &exit_code] { exec_tool("parity", "popper_parity", cmd->remaining(), exit_code); });
}

}  // namespace popper::cli
