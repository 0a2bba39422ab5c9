#include "bench/baseline.hpp"

#include <filesystem>

#include "bench/csv.hpp"
#include "bench/gate.hpp"
#include "popper/error.hpp"
#include "popper/io.hpp"

namespace popper::bench {

namespace fs = std::filesystem;

SavedBaseline save_baseline(const std::string& from, const std::string& dir) {
  const auto table = read_bench_csv(from);
  auto key = table.meta("gate_key");
  if (!key) key = table.meta("fingerprint");
  if (!key || key->empty()) throw Error(from + ": no '# fingerprint:' metadata; not produced by popper bench");
  if (const auto inj = table.meta("injected_slowdown"))
    throw Error(from + " was recorded with POPPER_BENCH_INJECT_SLOWDOWN=" + *inj + ": not a baseline");
  std::string name = fs::path(from).filename().string();
  if (name.rfind("bench-", 0) == 0) name = name.substr(6);
  const fs::path folder = fs::path(dir) / *key;
  fs::create_directories(folder);
  SavedBaseline saved;
  saved.path = (folder / name).string();
  saved.rows = table.rows.size();
  if (fs::exists(saved.path)) {
    fs::path prev = saved.path;
    prev.replace_extension(".prev.csv");
    saved.previous = prev.string();
    write_file_atomic(saved.previous, format_bench_csv(read_bench_csv(saved.path)));
  }
  write_bench_csv(saved.path, table);
  if (fs::exists(functions_path(from))) write_file_atomic(functions_path(saved.path), read_file(functions_path(from)));
  return saved;
}

}  // namespace popper::bench
