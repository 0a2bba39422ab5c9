// UTF-8 helpers for everything that quotes user text or writes a report:
// a value is never cut inside a character, and a report never carries
// invalid UTF-8 (JSON and SARIF require it; nlohmann::json throws on it).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace popper::utf8 {

// Length in bytes of the valid UTF-8 sequence starting at s[i], or 0 when the
// bytes there are not one (bad lead byte, truncated, overlong, surrogate).
std::size_t sequence_length(std::string_view s, std::size_t i);

bool is_valid(std::string_view s);

// At most `max_bytes` of s, cut at a character boundary, with "…" appended
// when something was cut. Invalid bytes in s are replaced (see make_valid).
std::string cut(std::string_view s, std::size_t max_bytes);

// Replaces each invalid byte by U+FFFD. Returns true when anything changed.
bool make_valid(std::string& s);

}  // namespace popper::utf8
