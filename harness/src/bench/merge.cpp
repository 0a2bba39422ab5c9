#include "bench/merge.hpp"

#include <map>

#include <fmt/format.h>

#include "bench/plausibility.hpp"
#include "popper/error.hpp"

namespace popper::bench {

Shard parse_shard(const std::string& text) {
  Shard s;
  const auto slash = text.find('/');
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    std::size_t used = 0;
    s.index = std::stoi(text.substr(0, slash), &used);
    if (used != slash) throw std::invalid_argument("trailing text");
    s.count = std::stoi(text.substr(slash + 1), &used);
    if (used != text.size() - slash - 1) throw std::invalid_argument("trailing text");
  } catch (const std::exception&) {
    throw Error("--shard '" + text + "': expected K/N, e.g. 1/4");
  }
  if (s.count < 1 || s.index < 1 || s.index > s.count)
    throw Error("--shard '" + text + "': K must be in 1..N and N >= 1");
  return s;
}

std::vector<std::string> shard_shapes(const std::vector<std::string>& shapes, const Shard& s) {
  std::vector<std::string> out;
  for (std::size_t i = static_cast<std::size_t>(s.index - 1); i < shapes.size(); i += static_cast<std::size_t>(s.count))
    out.push_back(shapes[i]);
  return out;
}

BenchTable merge_tables(const std::vector<std::pair<std::string, BenchTable>>& inputs, bool allow_mixed) {
  if (inputs.empty()) throw Error("bench merge: no input tables");
  const auto& [first_file, first] = inputs.front();
  std::string family;  // of the first row seen
  BenchTable out;
  for (const auto& [k, v] : first.metadata)
    if (k != "shard" && k.rfind("merged_from.", 0) != 0 && k.rfind("rows_from.", 0) != 0)
      out.metadata.emplace_back(k, v);
  bool mixed = false;
  std::map<BenchKey, std::string> source;  // row -> input it came from
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& [file, t] = inputs[i];
    std::string rows_of;  // the row keys this input gave, space-separated
    for (const char* key : {"fingerprint", "gate_key"}) {
      const std::string a = first.meta(key).value_or(""), b = t.meta(key).value_or("");
      if (a == b) continue;
      if (!allow_mixed)
        throw Error(
            fmt::format("bench merge: {} has {} '{}' but {} has '{}' (different machines or builds; "
                        "--allow-mixed merges them anyway and marks the table mixed)",
                        file, key, b, first_file, a));
      mixed = true;
    }
    for (const auto& r : t.rows) {
      if (family.empty()) family = r.key.family;
      if (r.key.family != family)
        throw Error(
            fmt::format("bench merge: {} holds family '{}', the tables before it '{}'", file, r.key.family, family));
      if (auto it = source.find(r.key); it != source.end())
        throw Error(fmt::format("bench merge: row {} is in both {} and {} (overlapping shards?)", r.key.to_string(),
                                it->second, file));
      source[r.key] = file;
      out.rows.push_back(r);
      rows_of += (rows_of.empty() ? "" : " ") + r.key.to_string();
    }
    out.set_meta("rows_from." + std::to_string(i + 1), rows_of);
    out.set_meta("merged_from." + std::to_string(i + 1),
                 fmt::format("{} (shard {}, fingerprint {}, commit {}, {} rows)", file, t.meta("shard").value_or("all"),
                             t.meta("fingerprint").value_or("?"), t.meta("commit").value_or("?"), t.rows.size()));
  }
  if (mixed) out.set_meta("fingerprint", "mixed");
  mark_invalid_vendor_rows(out);  // over every input's rows (the first's invalid_vendor_rows list covered only its own)
  return out;
}

}  // namespace popper::bench
