// popper migrate FILE|DIR... [--write]: pv contracts → strict ones (see popper/migrate.hpp).
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "contract/rules.hpp"
#include "popper/io.hpp"
#include "popper/loader.hpp"
#include "popper/migrate.hpp"

namespace popper::cli {

void add_migrate_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "migrate",
      "Turn pv contracts into strict ones: add obligation ids, rewrite references to them, rename pv aliases. "
      "Prints a unified diff; --write edits the files in place (comments and layout kept)");
  auto paths = std::make_shared<std::vector<std::string>>();
  auto write = std::make_shared<bool>(false);
  auto no_recurse = std::make_shared<bool>(false);
  cmd->add_option("paths", *paths, "contract files or directories")->required();
  cmd->add_flag("--write", *write, "write the migrated files (each replaced atomically) instead of printing a diff");
  cmd->add_flag("--no-recurse", *no_recurse, "read only the *.yaml directly in each directory");
  cmd->callback([paths, write, no_recurse, &exit_code] {
    Diagnostics diags;
    const auto files = expand_contract_paths(*paths, diags, !*no_recurse);
    std::size_t changed = 0, edits = 0, failed = 0;
    for (const auto& f : files) {
      std::error_code ec;
      const auto size = std::filesystem::file_size(f, ec);
      if (ec || size > kMaxContractBytes) {
        diags.error("POP-V001", {f, 0, 0}, ec ? "cannot read the file: " + ec.message() : "file over the 4 MiB limit");
        ++failed;
        continue;
      }
      std::string text;
      try {
        text = read_file(f);
      } catch (const std::exception& e) {
        diags.error("POP-V001", {f, 0, 0}, e.what());
        ++failed;
        continue;
      }
      const Migration m = migrate_contract_text(text, f, diags);
      if (!m.ok) {
        ++failed;
        continue;
      }
      if (m.text == text) continue;
      ++changed;
      edits += m.edits.size();
      if (!*write) {
        std::cout << unified_diff(text, m.text, "a/" + f, "b/" + f);
        continue;
      }
      try {
        write_file_atomic(f, m.text);
      } catch (const std::exception& e) {
        diags.error("POP-V001", {f, 0, 0}, std::string("not written: ") + e.what());
        ++failed;
      }
    }
    for (const auto& d : diags.all()) std::cerr << format_text(d) << "\n";
    std::cerr << (*write ? "migrated " : "would migrate ") << changed << " of " << files.size() << " file(s), " << edits
              << " edit(s)" << (failed ? ", " + std::to_string(failed) + " file(s) left unchanged" : "") << "\n";
    exit_code = rules::exit_code(diags) == 2 ? 2 : failed ? 1 : 0;
  });
}

}  // namespace popper::cli
