// `popper migrate`: turns pv contracts into strict ones by editing their text
// at the positions the loader reports, so comments, key order and formatting
// stay as they were (a YAML library round-trip would drop comments). It
//   - adds `id: <PREFIX>-PO-NNN` to each obligation without one (the derived
//     id the pv profile shows), and `type: invariant` where pv defaulted it;
//   - rewrites references pv resolves by text to those ids: a harness
//     `obligation` or an obligation `requires` given as property text or
//     position, a qa_gate check given as a test's rule text, an obligation's
//     property text or an enforcement rule that names one test;
//   - renames pv's legacy aliases to their keys (statement → property, ...).
// Nothing moves. The result is parsed again and must equal the original with
// exactly these changes, or the file is left alone. Running it twice changes
// nothing the second time.
#pragma once
#include <string>
#include <vector>

#include "popper/diagnostics.hpp"

namespace popper {

struct Migration {
  bool ok = false;                 // false: unreadable or unverifiable; `text` is the input unchanged
  std::string text;                // the migrated text
  std::vector<std::string> edits;  // "line:col what", one per edit, in file order
};

// Diagnostics: the loader's parse errors (POP-V002..V008), POP-M001 when an
// edit could not be verified, POP-M002 warnings for references left as they are.
Migration migrate_contract_text(const std::string& text, const std::string& file, Diagnostics& diags);

// A unified diff (3 lines of context) from `before` to `after`; "" when equal.
std::string unified_diff(const std::string& before, const std::string& after, const std::string& from_label,
                         const std::string& to_label);

}  // namespace popper
