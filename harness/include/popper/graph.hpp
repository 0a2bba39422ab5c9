// `popper graph`: the depends_on graph of a contract set.
#pragma once
#include <string>

#include "popper/loader.hpp"

namespace popper {
std::string graph_dot(const ContractSet& set);
std::string graph_mermaid(const ContractSet& set);
}  // namespace popper
