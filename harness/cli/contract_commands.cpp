// popper validate | scaffold | graph
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "contract/rules.hpp"
#include "popper/graph.hpp"
#include "popper/io.hpp"
#include "popper/loader.hpp"
#include "popper/profile.hpp"
#include "popper/scaffold.hpp"

namespace popper::cli {

void add_validate_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("validate", "Check contracts: schema, references, ids, depends_on");
  auto paths = std::make_shared<std::vector<std::string>>();
  auto format = std::make_shared<std::string>("text");
  auto profile = std::make_shared<std::string>();
  auto no_recurse = std::make_shared<bool>(false);
  cmd->add_option("paths", *paths, "contract files or directories (default: contracts)");
  cmd->add_option("--format", *format, "text | json | sarif")->check(CLI::IsMember({"text", "json", "sarif"}));
  cmd->add_option("--profile", *profile, "strict | pv (default: the nearest .popper.yaml's profile, else strict)")
      ->check(CLI::IsMember({"strict", "pv"}));
  cmd->add_flag("--no-recurse", *no_recurse, "read only the *.yaml directly in each directory, not its subdirectories");
  cmd->callback([paths, format, profile, no_recurse, &exit_code] {
    if (paths->empty()) paths->push_back("contracts");
    Diagnostics diags;
    LoadOptions options;
    if (!profile->empty()) options.profile = parse_profile(*profile);
    options.recurse = !*no_recurse;
    const ContractSet set = load_contract_set(*paths, diags, options);
    if (*format == "json") {
      std::cout << format_json(diags);
    } else if (*format == "sarif") {
      std::cout << format_sarif(diags);
    } else {
      std::cout << format_text(diags);
      if (!diags.has_errors()) {
        std::size_t tests = 0;
        for (const auto& c : set.contracts) tests += c.falsification_tests.size() + c.kani_harnesses.size();
        std::cout << set.contracts.size() << " contract(s), " << tests << " test id(s): valid\n";
      }
    }
    exit_code = rules::exit_code(diags);
  });
}

void add_scaffold_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("scaffold", "Generate the GoogleTest source that runs a contract's bound tests");
  auto contract = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  cmd->add_option("contract", *contract, "contract file")->required();
  cmd->add_option("-o,--output", *out, "generated .cpp (written only when its text changes)")->required();
  cmd->callback([contract, out, &exit_code] {
    Diagnostics diags;
    LoadResult r = load_contract_file(*contract, diags);
    if (!r.ok) {
      std::cerr << format_text(diags);
      exit_code = std::max(1, rules::exit_code(diags));
      return;
    }
    try {
      write_file_if_changed(*out, scaffold_source(r.contract, read_file(*contract),
                                                  std::filesystem::path(*contract).filename().string()));
    } catch (const std::exception& e) {
      std::cerr << "popper scaffold: " << e.what() << "\n";
      exit_code = 2;
      return;
    }
    exit_code = 0;
  });
}

void add_graph_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("graph", "Print the depends_on graph as DOT or Mermaid");
  auto paths = std::make_shared<std::vector<std::string>>();
  auto format = std::make_shared<std::string>("dot");
  cmd->add_option("paths", *paths, "contract files or directories (default: contracts)");
  cmd->add_option("--format", *format, "dot | mermaid")->check(CLI::IsMember({"dot", "mermaid"}));
  cmd->callback([paths, format, &exit_code] {
    if (paths->empty()) paths->push_back("contracts");
    Diagnostics diags;
    const ContractSet set = load_contract_set(*paths, diags);
    if (diags.has_errors()) {
      std::cerr << format_text(diags);
      exit_code = rules::exit_code(diags);
      return;
    }
    std::cout << (*format == "dot" ? graph_dot(set) : graph_mermaid(set));
    exit_code = 0;
  });
}

}  // namespace popper::cli
