// Unit tests of engine pieces that the contract falsifiers do not pin down.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "common/text.hpp"
#include "contract/rules.hpp"
#include "contract/schema.hpp"
#include "popper/diagnostics.hpp"
#include "popper/error.hpp"
#include "popper/io.hpp"
#include "popper/loader.hpp"
#include "popper/scaffold.hpp"

namespace fs = std::filesystem;

TEST(DidYouMean, SuggestsCloseKeysOnly) {
  const std::vector<std::string> keys = {"equations", "proof_obligations", "metadata"};
  EXPECT_EQ(popper::schema::did_you_mean("equatoins", keys), "equations");
  EXPECT_EQ(popper::schema::did_you_mean("metdata", keys), "metadata");
  EXPECT_EQ(popper::schema::did_you_mean("zebra", keys), "");
}

TEST(Diagnostics, TextFormatIsFileLineColCodeMessage) {
  popper::Diagnostics d;
  d.error("POP-V010", {"a.yaml", 3, 7}, "unknown key 'x'; remove it");
  d.warning("POP-V041", {"a.yaml", 0, 0}, "unbacked");
  EXPECT_EQ(popper::format_text(d.all()[0]), "a.yaml:3:7: error[POP-V010]: unknown key 'x'; remove it");
  EXPECT_EQ(popper::format_text(d.all()[1]), "a.yaml: warning[POP-V041]: unbacked");
  EXPECT_EQ(d.error_count(), 1u);
}

TEST(Scaffold, IdentifiersAreValidCxx) {
  EXPECT_EQ(popper::test_identifier("gemm-v1"), "gemm_v1");
  EXPECT_EQ(popper::test_identifier("FALSIFY-GEMM-001"), "FALSIFY_GEMM_001");
  EXPECT_EQ(popper::test_identifier("3d-conv"), "c_3d_conv");
}

TEST(Io, AtomicWriteReplacesWholeFileAndLeavesNoTemp) {
  const fs::path dir = fs::temp_directory_path() / ("popper-io-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "out.txt").string();
  popper::write_file_atomic(path, "first\n");
  popper::write_file_atomic(path, "second\n");
  EXPECT_EQ(popper::read_file(path), "second\n");
  EXPECT_FALSE(popper::write_file_if_changed(path, "second\n"));
  EXPECT_TRUE(popper::write_file_if_changed(path, "third\n"));
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1u) << "a temporary file was left behind";
  fs::remove_all(dir);
}

TEST(Io, AtomicWriteIntoMissingDirectoryFailsCleanly) {
  EXPECT_THROW(popper::write_file_atomic("/proc/popper-no-such/x.txt", "x"), popper::Error);
}

TEST(Loader, KeepsPositionsOfEveryEntity) {
  const std::string text =
      "metadata:\n  version: \"1\"\n  description: \"d\"\nequations:\n  e:\n    formula: \"y\"\n"
      "proof_obligations:\n  - id: E-PO-001\n    type: invariant\n    property: p\n    applies_to: e\n"
      "falsification_tests:\n  - id: FALSIFY-E-001\n    rule: r\n    prediction: p\n    if_fails: f\n"
      "    covers: [E-PO-001]\n    params: {tol: 1e-6, n: 3, name: \"x\", shapes: [{m: 1}]}\n";
  popper::Diagnostics d;
  const auto r = popper::load_contract_text(text, "e.yaml", d);
  ASSERT_TRUE(r.ok) << popper::format_text(d);
  EXPECT_EQ(r.contract.equations.at(0).pos.line, 5);
  EXPECT_EQ(r.contract.obligations.at(0).pos.line, 8);
  EXPECT_EQ(r.contract.falsification_tests.at(0).pos.line, 13);
  const auto& p = r.contract.falsification_tests.at(0).params;
  EXPECT_DOUBLE_EQ(p["tol"].get<double>(), 1e-6);
  EXPECT_TRUE(p["n"].is_number_integer());
  EXPECT_TRUE(p["name"].is_string());
  EXPECT_EQ(p["shapes"][0]["m"], 1);
}

TEST(ExitCodes, UsageErrorsExitTwoContractErrorsOneWarningsZero) {
  namespace rules = popper::rules;
  popper::Diagnostics d;
  d.warning("POP-V041", {"a.yaml", 0, 0}, "unbacked");
  d.warning("POP-V001", {"a.yaml", 0, 0}, "a usage code as a warning decides nothing");
  EXPECT_EQ(rules::exit_code(d), 0);
  d.error("POP-V010", {"a.yaml", 1, 1}, "unknown key");
  EXPECT_EQ(rules::exit_code(d), 1);
  for (const char* usage : {"POP-V001", "POP-V009", "POP-V040"}) {
    popper::Diagnostics u = d;
    u.error(usage, {"a.yaml", 0, 0}, "cannot read");
    EXPECT_EQ(rules::exit_code(u), 2) << usage;
  }
  EXPECT_EQ(rules::exit_class("POP-V005"), rules::Exit::Contract);
  EXPECT_EQ(rules::exit_class("PV-SCHEMA-001"), rules::Exit::Contract);
}

// A code reported anywhere in the engine is in one of the two tables, so its
// exit class is decided there and not by default.
TEST(ExitCodes, EveryCodeTheEngineReportsIsInATable) {
  namespace rules = popper::rules;
  std::set<std::string> known;
  for (const auto* e = rules::table_begin(); e != rules::table_end(); ++e) {
    known.insert(e->strict_code);
    known.insert(e->pv_code);
  }
  std::set<std::string> direct;
  for (const auto* c = rules::codes_begin(); c != rules::codes_end(); ++c) {
    EXPECT_TRUE(direct.insert(c->code).second) << c->code << " twice in the table of direct codes";
    known.insert(c->code);
  }
  const std::regex code(R"re("((POP|PV)-[A-Z]*-?[0-9]{3})")re");
  std::size_t seen = 0;
  for (const char* dir : {"harness/src", "harness/cli"})
    for (const auto& f : fs::recursive_directory_iterator(fs::path(POPPER_SOURCE_DIR) / dir)) {
      if (!f.is_regular_file()) continue;
      std::ifstream in(f.path());
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      for (std::sregex_iterator it(text.begin(), text.end(), code), end; it != end; ++it, ++seen)
        EXPECT_TRUE(known.count((*it)[1])) << f.path() << " reports " << (*it)[1] << ", which no table lists";
    }
  EXPECT_GT(seen, 50u);
}

TEST(Text, SlugsKeepTheBytesThatNameCommittedFolders) {
  EXPECT_EQ(popper::slug("AMD EPYC 7B13 64-Core"), "amd-epyc-7b13-64-core");
  EXPECT_EQ(popper::slug("gcc 12.2.0", "."), "gcc-12.2.0");
  EXPECT_EQ(popper::slug("gcc 12.2.0"), "gcc-12-2-0");
  EXPECT_EQ(popper::slug(" -- "), "unknown");
}

TEST(Text, MarkupEscapeIsValidXmlTextAndAttribute) {
  EXPECT_EQ(popper::markup_escape("a<b>&\"c'\n\t\x01"), "a&lt;b&gt;&amp;&quot;c&apos;&#10;&#9;?");
  EXPECT_EQ(popper::regex_escape("small_64(f32)"), "small_64\\(f32\\)");
  EXPECT_EQ(popper::split_nonempty(";a;;b;", ';'), (std::vector<std::string>{"a", "b"}));
}
