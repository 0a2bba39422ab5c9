// Falsifiers of binding and audit (popper-engine-v1: ENGINE-PO-006, 008, 009).
#include <cctype>

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include "popper/audit.hpp"
#include "popper/binding.hpp"

using namespace popper;

namespace {

const std::vector<std::string> kOutcomes = {"passed", "failed", "skipped", "unbound", "not_run"};

// One contract with `obligations` obligations and tests whose covers and outcomes are given.
struct Spec {
  int obligations;
  std::vector<std::vector<int>> covers;  // per test: obligation indices
  std::vector<std::string> outcomes;     // per test
};

Contract make_contract(const std::string& stem, const Spec& s) {
  Contract c;
  c.stem = stem;
  c.path = stem + ".yaml";
  c.equations.push_back({"e", "y = x", {}, {}});
  for (int o = 0; o < s.obligations; ++o)
    c.obligations.push_back({stem + "-PO-" + std::to_string(100 + o), "invariant", "p", "", std::nullopt, "e", {}, {}});
  for (std::size_t t = 0; t < s.covers.size(); ++t) {
    FalsificationTest ft;
    ft.id = "FALSIFY-" + stem + "-" + std::to_string(t);
    for (int o : s.covers[t]) ft.covers.push_back(c.obligations[static_cast<std::size_t>(o)].id);
    c.falsification_tests.push_back(ft);
  }
  return c;
}

AuditInputs inputs_for(const std::vector<std::pair<Contract, Spec>>& cs) {
  AuditInputs in;
  for (const auto& [c, s] : cs) {
    in.contracts.contracts.push_back(c);
    for (std::size_t t = 0; t < s.outcomes.size(); ++t) {
      const std::string& id = c.falsification_tests[t].id;
      if (s.outcomes[t] != "unbound") in.bound_ids.push_back(id);
      if (s.outcomes[t] != "not_run" && s.outcomes[t] != "unbound") in.results[id] = {s.outcomes[t], ""};
    }
  }
  return in;
}

// Independent count: an obligation is covered iff some test covering it passed.
std::size_t expected_covered(const Spec& s) {
  std::size_t n = 0;
  for (int o = 0; o < s.obligations; ++o) {
    bool covered = false;
    for (std::size_t t = 0; t < s.covers.size(); ++t)
      for (int x : s.covers[t])
        if (x == o && s.outcomes[t] == "passed") covered = true;
    n += covered ? 1 : 0;
  }
  return n;
}

}  // namespace

POPPER_FALSIFIER("FALSIFY-ENGINE-007", [](const popper::Params&) {
  EXPECT_TRUE(rc::check("audit figures are bounded and earned", [] {
    const int ncontracts = *rc::gen::inRange(1, 4);
    std::vector<std::pair<Contract, Spec>> cs;
    std::size_t want_total_cov = 0, want_total_ob = 0;
    for (int ci = 0; ci < ncontracts; ++ci) {
      Spec s;
      s.obligations = *rc::gen::inRange(0, 5);
      const int ntests = *rc::gen::inRange(0, 6);
      for (int t = 0; t < ntests; ++t) {
        std::vector<int> cov;
        if (s.obligations > 0)
          cov = *rc::gen::container<std::vector<int>>(static_cast<std::size_t>(*rc::gen::inRange(0, 4)),
                                                      rc::gen::inRange(0, s.obligations));
        s.covers.push_back(cov);
        s.outcomes.push_back(*rc::gen::elementOf(kOutcomes));
      }
      want_total_cov += expected_covered(s);
      want_total_ob += static_cast<std::size_t>(s.obligations);
      cs.emplace_back(make_contract("C" + std::to_string(ci), s), s);
    }
    const AuditReport rep = audit(inputs_for(cs));
    RC_ASSERT(rep.obligations.num <= rep.obligations.den);
    RC_ASSERT(rep.obligations.num == want_total_cov);
    RC_ASSERT(rep.obligations.den == want_total_ob);
    RC_ASSERT(rep.obligations.percent() <= 100.0);
    for (std::size_t i = 0; i < cs.size(); ++i) {
      const auto& cj = rep.json["contracts"][i]["obligations_covered"];
      RC_ASSERT(cj["covered"].get<std::size_t>() == expected_covered(cs[i].second));
      RC_ASSERT(cj["covered"].get<std::size_t>() <= cj["total"].get<std::size_t>());
      const auto& ft = rep.json["contracts"][i]["falsification_tests"];
      std::size_t sum = 0;
      for (const auto& o : kOutcomes) sum += ft[o].get<std::size_t>();
      RC_ASSERT(sum == ft["total"].get<std::size_t>());
    }
    RC_ASSERT(rep.orphans.empty());
  }));
});

POPPER_FALSIFIER("FALSIFY-ENGINE-008", [](const popper::Params&) {
  Contract c;
  c.stem = "probe";
  c.path = "probe.yaml";
  c.obligations.push_back({"PROBE-PO-001", "invariant", "p", "", std::nullopt, "all", {}, {}});
  for (const char* id : {"FALSIFY-PROBE-BOUND", "FALSIFY-PROBE-UNBOUND", "FALSIFY-PROBE-NEEDS"}) {
    FalsificationTest t;
    t.id = id;
    t.covers = {"PROBE-PO-001"};
    c.falsification_tests.push_back(t);
  }
  c.falsification_tests[2].requires_ = {"no-such-device"};
  KaniHarness h;
  h.id = "KANI-PROBE-WRONG-MACRO";
  h.obligation = "PROBE-PO-001";
  c.kani_harnesses.push_back(h);

  Registry reg;  // a private registry: the probe ids stay out of the real one
  bool ran = false;
  reg.add({BindingKind::Falsifier, "FALSIFY-PROBE-BOUND", [&](const Params&) { ran = true; }, __FILE__, __LINE__});
  reg.add({BindingKind::Falsifier, "FALSIFY-PROBE-NEEDS", [](const Params&) {}, __FILE__, __LINE__});
  reg.add({BindingKind::Falsifier, "KANI-PROBE-WRONG-MACRO", [](const Params&) {}, __FILE__, __LINE__});

  const PreparedCall bound = prepare_bound(c, "FALSIFY-PROBE-BOUND", DeviceRule::DeclineSkips, reg);
  ASSERT_TRUE(bound.ready());
  bound.binding->fn(bound.params);
  EXPECT_TRUE(ran);

  const PreparedCall unbound = prepare_bound(c, "FALSIFY-PROBE-UNBOUND", DeviceRule::DeclineSkips, reg);
  EXPECT_FALSE(unbound.ready());
  EXPECT_EQ(unbound.outcome, Outcome::Unbound);
  EXPECT_EQ(unbound.reason.rfind("UNBOUND", 0), 0u) << unbound.reason;

  const PreparedCall needs = prepare_bound(c, "FALSIFY-PROBE-NEEDS", DeviceRule::DeclineSkips, reg);
  EXPECT_FALSE(needs.ready());
  EXPECT_EQ(needs.outcome, Outcome::Skipped);
  EXPECT_NE(needs.reason.find("no-such-device"), std::string::npos) << needs.reason;

  const PreparedCall wrong = prepare_bound(c, "KANI-PROBE-WRONG-MACRO", DeviceRule::DeclineSkips, reg);
  EXPECT_FALSE(wrong.ready());
  EXPECT_EQ(wrong.outcome, Outcome::Failed);

  const PreparedCall missing = prepare_bound(c, "FALSIFY-NOT-IN-CONTRACT", DeviceRule::DeclineSkips, reg);
  EXPECT_EQ(missing.outcome, Outcome::Failed);

  // The audit counts none of the non-passes as coverage.
  AuditInputs in;
  in.contracts.contracts.push_back(c);
  in.bound_ids = {"FALSIFY-PROBE-BOUND", "FALSIFY-PROBE-NEEDS", "KANI-PROBE-WRONG-MACRO"};
  in.results["FALSIFY-PROBE-UNBOUND"] = {to_string(unbound.outcome), unbound.reason};
  in.results["FALSIFY-PROBE-NEEDS"] = {to_string(needs.outcome), needs.reason};
  in.results["KANI-PROBE-WRONG-MACRO"] = {to_string(wrong.outcome), wrong.reason};
  const AuditReport not_yet = audit(in);
  EXPECT_EQ(not_yet.obligations.num, 0u) << "coverage from a test that never ran as a pass";
  EXPECT_EQ(not_yet.json["contracts"][0]["falsification_tests"]["unbound"], 1);
  EXPECT_EQ(not_yet.json["contracts"][0]["falsification_tests"]["not_run"], 1);
  in.results["FALSIFY-PROBE-BOUND"] = {"passed", ""};
  EXPECT_EQ(audit(in).obligations.num, 1u);
});

POPPER_FALSIFIER("FALSIFY-ENGINE-009", [](const popper::Params&) {
  Spec s{1, {{0}}, {"passed"}};
  AuditInputs in = inputs_for({{make_contract("O", s), s}});
  in.bound_ids.push_back("FALSIFY-ORPHAN-999");
  const AuditReport rep = audit(in);
  ASSERT_EQ(rep.orphans.size(), 1u);
  EXPECT_EQ(rep.orphans[0], "FALSIFY-ORPHAN-999");
  EXPECT_EQ(rep.json["orphans"][0], "FALSIFY-ORPHAN-999");
});

POPPER_HARNESS("KANI-ENGINE-002", [](const popper::Params& p) {
  const auto bound = static_cast<int>(p.bound());
  std::size_t cases = 0;
  for (int backers = 0; backers <= bound; ++backers) {
    int combos = 1;
    for (int i = 0; i < backers; ++i) combos *= 5;
    for (int code = 0; code < combos; ++code) {
      Spec s{1, {}, {}};
      bool any_pass = false;
      for (int i = 0, x = code; i < backers; ++i, x /= 5) {
        s.covers.push_back({0});
        s.outcomes.push_back(kOutcomes[static_cast<std::size_t>(x % 5)]);
        any_pass = any_pass || x % 5 == 0;
      }
      const AuditReport rep = audit(inputs_for({{make_contract("K", s), s}}));
      ASSERT_EQ(rep.obligations.num, any_pass ? 1u : 0u) << "backers " << backers << " code " << code;
      ASSERT_EQ(rep.obligations.den, 1u);
      ++cases;
    }
  }
  EXPECT_EQ(cases, 1u + 5u + 25u + 125u + 625u);
});

namespace {

// A strict reader of the XML audit_junit writes: the declaration, then only
// elements (no text), attribute values quoted with ", holding no raw < or ",
// every & starting one of the five entities or a decimal character reference,
// and no control byte. Returns "" when well formed, else what is wrong where.
std::string xml_problem(const std::string& x) {
  std::size_t i = x.find("?>");
  if (x.rfind("<?xml ", 0) != 0 || i == std::string::npos) return "no XML declaration";
  i += 2;
  int depth = 0;
  auto at = [&](std::size_t k) { return "at byte " + std::to_string(k); };
  while (i < x.size()) {
    const char ch = x[i];
    if (ch == ' ' || ch == '\n') {
      ++i;
      continue;
    }
    if (ch != '<') return "text outside a tag " + at(i);
    if (x.compare(i, 4, "<!--") == 0) {  // a comment: no "--" inside, closed by "-->"
      const std::size_t end = x.find("--", i + 4);
      if (end == std::string::npos || x.compare(end, 3, "-->") != 0) return "malformed comment " + at(i);
      i = end + 3;
      continue;
    }
    const bool closing = i + 1 < x.size() && x[i + 1] == '/';
    i += closing ? 2 : 1;
    while (i < x.size() && (std::isalnum(static_cast<unsigned char>(x[i])) || x[i] == '-')) ++i;
    for (;;) {
      while (i < x.size() && x[i] == ' ') ++i;
      if (i >= x.size()) return "unterminated tag";
      if (x[i] == '>') {
        depth += closing ? -1 : 1;
        ++i;
        break;
      }
      if (x.compare(i, 2, "/>") == 0) {
        i += 2;
        break;
      }
      const std::size_t name = i;
      while (i < x.size() && (std::isalnum(static_cast<unsigned char>(x[i])) || x[i] == '-' || x[i] == '_')) ++i;
      if (i == name || x.compare(i, 2, "=\"") != 0) return "malformed attribute " + at(i);
      for (i += 2; i < x.size() && x[i] != '"'; ++i) {
        const auto c = static_cast<unsigned char>(x[i]);
        if (c == '<' || c < 0x20 || c == 0x7f) return "raw character " + std::to_string(c) + " in a value " + at(i);
        if (c != '&') continue;
        const std::size_t semi = x.find(';', i);
        const std::string ent = semi == std::string::npos ? "" : x.substr(i + 1, semi - i - 1);
        const bool ok =
            ent == "amp" || ent == "lt" || ent == "gt" || ent == "quot" || ent == "apos" ||
            (ent.size() > 1 && ent[0] == '#' && ent.find_first_not_of("0123456789", 1) == std::string::npos);
        if (!ok) return "stray & " + at(i);
        i = semi;
      }
      if (i >= x.size()) return "unterminated value";
      ++i;
    }
    if (depth < 0) return "unbalanced closing tag " + at(i);
  }
  return depth == 0 ? "" : "unclosed element";
}

std::size_t count_of(const std::string& x, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = 0; (p = x.find(what, p)) != std::string::npos; ++p) ++n;
  return n;
}

}  // namespace

POPPER_FALSIFIER("FALSIFY-ENGINE-015", [](const popper::Params&) {
  EXPECT_TRUE(rc::check("the JUnit XML is honest and well formed", [] {
    const std::string specials = "ab<>&\"' \x01\n\t;#";
    auto reason = [&] {
      const auto n = static_cast<std::size_t>(*rc::gen::inRange(0, 10));
      std::string r;
      for (std::size_t k = 0; k < n; ++k)
        r += specials[static_cast<std::size_t>(*rc::gen::inRange(0, static_cast<int>(specials.size())))];
      return r;
    };
    const std::vector<std::string> mutant_outcomes = {"killed", "survived", "not_reached", "not_run", ""};
    AuditInputs in;
    in.have_mutants = true;
    std::size_t cases = 0, failures = 0, skipped = 0;
    const int ncontracts = *rc::gen::inRange(1, 4);
    for (int ci = 0; ci < ncontracts; ++ci) {
      Spec s{0, {}, {}};
      const int ntests = *rc::gen::inRange(0, 5);
      for (int t = 0; t < ntests; ++t) {
        s.covers.push_back({});
        s.outcomes.push_back(*rc::gen::elementOf(kOutcomes));
      }
      Contract c = make_contract("J" + std::to_string(ci) + reason(), s);
      AuditInputs one = inputs_for({{c, s}});
      for (std::size_t t = 0; t < c.falsification_tests.size(); ++t) {
        auto& ft = c.falsification_tests[t];
        const std::string& o = s.outcomes[t];
        ++cases;
        failures += o == "failed";
        skipped += o == "skipped" || o == "unbound" || o == "not_run";
        if (auto it = one.results.find(ft.id); it != one.results.end()) it->second.reason = reason();
        const int nm = *rc::gen::inRange(0, 3);
        for (int m = 0; m < nm; ++m) {
          const std::string mid = "m" + std::to_string(m);
          ft.mutants.push_back({mid, reason(), "", {}});
          const std::string mo = *rc::gen::elementOf(mutant_outcomes);
          ++cases;
          failures += mo == "survived" || mo == "not_reached";
          skipped += mo == "not_run" || mo.empty();
          if (!mo.empty()) in.mutants.push_back({c.stem, ft.id, mid, "", mo, reason(), {}});
        }
      }
      in.contracts.contracts.push_back(c);
      in.bound_ids.insert(in.bound_ids.end(), one.bound_ids.begin(), one.bound_ids.end());
      in.results.insert(one.results.begin(), one.results.end());
    }
    const int norphans = *rc::gen::inRange(0, 3);
    for (int k = 0; k < norphans; ++k) in.bound_ids.push_back("FALSIFY-ORPHAN-" + std::to_string(k) + reason());
    cases += static_cast<std::size_t>(norphans);
    failures += static_cast<std::size_t>(norphans);

    const std::string x = audit_junit(audit(in).json);
    const std::string problem = xml_problem(x);
    RC_LOG() << problem << "\n" << x;
    RC_ASSERT(problem.empty());
    RC_ASSERT(count_of(x, "<testcase ") == cases);
    RC_ASSERT(count_of(x, "<failure ") == failures);
    RC_ASSERT(count_of(x, "<skipped ") == skipped);
  }));
});
