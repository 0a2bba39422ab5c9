// Falsifiers of scaffold, output formats and the depends_on graph
// (popper-engine-v1: ENGINE-PO-002, 007, 010).
#include <filesystem>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support.hpp"
#include "popper/binding.hpp"
#include "popper/loader.hpp"
#include "popper/scaffold.hpp"

namespace fs = std::filesystem;
using namespace popper;
using popper::engine::testing::source_path;

POPPER_FALSIFIER("FALSIFY-ENGINE-010", [](const popper::Params&) {
  Diagnostics d;
  const ContractSet own = load_contract_set({source_path("contracts"), source_path("tests/corpus/good")}, d);
  ASSERT_FALSE(d.has_errors()) << format_text(d);
  // The folder the contracts really live in (a build tree links its data to the source tree).
  std::error_code ec;
  const std::string data_root = fs::canonical(popper::data_dir(), ec).string();
  ASSERT_FALSE(ec || data_root.empty()) << "no data directory at " << popper::data_dir();
  for (const auto& c : own.contracts) {
    const std::string text = read_file(c.path);
    const std::string src = scaffold_source(c, text, fs::path(c.path).filename().string());
    EXPECT_EQ(src.find(data_root), std::string::npos) << c.stem << ": a source path is compiled in";
    EXPECT_NE(src.find("metadata:"), std::string::npos) << c.stem << ": the contract's text is not compiled in";
    std::size_t tests = 0;
    std::set<std::string> names;
    for (std::size_t pos = 0; (pos = src.find("\nTEST(", pos)) != std::string::npos; ++pos) {
      ++tests;
      names.insert(src.substr(pos, src.find(')', pos) - pos));
    }
    EXPECT_EQ(tests, c.falsification_tests.size() + c.kani_harnesses.size()) << c.stem;
    EXPECT_EQ(names.size(), tests) << c.stem << ": two ids map to one test name";
    for (const auto& t : c.falsification_tests)
      EXPECT_NE(src.find("run_bound(kContract, \"" + t.id + "\")"), std::string::npos) << t.id;
    for (const auto& h : c.kani_harnesses)
      EXPECT_NE(src.find("run_bound(kContract, \"" + h.id + "\")"), std::string::npos) << h.id;
  }
});

POPPER_FALSIFIER("FALSIFY-ENGINE-011", [](const popper::Params&) {
  Diagnostics d;
  load_contract_text(read_file(source_path("tests/corpus/bad/bad_enum.yaml")), "bad_enum.yaml", d);
  ASSERT_GE(d.all().size(), 2u);
  const auto j = nlohmann::json::parse(format_json(d));
  ASSERT_EQ(j["diagnostics"].size(), d.all().size());
  EXPECT_EQ(j["errors"], d.error_count());
  for (const auto& x : j["diagnostics"]) {
    EXPECT_GT(x["line"].get<int>(), 0);
    EXPECT_GT(x["column"].get<int>(), 0);
    EXPECT_EQ(x["code"].get<std::string>().rfind("POP-V", 0), 0u);
  }
  const auto s = nlohmann::json::parse(format_sarif(d));
  EXPECT_EQ(s["version"], "2.1.0");
  const auto& results = s["runs"][0]["results"];
  ASSERT_EQ(results.size(), d.all().size());
  for (std::size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i]["ruleId"], d.all()[i].code);
    EXPECT_EQ(results[i]["locations"][0]["physicalLocation"]["region"]["startLine"], d.all()[i].pos.line);
  }
});

POPPER_HARNESS("KANI-ENGINE-001", [](const popper::Params& p) {
  const auto bound = static_cast<int>(p.bound());
  std::size_t graphs = 0;
  for (int n = 1; n <= bound; ++n) {
    const int edges = n * n;
    for (long mask = 0; mask < (1L << edges); ++mask) {
      ContractSet set;
      bool reach[8][8] = {};
      for (int a = 0; a < n; ++a) {
        Contract c;
        c.stem = std::string(1, static_cast<char>('a' + a));
        for (int b = 0; b < n; ++b)
          if (mask >> (a * n + b) & 1) {
            c.depends_on.push_back(std::string(1, static_cast<char>('a' + b)));
            c.depends_on_pos.push_back({c.stem + ".yaml", 1, 1});
            reach[a][b] = true;
          }
        set.contracts.push_back(c);
      }
      // Independent oracle: Warshall's transitive closure.
      for (int k = 0; k < n; ++k)
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j) reach[i][j] = reach[i][j] || (reach[i][k] && reach[k][j]);
      bool cyclic = false;
      for (int i = 0; i < n; ++i) cyclic = cyclic || reach[i][i];
      Diagnostics d;
      check_contract_set(set, d);
      ASSERT_EQ(popper::engine::testing::has_code(d, "POP-V032"), cyclic) << "n=" << n << " mask=" << mask;
      ASSERT_FALSE(popper::engine::testing::has_code(d, "POP-V031"));
      ++graphs;
    }
  }
  EXPECT_GT(graphs, 65536u);
});
