// The audit computation (rules in audit.hpp).
#include "popper/audit.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "popper/binding.hpp"
#include "popper/mutant.hpp"
#include "popper/version.hpp"

namespace popper {

namespace {

std::string fmt_fraction(const Fraction& f) {
  if (f.den == 0) return "0/0 (n/a)";
  return fmt::format("{}/{} ({:.1f}%)", f.num, f.den, f.percent());
}

nlohmann::json fraction_json(const Fraction& f) {
  nlohmann::json j = {{"covered", f.num}, {"total", f.den}};
  j["percent"] = f.den == 0 ? nlohmann::json(nullptr) : nlohmann::json(std::round(f.percent() * 10) / 10);
  return j;
}

std::string md_cell(std::string s, std::size_t max = 200) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '|', '/');
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}

// "cpu:avx512 (native auto); cpu:avx2 (emulated:Haswell auto, native forced)"
std::string evidence_text(const std::map<std::string, std::vector<EvidenceSite>>& ev) {
  std::vector<std::string> parts;
  for (const auto& [tag, sites] : ev) {
    std::vector<std::string> where;
    for (const auto& s : sites) where.push_back(s.site + " " + s.how);
    parts.push_back(fmt::format("{} ({})", tag, fmt::join(where, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

nlohmann::json evidence_json(const std::map<std::string, std::vector<EvidenceSite>>& ev) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [tag, sites] : ev) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& s : sites) arr.push_back({{"site", s.site}, {"how", s.how}});
    j[tag] = arr;
  }
  return j;
}

bool claim_fails(const std::string& verdict, bool require_claims) {
  if (verdict == "not_met") return true;
  return require_claims && verdict != "met";
}

struct FailureList {
  std::vector<std::pair<std::string, std::string>> items;  // (waivable id, sentence)
  void add(const std::string& id, const std::string& sentence) { items.emplace_back(id, sentence); }
};

// What the audit finds in one contract, for its JSON entry and its section of
// the Markdown.
struct ContractAudit {
  nlohmann::json results = nlohmann::json::array();  // tests, harnesses and claims
  std::string md_rows;
  std::map<std::string, std::size_t> tests, harnesses, claims;  // outcome -> count
  Fraction power, with_mutants, equations, obligations;
  nlohmann::json obligation_json = nlohmann::json::array();
  std::string md_obligations;
  std::string gate = "none";
  std::vector<std::string> gate_notes;
};

// Sums over the contracts, for the report's totals.
struct Totals {
  Fraction eq, ob, harness_run, power, with_mutants;
  Fraction bench_power;  // bench mutants killed / run
  std::map<std::string, std::size_t> tests, bench;
  std::size_t test_count = 0, bench_count = 0;
};

// Walks the contracts in order, collecting the failures (in the order the
// report lists them), the ids some contract names and the totals.
class Auditor {
 public:
  explicit Auditor(const AuditInputs& in) : in_(in), bound_(in.bound_ids.begin(), in.bound_ids.end()) {}

  ContractAudit contract(const Contract& c) {
    ContractAudit a;
    for (const auto& t : c.falsification_tests) {
      const IdResult r = outcome_of(t.id);
      ++a.tests[r.outcome];
      ++totals.tests[r.outcome];
      ++totals.test_count;
      add_row(a, t.id, "falsification", r, t.mutants, true);
    }
    for (const auto& h : c.kani_harnesses) {
      const IdResult r = outcome_of(h.id);
      ++a.harnesses[r.outcome];
      add_row(a, h.id, fmt::format("harness (bound {})", h.bound ? std::to_string(*h.bound) : "?"), r, h.mutants,
              false);
    }
    add_claims(a, c);
    add_obligations(a, c);
    a.equations = {0, c.equations.size()};  // equations with at least one obligation
    for (const auto& e : c.equations)
      if (std::any_of(c.obligations.begin(), c.obligations.end(),
                      [&](const Obligation& o) { return o.applies_to == e.name || o.applies_to == "all"; }))
        ++a.equations.num;
    judge_qa_gate(a, c);
    add_to_totals(a, c);
    return a;
  }

  // Bindings no contract names.
  std::vector<std::string> orphans() {
    std::vector<std::string> out;
    for (const auto& id : in_.bound_ids)
      if (!named_.count(id) && !POPPER_MUTANT("audit-no-orphans")) out.push_back(id);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    for (const auto& id : out)
      failures.add(id, fmt::format("orphan binding {}: no contract names it (remove it or add the test)", id));
    return out;
  }

  FailureList failures;
  Totals totals;

  // Every bench mutant run: its power beside the tests' (caught / run), a
  // failure for each that survived. Waivable as <family>/<mutant>.
  std::pair<nlohmann::json, std::string> bench_mutants() {
    std::string md;
    for (const auto& m : in_.bench_mutants) {
      const bool killed = m.killed();
      ++totals.bench_power.den;
      if (killed) ++totals.bench_power.num;
      else
        failures.add(m.family + "/" + m.mutant,
                     fmt::format("bench mutant {} survived in family {}: {} of {} hand row(s) reported '{}'; {}",
                                 m.mutant, m.family, m.caught, m.rows, m.caught_by, md_cell(m.detail, 300)));
      md += fmt::format("| {} | {} | {} | {}/{} | {} |\n", m.family, m.mutant, killed ? "killed" : "**SURVIVED**",
                        m.caught, m.rows, md_cell(m.caught_by));
    }
    if (!md.empty())
      md = "\n## Bench mutants\n\n| family | mutant | outcome | hand rows caught | caught by "
           "|\n|---|---|---|---|---|\n" +
           md;
    return {bench_mutant_results_json(in_.bench_mutants)["bench_mutants"], md};
  }

 private:
  IdResult outcome_of(const std::string& id) const {
    if (auto it = in_.results.find(id); it != in_.results.end()) return it->second;
    if (!bound_.count(id)) return {"unbound", "UNBOUND: no binding registered and no result"};
    return {"not_run", "bound but no result in the given test results"};
  }

  const MutantResult* mutant_result(const std::string& test_id, const std::string& mutant_id) const {
    const MutantResult* res = nullptr;
    for (const auto& m : in_.mutants)
      if (m.test_id == test_id && m.mutant_id == mutant_id) res = &m;
    return res;
  }

  // One test or harness: its outcome and its power (mutants killed).
  void add_row(ContractAudit& a, const std::string& id, const std::string& kind, const IdResult& r,
               const std::vector<Mutant>& declared, bool is_test) {
    named_.insert(id);
    if (r.outcome == "failed") failures.add(id, fmt::format("{} failed: {}", id, md_cell(r.reason, 300)));
    if (r.outcome == "unbound")
      failures.add(id, fmt::format("{} is UNBOUND: nothing is bound to it, so nothing was tested", id));
    if (r.outcome == "not_run" && !POPPER_MUTANT("audit-ignores-not-run"))
      failures.add(id, fmt::format("{} did not run: it is bound but no result file holds it", id));
    std::size_t killed = 0;
    nlohmann::json mj = nlohmann::json::array();
    for (const auto& d : declared) {
      const MutantResult* res = mutant_result(id, d.id);
      const std::string outcome = res ? res->outcome : (in_.have_mutants ? "not_run" : "not_checked");
      killed += outcome == "killed";
      mj.push_back({{"id", d.id},
                    {"description", d.description},
                    {"path", d.path},
                    {"outcome", outcome},
                    {"detail", res ? res->detail : ""},
                    {"by_site", res ? nlohmann::json(res->by_site) : nlohmann::json::object()}});
      if (in_.have_mutants && (outcome == "survived" || outcome == "not_reached"))
        failures.add(id + "/" + d.id, fmt::format("{} cannot detect {} ({}){}", id, d.id, d.description,
                                                  outcome == "not_reached" ? ": its mutation point was never reached"
                                                                           : ": the test passed with it"));
    }
    if (in_.have_mutants && is_test && declared.empty())
      failures.add(id + "/mutants", fmt::format("{} declares no mutant, so nothing shows it can fail", id));
    if (is_test && !declared.empty()) ++a.with_mutants.num;
    if (is_test) ++a.with_mutants.den;
    a.power.num += killed;
    a.power.den += declared.size();
    const std::string power_text = declared.empty()   ? "none declared"
                                   : in_.have_mutants ? fmt::format("{}/{} killed", killed, declared.size())
                                                      : fmt::format("{} declared, not run", declared.size());
    a.results.push_back({{"id", id},
                         {"kind", kind},
                         {"outcome", r.outcome},
                         {"reason", r.reason},
                         {"backends", evidence_json(r.backends)},
                         {"declines", r.declines},
                         {"sites", r.sites},
                         {"mutants", mj},
                         {"power", power_text}});
    // A path-specific mutant shows where it was caught (which leg of the CPU matrix).
    std::string md_power = power_text;
    for (const auto& m : mj) {
      if (m["path"].get<std::string>().empty() || m["by_site"].empty()) continue;
      std::vector<std::string> sites;
      for (const auto& [site, o] : m["by_site"].items()) sites.push_back(site + " " + o.get<std::string>());
      md_power += fmt::format("; {} ({}): {}", m["id"].get<std::string>(), m["path"].get<std::string>(),
                              fmt::join(sites, ", "));
    }
    a.md_rows += fmt::format("| {} | {} | {} | {} | {} | {} |\n", id, kind, r.outcome,
                             md_cell(evidence_text(r.backends)), md_cell(md_power, 400), md_cell(r.reason, 160));
  }

  void add_claims(ContractAudit& a, const Contract& c) {
    for (const auto& b : c.benchmarks) {
      named_.insert(b.id);
      IdResult r{"not_measured", in_.have_bench_claims ? "no row in the bench claims file"
                                                       : "no bench claims given (run make bench-compare)"};
      if (auto it = in_.bench_claims.find(b.id); it != in_.bench_claims.end()) r = it->second;
      ++a.claims[r.outcome];
      ++totals.bench[r.outcome];
      ++totals.bench_count;
      if (claim_fails(r.outcome, in_.require_claims))
        failures.add(b.id, fmt::format("{} {}: {}", b.id, r.outcome, md_cell(r.reason, 300)));
      a.results.push_back({{"id", b.id}, {"kind", "benchmark"}, {"outcome", r.outcome}, {"reason", r.reason}});
      a.md_rows += fmt::format("| {} | benchmark | {} | | | {} |\n", b.id, r.outcome, md_cell(r.reason, 160));
    }
  }

  // An obligation is covered by a passing backer with evidence on every backend it requires.
  void add_obligations(ContractAudit& a, const Contract& c) {
    a.obligations = {0, c.obligations.size()};
    for (const auto& o : c.obligations) {
      std::vector<std::string> backers, passed, declines;
      std::map<std::string, std::vector<EvidenceSite>> evidence;
      std::string why;
      for (const auto& t : c.falsification_tests)
        if (std::find(t.covers.begin(), t.covers.end(), o.id) != t.covers.end()) backers.push_back(t.id);
      for (const auto& h : c.kani_harnesses)
        if (h.obligation == o.id) backers.push_back(h.id);
      for (const auto& id : backers) {
        const IdResult r = outcome_of(id);
        for (const auto& d : r.declines)
          if (std::find(declines.begin(), declines.end(), d) == declines.end()) declines.push_back(d);
        if (r.outcome == "passed" || (POPPER_MUTANT("audit-counts-skips") && r.outcome == "skipped")) {
          passed.push_back(id);
          for (const auto& [tag, sites] : r.backends)
            for (const auto& s : sites)
              if (std::find(evidence[tag].begin(), evidence[tag].end(), s) == evidence[tag].end())
                evidence[tag].push_back(s);
        } else {
          why += (why.empty() ? "" : "; ") + id + " " + r.outcome;
        }
      }
      const auto missing = missing_backends(o, evidence, declines);
      const bool covered = !passed.empty() && missing.empty();
      if (backers.empty()) why = "no test covers it";
      if (!passed.empty() && !missing.empty()) {
        std::vector<std::string> have;
        for (const auto& want : o.backends)
          if (std::none_of(missing.begin(), missing.end(),
                           [&](const std::string& m) { return m.rfind(want + ":", 0) == 0; }))
            have.push_back(want);
        why = fmt::format("{} only; {}",
                          have.empty() ? evidence_text(evidence) : fmt::format("{}", fmt::join(have, ", ")),
                          fmt::join(missing, "; "));
      }
      a.obligations.num += covered ? 1 : 0;
      a.obligation_json.push_back({{"id", o.id},
                                   {"applies_to", o.applies_to},
                                   {"covered", covered},
                                   {"backed_by", backers},
                                   {"passed", passed},
                                   {"backends_required", o.backends},
                                   {"evidence", evidence_json(evidence)},
                                   {"missing", missing},
                                   {"why_not", covered ? "" : why}});
      a.md_obligations += fmt::format("| {} | {} | {} | {} | {} |\n", o.id, o.applies_to, covered ? "yes" : "**no**",
                                      md_cell(evidence_text(evidence), 300),
                                      covered ? fmt::format("passed: {}", fmt::join(passed, ", ")) : md_cell(why, 300));
    }
  }

  // The backends `o` requires that no passing backer has evidence on: "cuda: not run" or "cuda: declined (why)".
  static std::vector<std::string> missing_backends(const Obligation& o,
                                                   const std::map<std::string, std::vector<EvidenceSite>>& evidence,
                                                   const std::vector<std::string>& declines) {
    std::vector<std::string> missing;
    const std::vector<std::string> wanted =
        POPPER_MUTANT("audit-ignores-backends") ? std::vector<std::string>{} : o.backends;
    for (const auto& want : wanted) {
      bool seen = false;
      for (const auto& [tag, sites] : evidence) seen = seen || backend_matches(want, tag);
      if (!seen) {
        std::string note = want + ": not run";
        for (const auto& d : declines)
          if (d.rfind(want + ":", 0) == 0) note = want + ": declined (" + d.substr(want.size() + 2) + ")";
        missing.push_back(note);
      }
    }
    return missing;
  }

  // qa_gate: PASS when every check passed, FAIL when one failed, else INCOMPLETE.
  void judge_qa_gate(ContractAudit& a, const Contract& c) {
    if (!c.qa_gate) return;
    bool any_fail = false, all_pass = true;
    for (const auto& chk : c.qa_gate->checks) {
      const std::string state = check_state(a, c, chk);
      if (state == "failed") any_fail = true;
      if (state != "passed") {
        all_pass = false;
        a.gate_notes.push_back(fmt::format("{}: {}", chk, state));
      }
    }
    a.gate = any_fail ? "FAIL" : all_pass ? "PASS" : "INCOMPLETE";
    if (a.gate == "FAIL")
      failures.add(c.qa_gate->id,
                   fmt::format("qa_gate {} of {} is FAIL ({})", c.qa_gate->id, c.stem, fmt::join(a.gate_notes, "; ")));
  }

  // One qa_gate check: an equation (its obligations covered), a test or harness, or a benchmark claim.
  std::string check_state(const ContractAudit& a, const Contract& c, const std::string& chk) const {
    if (const Equation* e = c.find_equation(chk)) {
      bool some = false;
      std::vector<std::string> uncovered;  // named, so an "all" obligation left open is seen as one cause
      for (const auto& oj : a.obligation_json)
        if (oj["applies_to"] == e->name || oj["applies_to"] == "all") {
          some = true;
          if (!oj["covered"].get<bool>()) uncovered.push_back(oj["id"].get<std::string>());
        }
      return !some               ? "no obligations"
             : uncovered.empty() ? "passed"
                                 : fmt::format("uncovered obligations ({})", fmt::join(uncovered, ", "));
    }
    if (c.find_test(chk) || c.find_harness(chk)) return outcome_of(chk).outcome;
    auto it = in_.bench_claims.find(chk);
    const std::string state = it == in_.bench_claims.end() ? "not_measured" : it->second.outcome;
    return state == "met" ? "passed" : state == "not_met" ? "failed" : state;
  }

  void add_to_totals(ContractAudit& a, const Contract& c) {
    totals.eq.num += a.equations.num;
    totals.eq.den += a.equations.den;
    totals.ob.num += a.obligations.num;
    totals.ob.den += a.obligations.den;
    totals.harness_run.num += a.harnesses["passed"] + a.harnesses["failed"];
    totals.harness_run.den += c.kani_harnesses.size();
    totals.power.num += a.power.num;
    totals.power.den += a.power.den;
    totals.with_mutants.num += a.with_mutants.num;
    totals.with_mutants.den += a.with_mutants.den;
  }

  const AuditInputs& in_;
  const std::set<std::string> bound_;
  std::set<std::string> named_;  // every id some contract names
};

nlohmann::json contract_json(const Contract& c, ContractAudit& a) {
  const std::size_t ran = a.harnesses["passed"] + a.harnesses["failed"];
  nlohmann::json cj;
  cj["contract"] = c.stem;
  cj["file"] = c.path;
  cj["equations_with_obligations"] = fraction_json(a.equations);
  cj["obligations_covered"] = fraction_json(a.obligations);
  cj["obligations"] = a.obligation_json;
  cj["falsification_tests"] = {{"total", c.falsification_tests.size()}, {"passed", a.tests["passed"]},
                               {"failed", a.tests["failed"]},           {"skipped", a.tests["skipped"]},
                               {"unbound", a.tests["unbound"]},         {"not_run", a.tests["not_run"]}};
  cj["harnesses"] = {{"total", c.kani_harnesses.size()},  {"ran", ran},
                     {"passed", a.harnesses["passed"]},   {"failed", a.harnesses["failed"]},
                     {"skipped", a.harnesses["skipped"]}, {"unbound", a.harnesses["unbound"]},
                     {"not_run", a.harnesses["not_run"]}};
  cj["benchmarks"] = {{"total", c.benchmarks.size()},
                      {"met", a.claims["met"]},
                      {"not_met", a.claims["not_met"]},
                      {"inconclusive", a.claims["inconclusive"]},
                      {"partially_measured", a.claims["partially_measured"]},
                      {"not_measured", a.claims["not_measured"]}};
  cj["mutants"] = {
      {"killed", a.power.num}, {"declared", a.power.den}, {"tests_with_mutants", fraction_json(a.with_mutants)}};
  cj["qa_gate"] = {{"verdict", a.gate}, {"open_checks", a.gate_notes}};
  cj["results"] = a.results;
  return cj;
}

std::string contract_markdown(const Contract& c, ContractAudit& a, bool have_mutants) {
  std::string md = fmt::format(
      "\n## {}\n\n- equations with obligations: {}\n- obligations covered (a backing test bound, ran and "
      "passed, with evidence on every backend the obligation names): {}\n"
      "- falsification tests: {} passed, {} failed, {} skipped, {} unbound, {} not run (of {})\n"
      "- harnesses run: {} ({} passed)\n- power: mutants killed {}; falsification tests declaring mutants {}\n"
      "- benchmark claims: {} met, {} not met, {} inconclusive, {} partially measured, {} not measured (of {})\n"
      "- qa_gate {}: **{}**{}\n",
      c.stem, fmt_fraction(a.equations), fmt_fraction(a.obligations), a.tests["passed"], a.tests["failed"],
      a.tests["skipped"], a.tests["unbound"], a.tests["not_run"], c.falsification_tests.size(),
      fmt_fraction({a.harnesses["passed"] + a.harnesses["failed"], c.kani_harnesses.size()}), a.harnesses["passed"],
      have_mutants ? fmt_fraction(a.power) : fmt::format("not run ({} declared)", a.power.den),
      fmt_fraction(a.with_mutants), a.claims["met"], a.claims["not_met"], a.claims["inconclusive"],
      a.claims["partially_measured"], a.claims["not_measured"], c.benchmarks.size(), c.qa_gate ? c.qa_gate->id : "",
      a.gate, a.gate_notes.empty() ? "" : fmt::format(" (open: {})", fmt::join(a.gate_notes, "; ")));
  if (!c.obligations.empty())
    md +=
        "\n| obligation | applies to | covered | evidence (backend: site, how chosen) | why "
        "|\n|---|---|---|---|---|\n" +
        a.md_obligations;
  if (!a.md_rows.empty())
    md += "\n| id | kind | outcome | backends | power | reason |\n|---|---|---|---|---|---|\n" + a.md_rows;
  return md;
}

// A live waiver moves its failure to `waived`; an expired one is a failure itself.
nlohmann::json apply_waivers(const AuditInputs& in, const FailureList& failures, AuditReport& rep) {
  const std::string today = in.today.empty() ? today_utc() : in.today;
  std::set<std::string> used;
  nlohmann::json waivers_json = nlohmann::json::array();
  for (const auto& [id, sentence] : failures.items) {
    const Waiver* live = nullptr;
    for (const auto& w : in.waivers)
      if (w.id == id && (w.expires >= today || POPPER_MUTANT("audit-expired-waiver-still-excuses"))) live = &w;
    if (live) {
      used.insert(live->id);
      rep.waived.push_back(fmt::format("{} (waived until {}: {})", sentence, live->expires, live->reason));
    } else {
      rep.failures.push_back(sentence);
    }
  }
  for (const auto& w : in.waivers) {
    const bool expired = w.expires < today;
    if (expired)
      rep.failures.push_back(
          fmt::format("waiver for {} expired on {} ({}:{}): fix it or renew the waiver with a reason", w.id, w.expires,
                      w.pos.file, w.pos.line));
    else if (!used.count(w.id))
      rep.warnings.push_back(
          fmt::format("waiver for {} ({}:{}) excuses nothing: remove it", w.id, w.pos.file, w.pos.line));
    waivers_json.push_back({{"id", w.id},
                            {"reason", w.reason},
                            {"expires", w.expires},
                            {"expired", expired},
                            {"used", used.count(w.id) > 0}});
  }
  return waivers_json;
}

nlohmann::json totals_json(const AuditInputs& in, Totals& t) {
  return {
      {"contracts", in.contracts.contracts.size()},
      {"equations_with_obligations", fraction_json(t.eq)},
      {"obligations_covered", fraction_json(t.ob)},
      {"falsification_tests",
       {{"total", t.test_count},
        {"passed", t.tests["passed"]},
        {"failed", t.tests["failed"]},
        {"skipped", t.tests["skipped"]},
        {"unbound", t.tests["unbound"]},
        {"not_run", t.tests["not_run"]}}},
      {"harnesses_run", fraction_json(t.harness_run)},
      {"mutants",
       {{"ran", in.have_mutants},
        {"killed", t.power.num},
        {"declared", t.power.den},
        {"tests_with_mutants", fraction_json(t.with_mutants)}}},
      {"bench_mutants", {{"ran", in.have_bench_mutants}, {"killed", t.bench_power.num}, {"run", t.bench_power.den}}},
      {"benchmarks",
       {{"total", t.bench_count},
        {"met", t.bench["met"]},
        {"not_met", t.bench["not_met"]},
        {"inconclusive", t.bench["inconclusive"]},
        {"partially_measured", t.bench["partially_measured"]},
        {"not_measured", t.bench["not_measured"]}}}};
}

// The two verdicts side by side, so that a correctness PASS is never read as
// a performance one: "correctness PASS (exit 0); performance claims measured
// 2 of 18: met 1, not met 1, inconclusive 0, partially measured 0, not
// measured 16" (every writer prints this line; a claim counts as measured when
// it has a verdict other than not_measured).
std::string headline(const nlohmann::json& total, int exit_code, std::size_t failures) {
  const auto& b = total.at("benchmarks");
  const int n = b.at("total").get<int>(), not_measured = b.at("not_measured").get<int>();
  const std::string correctness =
      exit_code == 0 ? "correctness PASS (exit 0)" : fmt::format("FAIL (exit 1): {} reason(s)", failures);
  if (n == 0) return correctness + "; no performance claims";
  return fmt::format(
      "{}; performance claims measured {} of {}: met {}, not met {}, inconclusive {}, partially "
      "measured {}, not measured {}",
      correctness, n - not_measured, n, b.at("met").get<int>(), b.at("not_met").get<int>(),
      b.at("inconclusive").get<int>(), b.at("partially_measured").get<int>(), not_measured);
}

std::string summary_markdown(const AuditInputs& in, Totals& t, const AuditReport& rep) {
  const std::string verdict = "**" + rep.json.at("headline").get<std::string>() + "**";
  std::string md = fmt::format(
      "# Contract coverage\n\nComputed by `popper audit` from test results; covered means bound, ran and passed, "
      "with evidence on every backend the obligation names.\n\nWritten by popper {}.\n\nVerdict: {}\n\n"
      "| total | figure |\n|---|---|\n| contracts | {} |\n| equations with obligations | {} |\n"
      "| obligations covered | {} |\n| falsification tests passed | {} |\n| falsification tests failed | {} |\n"
      "| falsification tests skipped | {} |\n| falsification tests UNBOUND | {} |\n| falsification tests not run | {} "
      "|\n"
      "| harnesses run | {} |\n| falsification tests declaring mutants | {} |\n| mutants killed (power) | {} |\n"
      "| bench mutants killed (power of the benchmarks) | {} |\n"
      "| benchmark claims met | {} |\n| orphan bindings | {} |\n",
      build_id(), verdict, in.contracts.contracts.size(), fmt_fraction(t.eq), fmt_fraction(t.ob),
      fmt_fraction({t.tests["passed"], t.test_count}), fmt_fraction({t.tests["failed"], t.test_count}),
      fmt_fraction({t.tests["skipped"], t.test_count}), fmt_fraction({t.tests["unbound"], t.test_count}),
      fmt_fraction({t.tests["not_run"], t.test_count}), fmt_fraction(t.harness_run), fmt_fraction(t.with_mutants),
      in.have_mutants ? fmt_fraction(t.power)
                      : fmt::format("not run ({} declared; popper audit --mutants)", t.power.den),
      in.have_bench_mutants ? fmt_fraction(t.bench_power) : "not run (popper bench mutants)",
      fmt_fraction({t.bench["met"], t.bench_count}),
      rep.orphans.empty() ? "none" : fmt::format("{}", fmt::join(rep.orphans, ", ")));
  if (!rep.failures.empty()) {
    md += "\n## Why the audit fails\n\n";
    for (const auto& f : rep.failures) md += "- " + md_cell(f, 400) + "\n";
  }
  if (!rep.waived.empty()) {
    md += "\n## Waived\n\n";
    for (const auto& w : rep.waived) md += "- " + md_cell(w, 400) + "\n";
  }
  for (const auto& w : rep.warnings) md += "\nwarning: " + w + "\n";
  return md;
}

}  // namespace

AuditReport audit(const AuditInputs& in) {
  AuditReport rep;
  Auditor auditor(in);
  nlohmann::json contracts_json = nlohmann::json::array();
  std::string md_contracts;
  for (const auto& c : in.contracts.contracts) {
    auto a = auditor.contract(c);
    contracts_json.push_back(contract_json(c, a));
    md_contracts += contract_markdown(c, a, in.have_mutants);
  }
  auto [bench_mutants_json, md_bench_mutants] = auditor.bench_mutants();
  rep.orphans = auditor.orphans();
  rep.obligations = auditor.totals.ob;
  const auto waivers_json = apply_waivers(in, auditor.failures, rep);
  rep.json = {{"contracts", contracts_json},
              {"total", totals_json(in, auditor.totals)},
              {"orphans", rep.orphans},
              {"failures", rep.failures},
              {"waived", rep.waived},
              {"waivers", waivers_json},
              {"warnings", rep.warnings},
              {"exit_code", rep.exit_code()},
              {"bench_mutants", bench_mutants_json},
              {"popper", build_json()}};
  rep.json["headline"] = headline(rep.json.at("total"), rep.exit_code(), rep.failures.size());
  rep.markdown = summary_markdown(in, auditor.totals, rep) + md_bench_mutants + md_contracts;
  return rep;
}

}  // namespace popper
