// Which popper this is: the version and the commit it was built from, as
// `popper --version` prints them and every report records them, so that a
// report can be traced to the build that wrote it.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace popper {

// The CMake project version, e.g. "0.2.0".
const char* version();

// The commit the build was made from (git rev-parse --short=12 HEAD when the
// build last ran), "-dirty" appended when tracked files differed from it;
// "unknown" when not built from popper's own git checkout.
const char* build_commit();

// "0.2.0 (2c5394f1a2b3)": the version and the commit, for one-line metadata.
std::string build_id();

// {"version": "0.2.0", "commit": "2c5394f1a2b3"}: the "popper" member of every JSON report.
nlohmann::json build_json();

}  // namespace popper
