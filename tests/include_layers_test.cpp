// The engine's rooms include downwards only. Every `#include "..."` of
// harness/src and harness/include/popper is an edge from the room of the file
// to the room of the header; an edge that no row of kMayInclude allows is a
// back-arrow and fails the test, naming the file and the line.
//
//   common    io, utf8, text, process; the mutation-point macro, errors, the version
//   contract  the model, parsing, schema, rules and checks, the loader, scaffold, graph
//   binding   the registry of falsifiers, params, prepare_bound
//   audit     audit, its inputs and JUnit, the mutant runner
//   migrate   pv -> strict rewriting
//   bench     the bench tooling (reads popper/contract.hpp for claims)
//   report    the HTML report (over the bench tables and the audit's JSON)
//
// Inside contract/, the loader is on top: nothing below it (parse, schema,
// model, rules, checks, ...) includes popper/loader.hpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace {

namespace fs = std::filesystem;

const std::map<std::string, std::set<std::string>> kMayInclude = {
    {"common", {}},
    {"contract", {"common"}},
    {"binding", {"common", "contract"}},
    {"audit", {"common", "contract", "binding"}},
    {"migrate", {"common", "contract"}},
    {"bench", {"common", "contract"}},
    {"report", {"common", "bench"}},
};

// The room of each public header (harness/include/popper/<name>).
const std::map<std::string, std::string> kPublicRoom = {
    {"error.hpp", "common"},         {"io.hpp", "common"},
    {"result.hpp", "common"},        {"mutant.hpp", "common"},
    {"runtime_paths.hpp", "common"}, {"bench_protocol.hpp", "common"},
    {"bench.hpp", "bench"},          {"version.hpp", "common"},
    {"contract.hpp", "contract"},    {"diagnostics.hpp", "contract"},
    {"profile.hpp", "contract"},     {"parse_bounds.hpp", "contract"},
    {"loader.hpp", "contract"},      {"graph.hpp", "contract"},
    {"scaffold.hpp", "contract"},    {"binding.hpp", "binding"},
    {"audit.hpp", "audit"},          {"mutant_runner.hpp", "audit"},
    {"migrate.hpp", "migrate"},      {"ceiling_cli.h", "bench"},
    {"cache_evict.h", "common"},     {"pace.h", "common"},
    {"ceiling_count.h", "bench"},    {"bench_reference.hpp", "bench"},
    {"turns.h", "common"},
};

// contract/ files that stand above the loader and may include it.
const std::set<std::string> kAboveLoader = {"loader.cpp", "graph.cpp", "loader.hpp", "graph.hpp"};

struct Edge {
  std::string file;  // relative to harness/
  int line;
  std::string from, to, header;
};

// "popper/x.hpp" -> its room; "<room>/x.hpp" -> room; "" for anything else (a sibling in cli/, a system header).
std::string room_of_header(const std::string& h) {
  if (h.rfind("popper/", 0) == 0) {
    const auto it = kPublicRoom.find(h.substr(7));
    return it == kPublicRoom.end() ? "?" + h : it->second;
  }
  const auto slash = h.find('/');
  return slash == std::string::npos ? "" : h.substr(0, slash);
}

std::vector<Edge> edges() {
  const fs::path harness = fs::path(POPPER_SOURCE_DIR) / "harness";
  const std::regex include(R"(^\s*#\s*include\s*"([^"]+)\")");
  std::vector<Edge> out;
  for (const auto& entry : fs::recursive_directory_iterator(harness)) {
    if (!entry.is_regular_file()) continue;
    const fs::path rel = fs::relative(entry.path(), harness);
    const std::string top = rel.begin()->string();
    std::string from;
    if (top == "src") from = std::next(rel.begin())->string();
    else if (top == "include")
      from = kPublicRoom.count(rel.filename().string()) ? kPublicRoom.at(rel.filename().string()) : "?";
    else continue;  // cli/, testing/, fuzz/ stand on top of everything
    std::ifstream in(entry.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      std::smatch m;
      if (std::regex_search(line, m, include)) out.push_back({rel.string(), n, from, room_of_header(m[1]), m[1]});
    }
  }
  return out;
}

TEST(IncludeLayers, NoRoomIncludesOneAboveIt) {
  const auto all = edges();
  ASSERT_GT(all.size(), 100u) << "the scan found too few includes under " << POPPER_SOURCE_DIR << "/harness";
  for (const auto& e : all) {
    ASSERT_TRUE(kMayInclude.count(e.from)) << e.file << ": a room (or public header) the table does not place";
    if (e.to.empty() || e.to == e.from) continue;
    EXPECT_TRUE(kMayInclude.at(e.from).count(e.to))
        << e.file << ":" << e.line << ": " << e.from << " includes " << e.header << " (" << e.to
        << "): a back-arrow; move the shared piece down, or the includer up";
  }
}

TEST(IncludeLayers, NothingBelowTheLoaderIncludesIt) {
  for (const auto& e : edges()) {
    if (e.from != "contract" || e.header != "popper/loader.hpp") continue;
    EXPECT_TRUE(kAboveLoader.count(fs::path(e.file).filename().string()))
        << e.file << ":" << e.line << " includes popper/loader.hpp from below the loader";
  }
}

}  // namespace
