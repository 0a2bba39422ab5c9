#include "popper/graph.hpp"

#include <fmt/format.h>

#include "popper/scaffold.hpp"

namespace popper {

// Edges point from a contract to what it depends on.
std::string graph_dot(const ContractSet& set) {
  std::string out = "digraph contracts {\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n";
  for (const auto& c : set.contracts)
    out += fmt::format("  \"{}\" [label=\"{}\\n{} tests, {} obligations\"];\n", c.stem, c.stem,
                       c.falsification_tests.size() + c.kani_harnesses.size(), c.obligations.size());
  for (const auto& c : set.contracts)
    for (const auto& d : c.depends_on) out += fmt::format("  \"{}\" -> \"{}\";\n", c.stem, d);
  return out + "}\n";
}

std::string graph_mermaid(const ContractSet& set) {
  std::string out = "graph LR\n";
  for (const auto& c : set.contracts) out += fmt::format("  {}[\"{}\"]\n", test_identifier(c.stem), c.stem);
  for (const auto& c : set.contracts)
    for (const auto& d : c.depends_on) out += fmt::format("  {} --> {}\n", test_identifier(c.stem), test_identifier(d));
  return out;
}

}  // namespace popper
