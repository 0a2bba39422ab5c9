// Loading and validating contracts. Never crashes or hangs on bad input:
// size and nesting are capped, and every problem becomes a Diagnostic.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "popper/contract.hpp"
#include "popper/diagnostics.hpp"

namespace popper {

inline constexpr std::size_t kMaxContractBytes = 4u << 20;  // 4 MiB: contracts are text written by people
inline constexpr int kMaxNestingDepth = 64;                 // the schema needs 6
inline constexpr long kMaxNodes = 200000;                   // aliases can expand a small file exponentially

// Parses one contract from text (file is used for positions only). Returns
// nullopt-equivalent (a Contract with empty stem) on fatal errors.
struct LoadResult {
  bool ok = false;  // false: fatal problem, see diagnostics; contract unusable
  Contract contract;
};
LoadResult load_contract_text(const std::string& text, const std::string& file, Diagnostics& diags);
LoadResult load_contract_file(const std::string& path, Diagnostics& diags);

// Expands paths (files and directories; a directory means its *.yaml/*.yml,
// non-recursive) into contract files. An empty directory is a diagnostic.
std::vector<std::string> expand_contract_paths(const std::vector<std::string>& paths, Diagnostics& diags);

// All contracts loaded from `paths`, with cross-contract checks applied
// (unique ids, depends_on resolves and is acyclic).
struct ContractSet {
  std::vector<Contract> contracts;
  const Contract* find_stem(const std::string& stem) const;
};
ContractSet load_contract_set(const std::vector<std::string>& paths, Diagnostics& diags);
// The cross-contract checks alone, for contracts already in memory.
void check_contract_set(const ContractSet& set, Diagnostics& diags);

}  // namespace popper
