// Falsifiers of the loader and validator (popper-engine-v1: ENGINE-PO-001..005).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include "support.hpp"
#include "popper/binding.hpp"
#include "popper/loader.hpp"

namespace fs = std::filesystem;
using namespace popper;
using popper::engine::testing::expected_text;
using popper::engine::testing::has_code;
using popper::engine::testing::source_path;
using popper::engine::testing::text_without;

namespace {

void expect_code(const std::string& what, const std::string& text, const std::string& code) {
  Diagnostics d;
  LoadResult r;
  EXPECT_NO_THROW(r = load_contract_text(text, what + ".yaml", d)) << what;
  EXPECT_FALSE(r.ok) << what;
  EXPECT_TRUE(has_code(d, code)) << what << ": expected " << code << ", got:\n" << format_text(d);
  for (const auto& x : d.all()) EXPECT_FALSE(x.message.empty()) << what;
}

std::string alias_bomb() {
  // Ten levels of ten aliases each: 10^10 nodes if expanded.
  std::string s =
      "metadata:\n  version: \"1\"\n  description: \"bomb\"\nfalsification_tests:\n  - id: FALSIFY-B-001\n"
      "    rule: r\n    prediction: p\n    if_fails: f\n    params:\n      l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    s += "      l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) s += (k ? ", *l" : "*l") + std::to_string(i - 1);
    s += "]\n";
  }
  return s;
}

std::string good_contract_text() { return read_file(source_path("tests/corpus/good/softmax-kernel-v1.yaml")); }

}  // namespace

POPPER_FALSIFIER("FALSIFY-ENGINE-001", [](const popper::Params& p) {
  expect_code("invalid_yaml", "metadata: [unclosed\n  - x: {", "POP-V005");
  expect_code("binary",
              std::string("\x7f"
                          "ELF\x02\x01\x01\0\0\0garbage\xff\xfe",
                          20),
              "POP-V003");
  expect_code("empty", "", "POP-V004");
  expect_code("whitespace", "  \n\n\t\n", "POP-V004");
  expect_code("scalar_root", "just a sentence", "POP-V007");

  const auto levels = static_cast<std::size_t>(p.integer("deep_levels"));
  expect_code("deep_flow", std::string(levels, '[') + std::string(levels, ']'), "POP-V006");
  std::string dashes;
  for (std::size_t i = 0; i < levels; ++i) dashes += "- ";
  expect_code("deep_dashes", dashes + "x\n", "POP-V006");
  std::string block;
  for (int i = 0; i < 200; ++i)
    block += std::string(static_cast<std::size_t>(i), ' ') + "k" + std::to_string(i) + ":\n";
  expect_code("deep_block", block, "POP-V006");
  expect_code("alias_bomb", alias_bomb(), "POP-V006");

  // A large file is refused by size before it is read.
  const auto mib = static_cast<std::uintmax_t>(p.integer("big_file_mib"));
  const fs::path big = fs::temp_directory_path() / ("popper-big-" + std::to_string(::getpid()) + ".yaml");
  { std::ofstream(big) << "metadata:\n"; }
  fs::resize_file(big, mib << 20);
  Diagnostics d;
  LoadResult r;
  EXPECT_NO_THROW(r = load_contract_file(big.string(), d));
  fs::remove(big);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has_code(d, "POP-V002")) << format_text(d);
  expect_code("big_text", std::string(kMaxContractBytes + 1, 'a'), "POP-V002");

  // A directory with no contracts.
  const fs::path empty_dir = fs::temp_directory_path() / ("popper-empty-" + std::to_string(::getpid()));
  fs::create_directories(empty_dir);
  Diagnostics dd;
  const ContractSet set = load_contract_set({empty_dir.string()}, dd);
  fs::remove_all(empty_dir);
  EXPECT_TRUE(set.contracts.empty());
  EXPECT_TRUE(has_code(dd, "POP-V040")) << format_text(dd);
});

POPPER_FALSIFIER("FALSIFY-ENGINE-002", [](const popper::Params&) {
  auto total = [](const std::string& text) {
    Diagnostics d;
    LoadResult r;
    try {
      r = load_contract_text(text, "fuzz.yaml", d);
    } catch (const std::exception& e) {
      RC_FAIL(std::string("loader threw: ") + e.what());
    }
    RC_ASSERT(r.ok != d.has_errors());
    for (const auto& x : d.all()) {
      RC_ASSERT(x.code.rfind("POP-V", 0) == 0);
      RC_ASSERT(!x.message.empty());
    }
  };
  EXPECT_TRUE(rc::check("arbitrary text never escapes the loader", [&](const std::string& s) { total(s); }));
  const std::string good = good_contract_text();
  EXPECT_TRUE(rc::check("mutated contracts never escape the loader", [&] {
    std::string s = good;
    const int edits = *rc::gen::inRange(1, 8);
    for (int e = 0; e < edits; ++e) {
      const auto at = static_cast<std::size_t>(*rc::gen::inRange<std::size_t>(0, s.size()));
      // Structural edits too: the value after a "key: " becomes a list or a
      // mapping (well-formed YAML of the wrong type, which byte edits rarely make).
      if (*rc::gen::inRange(0, 3) == 0) {
        const auto colon = s.find(": ", at);
        if (colon != std::string::npos) {
          const auto eol = s.find('\n', colon);
          s.replace(colon + 2, (eol == std::string::npos ? s.size() : eol) - colon - 2,
                    *rc::gen::element(std::string("[x, 1]"), std::string("{k: v}"), std::string("[]")));
        }
        continue;
      }
      switch (*rc::gen::inRange(0, 4)) {
        case 0: s.insert(at, 1, *rc::gen::elementOf(std::string(":-[]{}&*!|>'\"#%@`\n\t ,?"))); break;
        case 1:
          if (at < s.size()) s.erase(at, 1);
          break;
        case 2: s.resize(at); break;
        default:
          if (at < s.size()) s[at] = *rc::gen::arbitrary<char>();
          break;
      }
    }
    total(s);
  }));
});

POPPER_FALSIFIER("FALSIFY-ENGINE-003", [](const popper::Params& p) {
  const fs::path dir = source_path(p.string("corpus"));
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".yaml") continue;
    ++files;
    fs::path expected = e.path();
    expected.replace_extension(".expected");
    ASSERT_TRUE(fs::exists(expected)) << "no expectation for " << e.path();
    Diagnostics d;
    load_contract_text(read_file(e.path().string()), e.path().filename().string(), d);
    EXPECT_EQ(format_text(d), expected_text(expected.string(), format_text(d)))
        << "corpus file " << e.path().filename();
  }
  EXPECT_GE(files, 20) << "the bad corpus shrank";
});

POPPER_FALSIFIER("FALSIFY-ENGINE-004", [](const popper::Params&) {
  const std::string good = good_contract_text();
  std::vector<std::string> lines;
  for (std::size_t pos = 0, end; pos < good.size(); pos = end + 1) {
    end = good.find('\n', pos);
    if (end == std::string::npos) end = good.size();
    lines.push_back(good.substr(pos, end - pos));
  }
  // Lines that start a key of a block mapping (not a list item, not a comment).
  std::vector<std::size_t> key_lines;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto ind = lines[i].find_first_not_of(' ');
    if (ind == std::string::npos || lines[i][ind] == '#' || lines[i][ind] == '-') continue;
    const auto colon = lines[i].find(':', ind);
    if (colon != std::string::npos && lines[i].find_first_of(" \"'", ind) > colon) key_lines.push_back(i);
  }
  ASSERT_GT(key_lines.size(), 30u);
  EXPECT_TRUE(rc::check("an unknown key is reported where it stands", [&] {
    const std::size_t at = *rc::gen::elementOf(key_lines);
    const std::string name =
        "x_" + *rc::gen::container<std::string>(*rc::gen::inRange(1, 12),
                                                rc::gen::elementOf(std::string("abcdefghijklmnopqrstuvwxyz_")));
    const auto ind = lines[at].find_first_not_of(' ');
    std::string text;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (i == at) text += std::string(ind, ' ') + name + ": 1\n";
      text += lines[i] + "\n";
    }
    Diagnostics d;
    load_contract_text(text, "k.yaml", d);
    bool reported = false;
    for (const auto& x : d.all())
      if (x.code == "POP-V010" && x.pos.line == static_cast<int>(at) + 1 && x.pos.col == static_cast<int>(ind) + 1)
        reported = true;
    // Keys of free-name maps (equation names, simd_dispatch, enforcement rules) accept any name.
    const std::string key = lines[at].substr(ind, lines[at].find(':', ind) - ind);
    const bool free_name = key == "softmax" || key == "no_overflow" || key == "scalar" || key == "avx2";
    if (!free_name) RC_ASSERT(reported);
  }));
});

POPPER_FALSIFIER("FALSIFY-ENGINE-005", [](const popper::Params& p) {
  const fs::path root = source_path(p.string("corpus"));
  int sets = 0;
  for (const auto& e : fs::directory_iterator(root)) {
    if (!e.is_directory()) continue;
    ++sets;
    Diagnostics d;
    load_contract_set({e.path().string()}, d);
    const std::string actual = text_without(d, e.path().string() + "/");
    EXPECT_EQ(actual, expected_text((e.path() / "expected.txt").string(), actual)) << "set " << e.path().filename();
  }
  EXPECT_GE(sets, 3);
});

POPPER_FALSIFIER("FALSIFY-ENGINE-006", [](const popper::Params& p) {
  Diagnostics good;
  const ContractSet g = load_contract_set({source_path(p.string("good"))}, good);
  EXPECT_FALSE(good.has_errors()) << format_text(good);
  EXPECT_GE(g.contracts.size(), 1u);
  Diagnostics own;
  const ContractSet c = load_contract_set({source_path("contracts")}, own);
  EXPECT_FALSE(own.has_errors()) << format_text(own);
  EXPECT_GE(c.contracts.size(), 1u);

  const fs::path pv = source_path(p.string("pv"));
  for (const auto& e : fs::directory_iterator(pv)) {
    if (e.path().extension() != ".yaml") continue;
    Diagnostics d;
    load_contract_set({e.path().string()}, d);
    fs::path expected = e.path();
    expected.replace_extension(".expected");
    const std::string actual = text_without(d, pv.string() + "/");
    EXPECT_EQ(actual, expected_text(expected.string(), actual)) << e.path().filename();
    EXPECT_NE(format_text(d).find("applies_to 'training_stability'"), std::string::npos);
  }
});

POPPER_FALSIFIER("FALSIFY-ENGINE-016", [](const popper::Params&) {
  // Each of these sends yaml-cpp 0.7's LoadAll round its document loop for ever (parse.cpp).
  auto expect_stop = [](const std::string& what, const std::string& text, int line, int col) {
    Diagnostics d;
    LoadResult r;
    EXPECT_NO_THROW(r = load_contract_text(text, what + ".yaml", d)) << what;
    EXPECT_FALSE(r.ok) << what;
    bool at = false;
    for (const auto& x : d.all())
      if (x.code == "POP-V005" && x.pos.line == line && x.pos.col == col &&
          x.message.find("unexpected ','") != std::string::npos)
        at = true;
    EXPECT_TRUE(at) << what << ": expected POP-V005 \"unexpected ','\" at " << line << ":" << col << ", got:\n"
                    << format_text(d);
  };
  expect_stop("comma", ",", 1, 1);
  expect_stop("comma_newline", ",\n", 1, 1);
  expect_stop("comma_key", ",metadata:\n  version: \"1.0.0\"\n", 1, 1);
  expect_stop("quoted_then_comma", read_file(source_path("tests/corpus/fuzz/issue41-quoted-then-comma")), 1, 4);
  expect_stop("after_document", "metadata: {}\n---\n,\n", 3, 1);
  expect_stop("after_empty_documents", "---\n---\n,", 3, 1);

  // Every finding kept in the fuzz corpus ends in a positioned error.
  int inputs = 0;
  for (const auto& e : fs::directory_iterator(source_path("tests/corpus/fuzz"))) {
    if (e.path().extension() == ".md") continue;
    ++inputs;
    Diagnostics d;
    LoadResult r;
    EXPECT_NO_THROW(r = load_contract_text(read_file(e.path().string()), "f.yaml", d)) << e.path();
    EXPECT_FALSE(r.ok) << e.path();
    for (const auto& x : d.all()) {
      EXPECT_EQ(x.code.rfind("POP-V", 0), 0u) << e.path() << ": " << x.code;
      EXPECT_GE(x.pos.line, 1) << e.path() << ": " << x.message;
    }
  }
  EXPECT_GE(inputs, 6) << "the fuzz regression corpus shrank";

  // The bounds, each passed on purpose. Documents: 65 empty ones.
  std::string empties;
  for (int i = 0; i < 65; ++i) empties += "---\n";
  Diagnostics dd;
  EXPECT_FALSE(load_contract_text(empties, "docs.yaml", dd).ok);
  EXPECT_NE(format_text(dd).find("more than 64 YAML documents"), std::string::npos) << format_text(dd);

  // Nodes: a flow list of 3,000 scalars under a bound of 2,000, refused by the
  // parse (the schema walk's own budget words it differently).
  std::string list = "metadata: [";
  for (int i = 0; i < 3000; ++i) list += i ? ",0" : "0";
  list += "]\n";
  ParseBounds small;
  small.max_nodes = 2000;
  Diagnostics dn;
  EXPECT_FALSE(load_contract_text(list, "nodes.yaml", dn, Profile::Strict, small).ok);
  EXPECT_NE(format_text(dn).find("holds more than 2000 nodes"), std::string::npos) << format_text(dn);

  // Time: a zero bound is passed at the first check (1,024 nodes in).
  ParseBounds now;
  now.max_millis = 0;
  Diagnostics dt;
  EXPECT_FALSE(load_contract_text(list, "time.yaml", dt, Profile::Strict, now).ok);
  EXPECT_NE(format_text(dt).find("longer than the 0 ms bound"), std::string::npos) << format_text(dt);
});
