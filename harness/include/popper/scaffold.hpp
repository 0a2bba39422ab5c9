// `popper scaffold`: one GoogleTest TEST per falsification test and kani
// harness of a contract, each calling popper::run_bound(contract, id).
#pragma once
#include <string>

#include "popper/contract.hpp"

namespace popper {

// A C++ identifier from a contract stem or id: [A-Za-z0-9] kept, the rest '_'.
std::string test_identifier(const std::string& s);

// The generated source text: `contract_text` (the file `c` was loaded from)
// is compiled in under `file_name`, so the tests read no file at run time.
std::string scaffold_source(const Contract& c, const std::string& contract_text, const std::string& file_name);

}  // namespace popper
