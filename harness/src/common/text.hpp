// Small text helpers the engine shares: splitting lists, the slugs and hash
// that name committed folders, and escaping for regular expressions and for
// markup (JUnit XML, the HTML report, the bench's SVG).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace popper {

// The non-empty fields of s between separators: "a;;b;" -> {"a", "b"}. For
// lists where an empty field means nothing (declines, git's line and NUL
// output, comma lists on the command line); the bench CSV reader keeps empty
// fields and has its own.
std::vector<std::string> split_nonempty(std::string_view s, char sep);

// Lower-case ASCII letters and digits, every other run of bytes one '-', no
// '-' at either end; "unknown" when nothing is left: "AMD EPYC 7B13" ->
// "amd-epyc-7b13". Bytes in `keep` are kept as they are: the gate key keeps
// '.' (gcc-12.2.0) and the machine fingerprint does not. Both name committed
// folders (baselines/<key>/), so each caller's output must never change.
std::string slug(std::string_view s, std::string_view keep = {});

// FNV-1a, 32 bits: the short hash in machine fingerprints and gate keys.
std::uint32_t fnv1a(std::string_view s);

// s with every ECMAScript regex metacharacter backslash-escaped (a Google
// Benchmark --benchmark_filter that matches one name exactly).
std::string regex_escape(std::string_view s);

// Text safe in XML 1.0 and HTML, in element content and in quoted attribute
// values: & < > " ' as entities, newline and tab as character references (an
// attribute keeps them), other control bytes, which XML 1.0 forbids, as '?'.
std::string markup_escape(std::string_view s);

}  // namespace popper
