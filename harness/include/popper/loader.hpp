// Loading and validating contracts. Never crashes or hangs on bad input:
// size and nesting are capped, and every problem becomes a Diagnostic.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "popper/contract.hpp"
#include "popper/diagnostics.hpp"
#include "popper/profile.hpp"

namespace popper {

inline constexpr std::size_t kMaxContractBytes = 4u << 20;  // 4 MiB: contracts are text written by people
inline constexpr int kMaxNestingDepth = 64;                 // the schema needs 6
inline constexpr long kMaxNodes = 200000;                   // aliases can expand a small file exponentially

// What parsing one contract may cost. yaml-cpp is driven one document at a
// time and every node it produces is counted, so a parser defect that loops
// (yaml-cpp <= 0.8.0 on a stray ',') ends in a diagnostic, never a hang:
// POP-V006 past the nodes or the time, POP-V008 past the documents. The time
// is wall-clock, checked every 1,024 nodes.
struct ParseBounds {
  long max_nodes = kMaxNodes;
  std::size_t max_documents = 64;  // a contract file holds one; empty ones ("---") are tolerated
  long max_millis = 2000;          // a 4 MiB contract parses in well under a second
};

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
