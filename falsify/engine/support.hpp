// Helpers shared by the engine's falsifiers.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>

#include "popper/diagnostics.hpp"
#include "popper/io.hpp"
#include "popper/runtime_paths.hpp"

namespace popper::engine::testing {

// A data file (contracts/, tests/corpus/): found relative to the binary, so the
// test binary runs wherever it is copied with its data (make bundle).
inline std::string source_path(const std::string& rel) { return popper::data_path(rel); }

inline bool has_code(const Diagnostics& d, const std::string& code) {
  for (const auto& x : d.all())
    if (x.code == code) return true;
  return false;
}

// format_text with every occurrence of `prefix` removed, so expectations hold
// paths relative to the corpus folder.
inline std::string text_without(const Diagnostics& d, const std::string& prefix) {
  std::string s = format_text(d);
  for (std::size_t p; !prefix.empty() && (p = s.find(prefix)) != std::string::npos;) s.erase(p, prefix.size());
  return s;
}

// The expected text of a golden file. With POPPER_UPDATE_EXPECTED=1 the
// actual text is written there first (after a deliberate change of the
// diagnostics; review the diff before committing it).
inline std::string expected_text(const std::string& path, const std::string& actual) {
  if (const char* u = std::getenv("POPPER_UPDATE_EXPECTED"); u && std::string(u) == "1")
    write_file_atomic(path, actual);
  return read_file(path);
}

}  // namespace popper::engine::testing
