#include <algorithm>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "contract/checks.hpp"
#include "contract/model.hpp"
#include "contract/resolve.hpp"
#include "contract/rules.hpp"
#include "contract/schema.hpp"
#include "popper/mutant.hpp"

namespace popper::checks {

namespace {

using rules::Rule;

const std::vector<std::string> kCapabilities = {"cuda", "vulkan", "ggml", "libtorch", "avx2", "avx512", "avx512_bf16"};
// pv's applies_to enum; strict accepts these besides equation names.
const std::vector<std::string> kAppliesToWords = {"all", "scalar", "simd", "converter"};

// "RMSNORM-KERNEL-V1-PO-003" or "RMSNORM-KERNEL-V1-PO-003 (derived)" in messages.
std::string shown_id(const Obligation& o) { return o.id_derived ? o.id + " (derived id)" : o.id; }

std::string hint_or(const std::string& hint, const std::string& otherwise) {
  return hint.empty() ? otherwise : "did you mean '" + hint + "'?";
}

std::string derived_range(const Contract& c) {
  std::vector<std::string> ids;
  for (const auto& o : c.obligations)
    if (o.id_derived) ids.push_back(o.id);
  if (ids.empty()) return {};
  return ids.size() == 1 ? ids[0] : ids.front() + " .. " + ids.back();
}

void check_obligations(const Contract& c, Diagnostics& diags) {
  static const std::regex kObligationId(R"(^[A-Z][A-Z0-9]*(-[A-Z0-9]+)*-PO-[0-9]{3,}$)");
  std::vector<std::string> equation_names;
  for (const auto& e : c.equations) equation_names.push_back(e.name);
  std::vector<std::string> applies_candidates = equation_names;
  applies_candidates.insert(applies_candidates.end(), kAppliesToWords.begin(), kAppliesToWords.end());

  for (std::size_t i = 0; i < c.obligations.size(); ++i) {
    const Obligation& o = c.obligations[i];
    if (o.id.empty())
      rules::report(diags, c.profile, Rule::ObligationIdMissing, o.pos,
                    fmt::format("this proof obligation has no id, so no test or harness can name it; add 'id: {}' "
                                "(popper migrate adds ids to a whole pv library)",
                                model::suggested_obligation_id(c, i)));
    else if (!o.id_derived && !std::regex_match(o.id, kObligationId))
      rules::report(diags, c.profile, Rule::ObligationIdFormat, o.pos,
                    fmt::format("obligation id '{}' does not have the form <PREFIX>-PO-NNN; rename it, e.g. '{}'",
                                schema::quoted(o.id), model::suggested_obligation_id(c, i)));
    const std::string who = o.id.empty() ? "'" + schema::quoted(o.property) + "'" : shown_id(o);

    const bool applies_known =
        o.applies_to.empty() || c.find_equation(o.applies_to) ||
        std::find(kAppliesToWords.begin(), kAppliesToWords.end(), o.applies_to) != kAppliesToWords.end();
    if (!applies_known && !POPPER_MUTANT("loader-applies-to-unchecked"))
      rules::report(diags, c.profile, Rule::AppliesToUnresolved, o.applies_to_pos,
                    fmt::format("obligation {} applies_to '{}', which names no equation of this contract and is not "
                                "one of all, scalar, simd, converter; {}",
                                who, schema::quoted(o.applies_to),
                                hint_or(schema::did_you_mean(o.applies_to, applies_candidates),
                                        "add that equation or name an existing one")));

    if (!o.requires_ref.empty()) {
      if (o.type != "postcondition")
        rules::report(diags, c.profile, Rule::RequiresOnWrongType, o.requires_pos,
                      fmt::format("obligation {} has 'requires', which links a postcondition to its precondition, "
                                  "but its type is {}; make it a postcondition or remove 'requires'",
                                  who, o.type));
      const resolve::ObligationRef r = resolve::obligation(c, o.requires_ref);
      if (r.index == resolve::npos) {
        std::vector<std::string> ids;
        for (const auto& x : c.obligations)
          if (&x != &o && !x.id.empty()) ids.push_back(x.id);
        rules::report(diags, c.profile, Rule::RequiresUnresolved, o.requires_pos,
                      fmt::format("obligation {} requires '{}', which {}; {}", who, schema::quoted(o.requires_ref),
                                  r.how == resolve::How::Ambiguous ? "matches several obligations"
                                                                   : "names no obligation of this contract",
                                  hint_or(schema::did_you_mean(o.requires_ref, ids),
                                          "name the precondition obligation by its id")));
      }
    }
    if (!o.applies_to_phase.empty()) {
      if (o.type != "loop_invariant" && o.type != "loop_variant")
        rules::report(diags, c.profile, Rule::PhaseOnWrongType, o.applies_to_phase_pos,
                      fmt::format("obligation {} has 'applies_to_phase', which only loop_invariant and loop_variant "
                                  "obligations take, but its type is {}",
                                  who, o.type));
      if (std::find(c.phases.begin(), c.phases.end(), o.applies_to_phase) == c.phases.end())
        rules::report(
            diags, c.profile, Rule::PhaseUnresolved, o.applies_to_phase_pos,
            fmt::format("obligation {} applies_to_phase '{}', which is no kernel_structure phase of this "
                        "contract; {}",
                        who, schema::quoted(o.applies_to_phase),
                        hint_or(schema::did_you_mean(o.applies_to_phase, c.phases),
                                c.phases.empty() ? "add kernel_structure.phases with that name"
                                                 : "phases are: " + fmt::format("{}", fmt::join(c.phases, ", ")))));
    }
    if (!o.parent_contract.empty()) {
      if (o.type != "subcontract")
        rules::report(diags, c.profile, Rule::ParentOnWrongType, o.parent_contract_pos,
                      fmt::format("obligation {} has 'parent_contract', which only subcontract obligations take, but "
                                  "its type is {}",
                                  who, o.type));
      if (std::find(c.depends_on.begin(), c.depends_on.end(), o.parent_contract) == c.depends_on.end())
        rules::report(diags, c.profile, Rule::ParentNotInDependsOn, o.parent_contract_pos,
                      fmt::format("obligation {} refines parent_contract '{}', which metadata.depends_on does not "
                                  "list; add it there",
                                  who, schema::quoted(o.parent_contract)));
    }
  }
}

void check_harnesses(Contract& c, Diagnostics& diags) {
  std::vector<std::string> obligation_ids;
  for (const auto& o : c.obligations)
    if (!o.id.empty()) obligation_ids.push_back(o.id);
  for (auto& h : c.kani_harnesses) {
    if (h.obligation_written.empty()) continue;  // blank: POP-V013 / PV-SCHEMA-011
    const resolve::ObligationRef r = resolve::obligation(c, h.obligation_written);
    if (r.index != resolve::npos) {
      h.obligation = c.obligations[r.index].id;
      continue;
    }
    std::string otherwise = "give the obligation that id or name an existing one";
    if (c.profile == Profile::Pv) {
      const std::string range = derived_range(c);
      otherwise = fmt::format(
          "name an obligation by its id{}, its property text or its position (1..{}); until "
          "then this harness backs no obligation",
          range.empty() ? "" : " (" + range + ")", c.obligations.size());
    }
    rules::report(
        diags, c.profile, Rule::HarnessObligationUnresolved, h.obligation_pos.line ? h.obligation_pos : h.pos,
        fmt::format("harness {} names obligation '{}', which {}; {}", h.id, schema::quoted(h.obligation_written),
                    r.how == resolve::How::Ambiguous ? "matches several obligations"
                                                     : "no proof obligation of this contract has as its id",
                    hint_or(schema::did_you_mean(h.obligation_written, obligation_ids), otherwise)));
  }
}

void check_tests(const Contract& c, Diagnostics& diags) {
  std::vector<std::string> obligation_ids;
  for (const auto& o : c.obligations)
    if (!o.id.empty()) obligation_ids.push_back(o.id);
  for (const auto& t : c.falsification_tests)
    for (std::size_t i = 0; i < t.covers.size(); ++i)
      if (!c.find_obligation(t.covers[i]))
        rules::report(
            diags, c.profile, Rule::CoversUnresolved, i < t.covers_pos.size() ? t.covers_pos[i] : t.pos,
            fmt::format("test {} covers '{}', which is not an obligation id of this contract; {}", t.id,
                        schema::quoted(t.covers[i]),
                        hint_or(schema::did_you_mean(t.covers[i], obligation_ids), "name an existing obligation id")));

  auto check_requires = [&](const std::string& id, const std::vector<std::string>& req, const SourcePos& pos) {
    for (const auto& r : req)
      if (std::find(kCapabilities.begin(), kCapabilities.end(), r) == kCapabilities.end())
        rules::report(diags, c.profile, Rule::CapabilityUnknown, pos,
                      fmt::format("{} requires unknown capability '{}'; known capabilities are {}", id,
                                  schema::quoted(r), fmt::join(kCapabilities, ", ")));
  };
  for (const auto& t : c.falsification_tests) check_requires(t.id, t.requires_, t.pos);
  for (const auto& h : c.kani_harnesses) check_requires(h.id, h.requires_, h.pos);

  // Mutants: unique per test; a falsification test without one has shown no power.
  auto check_mutants = [&](const std::string& id, const std::vector<Mutant>& ms) {
    std::set<std::string> seen;
    for (const auto& m : ms)
      if (!m.id.empty() && !seen.insert(m.id).second)
        rules::report(
            diags, c.profile, Rule::MutantDuplicate, m.pos,
            fmt::format("{} declares mutant '{}' twice; give each mutant its own id", id, schema::quoted(m.id)));
  };
  for (const auto& t : c.falsification_tests) {
    check_mutants(t.id, t.mutants);
    if (t.mutants.empty())
      rules::report(diags, c.profile, Rule::TestWithoutMutant, t.pos,
                    fmt::format("{} declares no mutant, so nothing shows it can fail; add 'mutants:' with a broken "
                                "variant taken from its if_fails",
                                t.id));
  }
  for (const auto& h : c.kani_harnesses) check_mutants(h.id, h.mutants);
}

void check_benchmarks(const Contract& c, Diagnostics& diags) {
  for (const auto& b : c.benchmarks) {
    if ((b.metric == "peak_fraction" || b.metric == "throughput") && !b.denominator.empty())
      rules::report(diags, c.profile, Rule::BenchmarkInconsistent, b.pos,
                    fmt::format("benchmark {} uses metric {}, which divides by {}; remove 'denominator'", b.id,
                                b.metric, b.metric == "throughput" ? "nothing but the time" : "the measured peak"));
    if ((b.metric == "time_ratio" || b.metric == "throughput_ratio") && b.denominator.empty())
      rules::report(diags, c.profile, Rule::BenchmarkInconsistent, b.pos,
                    fmt::format("benchmark {} uses metric {} but has no 'denominator' tier; add one", b.id, b.metric));
    if (b.scope && (b.metric != "throughput_ratio" || (b.op != ">=" && b.op != ">")))
      rules::report(diags, c.profile, Rule::BenchmarkInconsistent, b.pos,
                    fmt::format("benchmark {} has a 'scope', which bounds how far above its denominator a "
                                "throughput_ratio claim of '>=' or '>' can reach; it has metric {} and op '{}'",
                                b.id, b.metric, b.op));
    if (b.scope && !(b.scope->attainable_peak_fraction > 0 && b.scope->attainable_peak_fraction <= 1))
      rules::report(diags, c.profile, Rule::BenchmarkInconsistent, b.pos,
                    fmt::format("benchmark {}: scope.attainable_peak_fraction is {}; give a fraction of the peak "
                                "over 0 and at most 1",
                                b.id, b.scope->attainable_peak_fraction));
  }
}

void check_qa_gate(const Contract& c, Diagnostics& diags) {
  if (!c.qa_gate) return;
  std::vector<std::string> names;
  for (const auto& e : c.equations) names.push_back(e.name);
  for (const auto& t : c.falsification_tests) names.push_back(t.id);
  for (const auto& h : c.kani_harnesses) names.push_back(h.id);
  for (const auto& b : c.benchmarks) names.push_back(b.id);
  for (const auto& o : c.obligations)
    if (!o.id.empty()) names.push_back(o.id);
  for (std::size_t i = 0; i < c.qa_gate->checks.size(); ++i) {
    const std::string& chk = c.qa_gate->checks[i];
    const resolve::CheckRef r = resolve::qa_check(c, chk);
    if (r.how != resolve::CheckHow::None && r.how != resolve::CheckHow::Ambiguous) continue;
    const std::string otherwise =
        c.profile == Profile::Pv
            ? "popper cannot evaluate it; name an equation, a test, harness, benchmark or obligation id, or a test's "
              "rule or an obligation's property text"
            : "name an equation, a falsification test, a harness, a benchmark or an obligation id";
    rules::report(diags, c.profile, Rule::QaCheckUnresolved, c.qa_gate->check_pos[i],
                  fmt::format("qa_gate check '{}' {}; {}", schema::quoted(chk),
                              r.how == resolve::CheckHow::Ambiguous ? "matches several parts of this contract"
                                                                    : "names nothing in this contract",
                              hint_or(schema::did_you_mean(chk, names), otherwise)));
  }
}

void check_unbacked(const Contract& c, Diagnostics& diags) {
  if (!rules::enabled(Rule::ObligationUnbacked, c.profile)) return;
  for (const auto& o : c.obligations) {
    if (o.id.empty()) continue;
    const bool backed = std::any_of(c.falsification_tests.begin(), c.falsification_tests.end(),
                                    [&](const FalsificationTest& t) {
                                      return std::find(t.covers.begin(), t.covers.end(), o.id) != t.covers.end();
                                    }) ||
                        std::any_of(c.kani_harnesses.begin(), c.kani_harnesses.end(),
                                    [&](const KaniHarness& h) { return h.obligation == o.id; });
    if (!backed)
      rules::report(diags, c.profile, Rule::ObligationUnbacked, o.pos,
                    fmt::format("obligation {} is backed by no test ('covers' of a falsification test or a harness "
                                "'obligation'); it will count as uncovered",
                                o.id));
  }
}

}  // namespace

void references(Contract& c, Diagnostics& diags) {
  check_obligations(c, diags);
  check_harnesses(c, diags);
  check_tests(c, diags);
  check_benchmarks(c, diags);
  check_qa_gate(c, diags);
  check_unbacked(c, diags);
}

}  // namespace popper::checks
