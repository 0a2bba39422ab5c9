// Regression tests for reading provable-contracts (pv) contracts: the UTF-8
// crash in the report writers, the pv profile on the pv-style corpus in
// tests/corpus/pv-public (both profiles, expected diagnostics), and
// `popper migrate` (idempotent, and its result loads under strict without
// missing obligation ids). POPPER_UPDATE_EXPECTED=1 rewrites the expectations.
#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/utf8.hpp"
#include "popper/diagnostics.hpp"
#include "popper/io.hpp"
#include "popper/loader.hpp"
#include "popper/migrate.hpp"

namespace fs = std::filesystem;
using popper::Diagnostics;

namespace {

const fs::path kCorpus = fs::path(POPPER_SOURCE_DIR) / "tests" / "corpus" / "pv-public";

std::string expected_text(const fs::path& path, const std::string& actual) {
  if (const char* u = std::getenv("POPPER_UPDATE_EXPECTED"); u && std::string(u) == "1")
    popper::write_file_atomic(path.string(), actual);
  return popper::read_file(path.string());
}

// Diagnostics name files by the path they were loaded from; the expectations
// are written relative to the corpus folder ("./x.yaml").
std::string relative_text(const Diagnostics& d) {
  std::string s = popper::format_text(d);
  const std::string prefix = kCorpus.string() + "/";
  for (std::size_t at; (at = s.find(prefix)) != std::string::npos;) s.replace(at, prefix.size(), "./");
  return s;
}

bool has_code(const Diagnostics& d, const std::string& code) {
  for (const auto& x : d.all())
    if (x.code == code) return true;
  return false;
}

}  // namespace

TEST(Utf8, CutNeverSplitsACharacter) {
  const std::string v = std::string(39, 'a') + "\xE2\x88\x88";  // 39 × a then '∈' (3 bytes)
  const std::string c = popper::utf8::cut(v, 40);
  EXPECT_TRUE(popper::utf8::is_valid(c)) << c;
  EXPECT_EQ(c.rfind(std::string(39, 'a'), 0), 0u);
  EXPECT_EQ(popper::utf8::cut("short", 40), "short");
  EXPECT_TRUE(popper::utf8::is_valid(popper::utf8::cut("\xF0\x9F\x98\x80\xF0\x9F\x98\x80", 5)));
}

TEST(Utf8, MakeValidReplacesBadBytes) {
  std::string s = "ok\xFF\xC3";  // a bad lead byte, then a truncated sequence
  EXPECT_TRUE(popper::utf8::make_valid(s));
  EXPECT_TRUE(popper::utf8::is_valid(s));
  std::string good = "caf\xC3\xA9";
  EXPECT_FALSE(popper::utf8::make_valid(good));
}

// A 40-byte quote cut inside '∈' is invalid UTF-8, on which nlohmann::json
// throws type_error.316 from the json and sarif writers (an abort).
TEST(ReportWriters, ValueCutAtFortyBytesDoesNotThrow) {
  const std::string text = "metadata:\n  version: \"1.0.0\"\n  description: \"d\"\n  references: \"" +
                           std::string(39, 'a') + "\xE2\x88\x88\"\nequations:\n  e:\n    formula: \"y = x\"\n";
  for (auto profile : {popper::Profile::Strict, popper::Profile::Pv}) {
    Diagnostics d;
    popper::load_contract_text(text, "utf8-cut-v1.yaml", d, profile);
    EXPECT_TRUE(has_code(d, "POP-V012"));
    EXPECT_TRUE(popper::utf8::is_valid(popper::format_text(d)));
    std::string json, sarif;
    EXPECT_NO_THROW(json = popper::format_json(d));
    EXPECT_NO_THROW(sarif = popper::format_sarif(d));
    EXPECT_TRUE(nlohmann::json::accept(json));
    EXPECT_TRUE(nlohmann::json::accept(sarif));
  }
}

TEST(ReportWriters, InvalidUtf8FileNameAndMessageDoNotThrow) {
  Diagnostics d;
  d.error("POP-V010", {"dir\xFF/bad\xC3.yaml", 2, 3}, "unknown key 'k\xFE'");
  std::string json, sarif;
  EXPECT_NO_THROW(json = popper::format_json(d));
  EXPECT_NO_THROW(sarif = popper::format_sarif(d));
  EXPECT_TRUE(popper::utf8::is_valid(json));
  EXPECT_TRUE(popper::utf8::is_valid(sarif));
  EXPECT_TRUE(popper::utf8::is_valid(popper::format_text(d)));
}

TEST(PvCorpus, DiagnosticsUnderBothProfiles) {
  for (auto [profile, name] : {std::pair{popper::Profile::Pv, "pv"}, std::pair{popper::Profile::Strict, "strict"}}) {
    Diagnostics d;
    popper::LoadOptions opts;
    opts.profile = profile;
    popper::load_contract_set({kCorpus.string()}, d, opts);
    const std::string actual = relative_text(d);
    EXPECT_EQ(actual, expected_text(kCorpus / (std::string("expected.") + name + ".txt"), actual)) << name;
  }
}

TEST(PvCorpus, ProjectConfigSelectsPv) {
  Diagnostics forced, configured;
  popper::LoadOptions pv;
  pv.profile = popper::Profile::Pv;
  popper::load_contract_set({kCorpus.string()}, forced, pv);
  popper::load_contract_set({kCorpus.string()}, configured);
  EXPECT_EQ(relative_text(configured), relative_text(forced));
}

TEST(PvCorpus, CleanUnderPv) {
  for (const char* f : {"logsumexp-kernel-v1.yaml", "tables-registry-v1.yaml", "iris-beat-v1.yaml",
                        "project/exp-kernel-v1.yaml", "project/layout-pattern-v1.yaml"}) {
    Diagnostics d;
    popper::load_contract_file((kCorpus / f).string(), d, popper::Profile::Pv);
    EXPECT_EQ(d.error_count(), 0u) << f << "\n" << popper::format_text(d);
  }
}

TEST(Migrate, IdempotentAndAddsIds) {
  for (const char* f : {"logsumexp-kernel-v1.yaml", "dbc-defects-v1.yaml", "project/exp-kernel-v1.yaml"}) {
    const std::string text = popper::read_file((kCorpus / f).string());
    Diagnostics d1, d2;
    const auto once = popper::migrate_contract_text(text, f, d1);
    ASSERT_TRUE(once.ok) << f << "\n" << popper::format_text(d1);
    EXPECT_NE(once.text, text) << f;
    const auto twice = popper::migrate_contract_text(once.text, f, d2);
    ASSERT_TRUE(twice.ok) << f;
    EXPECT_EQ(twice.text, once.text) << f;
    EXPECT_TRUE(twice.edits.empty()) << f;
    Diagnostics strict;
    popper::load_contract_text(once.text, f, strict, popper::Profile::Strict);
    for (const auto& x : strict.all())
      EXPECT_FALSE(x.code == "POP-V011" && x.message.find("no id") != std::string::npos) << f << ": " << x.message;
  }
}

TEST(Migrate, DiffOfTheCorpusIsStable) {
  const std::string text = popper::read_file((kCorpus / "logsumexp-kernel-v1.yaml").string());
  Diagnostics d;
  const auto m = popper::migrate_contract_text(text, "logsumexp-kernel-v1.yaml", d);
  const std::string diff =
      popper::unified_diff(text, m.text, "a/logsumexp-kernel-v1.yaml", "b/logsumexp-kernel-v1.yaml");
  EXPECT_EQ(diff, expected_text(kCorpus / "expected.migrate.diff", diff));
}
