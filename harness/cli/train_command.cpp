// `popper train ...` (= `popper budget run ...`) and `popper budget baseline ...`:
// training steps under the budget contract (contracts/train/), run by
// popper_train (tool_exec.cpp) with the arguments they were given.
#include "commands.hpp"

namespace popper::cli {

void add_train_commands(CLI::App& app, int& exit_code) {
  auto forward = [&exit_code](CLI::App* cmd, const std::string& name, const std::string& sub) {
    cmd->allow_extras();
    cmd->set_help_flag();  // --help goes to popper_train
    cmd->callback([cmd, name, sub, &exit_code] {
      std::vector<std::string> args{sub};
      for (const auto& a : cmd->remaining()) args.push_back(a);
      exec_tool(name, "popper_train", args, exit_code);
    });
  };
  forward(app.add_subcommand("train",
                             "Train a preset under the budget contract: brick table, MFU, Jidoka gate, traces "
                             "(popper train --help lists its options)"),
          "train", "run");
  auto* budget = app.add_subcommand("budget", "Training step budgets: measure a baseline, or run under it");
  budget->require_subcommand(1);
  forward(budget->add_subcommand("baseline",
                                 "Measure the brick budgets of a preset on this machine "
                                 "(baselines/<fingerprint>/train-budget.json)"),
          "budget baseline", "baseline");
  forward(budget->add_subcommand("run", "The same as popper train"), "budget run", "run");
}

}  // namespace popper::cli
