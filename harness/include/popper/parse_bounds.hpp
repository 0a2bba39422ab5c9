// The bounds on reading one contract, whatever its file holds (size, nesting,
// nodes, documents, time): every reader of contract text (the loader,
// `popper migrate`) parses under them.
#pragma once
#include <cstddef>

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

}  // namespace popper
