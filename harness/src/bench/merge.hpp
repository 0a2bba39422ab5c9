// Runs that outgrow one machine: `popper bench compare --shard K/N` measures
// every N-th shape (the shapes of one shard keep their ceiling, wrapped and
// hand rows together, so each shard's claims and checks stand alone), and
// `popper bench merge` joins the shards' CSVs into one table.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "bench/csv.hpp"

namespace popper::bench {

struct Shard {
  int index = 1, count = 1;  // 1-based: shard K of N
};
// "K/N" with 1 <= K <= N; throws Error otherwise.
Shard parse_shard(const std::string& text);
// The shapes of shard K/N: positions K-1, K-1+N, ... of `shapes` (in suite order).
std::vector<std::string> shard_shapes(const std::vector<std::string>& shapes, const Shard& s);

// Joins tables (file name, table). Refuses, with an Error naming both files: a
// row present in two inputs, tables of different families, and — unless
// `allow_mixed` — tables from different machines (fingerprint) or gate keys.
// The result keeps the first input's metadata (shard keys dropped), records
// every input as `merged_from.<i>` (file, shard, fingerprint, commit, rows)
// and the keys of the rows it gave as `rows_from.<i>`; a mixed merge says
// `fingerprint: mixed`.
BenchTable merge_tables(const std::vector<std::pair<std::string, BenchTable>>& inputs, bool allow_mixed);

}  // namespace popper::bench
