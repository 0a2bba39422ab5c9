// File output that never leaves a half-written file in place of a good one.
#pragma once
#include <string>

namespace popper {

// Writes `content` to a temporary file beside `path`, flushes it to disk and
// renames it over `path`. Throws popper::Error on failure; `path` is then untouched.
void write_file_atomic(const std::string& path, const std::string& content);

// Like write_file_atomic, but leaves the file (and its mtime) alone when the
// content is unchanged, so build tools do not recompile. Returns true if written.
bool write_file_if_changed(const std::string& path, const std::string& content);

// Reads a whole file; throws popper::Error naming the path on failure.
std::string read_file(const std::string& path);

}  // namespace popper
