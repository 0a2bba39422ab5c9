// Each add_*_command registers one CLI11 subcommand on the popper app. Its
// callback stores the process exit code in `exit_code` (0 ok, 1 the checked
// thing failed, 2 usage or I/O error).
#pragma once
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <vector>

namespace popper::cli {
void add_validate_command(CLI::App& app, int& exit_code);
void add_scaffold_command(CLI::App& app, int& exit_code);
void add_audit_command(CLI::App& app, int& exit_code);
void add_graph_command(CLI::App& app, int& exit_code);
void add_migrate_command(CLI::App& app, int& exit_code);  // pv contracts -> strict
void add_bench_commands(CLI::App& app, int& exit_code);   // bench compare | check | gate | merge | baseline | threshold
void add_peak_command(CLI::App& app, int& exit_code);
void add_parity_command(CLI::App& app, int& exit_code);  // runs popper_parity (the gate needs the kernels)
void add_train_commands(CLI::App& app, int& exit_code);  // train, budget baseline|run: run popper_train
void add_report_command(CLI::App& app, int& exit_code);  // report html
// <build> of the running <build>/bin/popper (peak_command.cpp).
std::string default_build_dir();
// A progress line on stderr (what long-running library calls report).
inline void progress(const std::string& line) { std::cerr << line << std::endl; }
// Replaces this process with <build>/bin/<tool> args... (tool_exec.cpp); on failure
// prints why under "popper <command>" and sets exit_code 2.
void exec_tool(const std::string& command, const std::string& tool, const std::vector<std::string>& args,
               int& exit_code);
}  // namespace popper::cli
