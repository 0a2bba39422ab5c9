// pv's own validation rules, under pv's rule names (provable-contracts,
// crates/provable-contracts/src/schema/validator.rs and types.rs). The rule
// table switches them off under strict, where popper's own rules apply.
#include <map>
#include <set>

#include <fmt/format.h>

#include "contract/checks.hpp"
#include "contract/rules.hpp"
#include "contract/schema.hpp"

namespace popper::checks {

namespace {
using rules::Rule;
bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }
}  // namespace

void pv_rules(const Contract& c, Diagnostics& diags) {
  const Profile p = c.profile;
  if (p != Profile::Pv) return;
  auto report = [&](Rule r, const SourcePos& pos, std::string msg) { rules::report(diags, p, r, pos, std::move(msg)); };

  if (!c.has_references)
    report(Rule::PvReferencesEmpty, c.metadata_pos,
           "metadata.references is missing or empty; every contract cites its source (a paper, a spec, a seed)");
  if (blank(c.version))
    report(Rule::PvVersionEmpty, c.metadata_pos, "metadata.version is empty; give it, e.g. \"1.0.0\"");

  // Kernel contracts must prove what they claim; other kinds are exempt (pv's kind.rs).
  const bool kernel = c.kind == "kernel";
  if (kernel) {
    if (c.equations.empty())
      report(Rule::PvNoEquations, c.metadata_pos,
             "a kernel contract needs at least one equation; add 'equations:' or set metadata.kind");
    for (const auto& e : c.equations)
      if (blank(e.formula))
        report(Rule::PvFormulaEmpty, e.pos,
               fmt::format("equation '{}' has no formula; write it", schema::quoted(e.name)));
    if (!c.qa_gate)
      report(Rule::PvNoQaGate, c.metadata_pos, "no qa_gate: a kernel contract should define its quality gate");
  }
  if (kernel || c.kind == "competitive-parity") {
    std::vector<std::string> missing;
    if (c.obligations.empty()) missing.emplace_back("proof_obligations");
    if (c.falsification_tests.empty()) missing.emplace_back("falsification_tests");
    if (c.kani_harnesses.empty()) missing.emplace_back("kani_harnesses");
    if (!missing.empty()) {
      std::string list;
      for (std::size_t i = 0; i < missing.size(); ++i) list += (i ? ", " : "") + missing[i];
      report(Rule::PvProvability, c.metadata_pos,
             fmt::format("a {} contract must carry proof_obligations, falsification_tests and kani_harnesses; it has "
                         "no {} (or set metadata.kind if it is not a kernel)",
                         c.kind, list));
    }
    if (c.falsification_tests.size() < c.obligations.size())
      report(Rule::PvProvability, c.metadata_pos,
             fmt::format("falsification_tests ({}) < proof_obligations ({}): some claim has no test that could "
                         "refute it",
                         c.falsification_tests.size(), c.obligations.size()));
  }

  std::map<std::string, const Obligation*> formals;
  for (const auto& o : c.obligations) {
    if (blank(o.property))
      report(Rule::PvPropertyEmpty, o.pos, fmt::format("obligation {} has no property; state the claim", o.id));
    if (o.has_formal && !o.formal.empty()) {
      auto [it, inserted] = formals.emplace(o.formal, &o);
      if (!inserted)
        report(Rule::PvDuplicateFormal, o.pos,
               fmt::format("obligation {} repeats the formal predicate of {}", o.id, it->second->id));
    }
  }
  for (const auto& t : c.falsification_tests) {
    if (blank(t.prediction))
      report(Rule::PvPredictionEmpty, t.pos,
             fmt::format("falsification test {} makes no prediction; every test states what it predicts", t.id));
    if (blank(t.if_fails))
      report(Rule::PvIfFailsEmpty, t.pos,
             fmt::format("falsification test {} has no if_fails; say what a failure would mean", t.id));
  }
  for (const auto& h : c.kani_harnesses) {
    if (blank(h.obligation_written))
      report(Rule::PvHarnessObligationEmpty, h.pos,
             fmt::format("kani harness {} names no obligation; every harness verifies one", h.id));
    if (!h.has_bound)
      report(Rule::PvBoundMissing, h.pos,
             fmt::format("kani harness {} has no bound; Kani needs an unwind bound", h.id));
  }
}

}  // namespace popper::checks
