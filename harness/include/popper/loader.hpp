// Loading and validating contracts. Never crashes or hangs on bad input:
// size and nesting are capped, and every problem becomes a Diagnostic.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "popper/contract.hpp"
#include "popper/diagnostics.hpp"
#include "popper/parse_bounds.hpp"
#include "popper/profile.hpp"

namespace popper {

// Parses one contract from text (file is used for positions and the stem)
// under `profile`. ok is false when the contract has errors; a contract with
// an empty stem is unusable (the text could not be read as a contract).
struct LoadResult {
  bool ok = false;
  Contract contract;
};
LoadResult load_contract_text(const std::string& text, const std::string& file, Diagnostics& diags,
                              Profile profile = Profile::Strict, const ParseBounds& bounds = {});
// `profile` unset: the nearest .popper.yaml decides (strict without one).
LoadResult load_contract_file(const std::string& path, Diagnostics& diags,
                              std::optional<Profile> profile = std::nullopt);

struct LoadOptions {
  std::optional<Profile> profile;  // unset: each contract's .popper.yaml decides (strict without one)
  bool recurse = true;             // a directory means its *.yaml / *.yml at any depth
};

// Expands paths (files and directories) into contract files, sorted per
// directory. Directories are walked recursively unless told not to; symbolic
// links to directories are not followed (so no loop can trap the walk). An
// empty directory, a missing path and a symbolic-link loop are diagnostics.
std::vector<std::string> expand_contract_paths(const std::vector<std::string>& paths, Diagnostics& diags,
                                               bool recurse = true);

// All contracts loaded from `paths`, with cross-contract checks applied
// (unique ids, depends_on and parent_contract resolve, depends_on acyclic).
struct ContractSet {
  std::vector<Contract> contracts;
  const Contract* find_stem(const std::string& stem) const;
};
ContractSet load_contract_set(const std::vector<std::string>& paths, Diagnostics& diags,
                              const LoadOptions& options = {});
// The cross-contract checks alone, for contracts already in memory.
void check_contract_set(const ContractSet& set, Diagnostics& diags);

}  // namespace popper
