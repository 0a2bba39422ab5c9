// The guarded YAML parse every reader of contract text goes through: size cap,
// text check, nesting pre-scan, then one document under hard bounds (nodes,
// documents, time; see parse.cpp). The loader and `popper migrate`
// share it, so migrate never edits a file the loader could not read.
#pragma once
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "popper/diagnostics.hpp"
#include "popper/parse_bounds.hpp"

namespace popper::parse {

// The root mapping of a one-document contract, or nullopt with diagnostics
// (POP-V002..V008). Never loops, never throws.
std::optional<YAML::Node> contract_root(const std::string& text, const std::string& file, Diagnostics& diags,
                                        const ParseBounds& bounds = {});

}  // namespace popper::parse
