// The audit computation (rules in audit.hpp).
#include "popper/audit.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "popper/binding.hpp"
#include "popper/mutant.hpp"

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

}  // namespace

AuditReport audit(const AuditInputs& in) {
  AuditReport rep;
  FailureList failures;
  const std::set<std::string> bound(in.bound_ids.begin(), in.bound_ids.end());
  auto outcome_of = [&](const std::string& id) -> IdResult {
    if (auto it = in.results.find(id); it != in.results.end()) return it->second;
    if (!bound.count(id)) return {"unbound", "UNBOUND: no binding registered and no result"};
    return {"not_run", "bound but no result in the given test results"};
  };
  auto mutants_of = [&](const std::string& test_id) {
    std::vector<const MutantResult*> out;
    for (const auto& m : in.mutants)
      if (m.test_id == test_id) out.push_back(&m);
    return out;
  };

  std::set<std::string> named;
  Fraction tot_eq, tot_ob, tot_harness_run, tot_power, tot_with_mutants;
  std::map<std::string, std::size_t> tot_tests, tot_bench;
  std::size_t tot_test_count = 0, tot_bench_count = 0;
  nlohmann::json contracts_json = nlohmann::json::array();
  std::string md_contracts;

  for (const auto& c : in.contracts.contracts) {
    nlohmann::json cj;
    cj["contract"] = c.stem;
    cj["file"] = c.path;

    // ---- tests and harnesses, with their power ----
    std::map<std::string, std::size_t> tcount, hcount;
    nlohmann::json tests = nlohmann::json::array();
    std::string md_rows;
    Fraction power, with_mutants;
    auto add_row = [&](const std::string& id, const std::string& kind, const IdResult& r,
                       const std::vector<Mutant>& declared, bool is_test) {
      named.insert(id);
      if (r.outcome == "failed") failures.add(id, fmt::format("{} failed: {}", id, md_cell(r.reason, 300)));
      if (r.outcome == "unbound") failures.add(id, fmt::format("{} is UNBOUND: nothing is bound to it, so nothing was tested", id));
      if (r.outcome == "not_run" && !POPPER_MUTANT("audit-ignores-not-run")) failures.add(id, fmt::format("{} did not run: it is bound but no result file holds it", id));
      std::size_t killed = 0;
      nlohmann::json mj = nlohmann::json::array();
      for (const auto& d : declared) {
        const MutantResult* res = nullptr;
        for (const auto* m : mutants_of(id))
          if (m->mutant_id == d.id) res = m;
        const std::string outcome = res ? res->outcome : (in.have_mutants ? "not_run" : "not_checked");
        killed += outcome == "killed";
        mj.push_back({{"id", d.id}, {"description", d.description}, {"path", d.path}, {"outcome", outcome},
                      {"detail", res ? res->detail : ""},
                      {"by_site", res ? nlohmann::json(res->by_site) : nlohmann::json::object()}});
        if (in.have_mutants && (outcome == "survived" || outcome == "not_reached"))
          failures.add(id + "/" + d.id,
                       fmt::format("{} cannot detect {} ({}){}", id, d.id, d.description,
                                   outcome == "not_reached" ? ": its mutation point was never reached" : ": the test passed with it"));
      }
      if (in.have_mutants && is_test && declared.empty())
        failures.add(id + "/mutants", fmt::format("{} declares no mutant, so nothing shows it can fail", id));
      if (is_test && !declared.empty()) ++with_mutants.num;
      if (is_test) ++with_mutants.den;
      power.num += killed;
      power.den += declared.size();
      const std::string power_text =
          declared.empty() ? "none declared"
                           : in.have_mutants ? fmt::format("{}/{} killed", killed, declared.size())
                                             : fmt::format("{} declared, not run", declared.size());
      tests.push_back({{"id", id}, {"kind", kind}, {"outcome", r.outcome}, {"reason", r.reason},
                       {"backends", evidence_json(r.backends)}, {"declines", r.declines}, {"sites", r.sites},
                       {"mutants", mj}, {"power", power_text}});
      // A path-specific mutant shows where it was caught (which leg of the CPU matrix).
      std::string md_power = power_text;
      for (const auto& m : mj) {
        if (m["path"].get<std::string>().empty() || m["by_site"].empty()) continue;
        std::vector<std::string> sites;
        for (const auto& [site, o] : m["by_site"].items()) sites.push_back(site + " " + o.get<std::string>());
        md_power += fmt::format("; {} ({}): {}", m["id"].get<std::string>(), m["path"].get<std::string>(), fmt::join(sites, ", "));
      }
      md_rows += fmt::format("| {} | {} | {} | {} | {} | {} |\n", id, kind, r.outcome, md_cell(evidence_text(r.backends)),
                             md_cell(md_power, 400), md_cell(r.reason, 160));
    };
    for (const auto& t : c.falsification_tests) {
      const IdResult r = outcome_of(t.id);
      ++tcount[r.outcome];
      ++tot_tests[r.outcome];
      ++tot_test_count;
      add_row(t.id, "falsification", r, t.mutants, true);
    }
    for (const auto& h : c.kani_harnesses) {
      const IdResult r = outcome_of(h.id);
      ++hcount[r.outcome];
      add_row(h.id, fmt::format("harness (bound {})", h.bound ? std::to_string(*h.bound) : "?"), r, h.mutants, false);
    }

    // ---- benchmark claims ----
    std::map<std::string, std::size_t> bcount;
    for (const auto& b : c.benchmarks) {
      named.insert(b.id);
      IdResult r{"not_measured",
                 in.have_bench_claims ? "no row in the bench claims file"
                                      : "no bench claims given (run make bench-compare)",
};
      if (auto it = in.bench_claims.find(b.id); it != in.bench_claims.end()) r = it->second;
      ++bcount[r.outcome];
      ++tot_bench[r.outcome];
      ++tot_bench_count;
      if (claim_fails(r.outcome, in.require_claims))
        failures.add(b.id, fmt::format("{} {}: {}", b.id, r.outcome, md_cell(r.reason, 300)));
      tests.push_back({{"id", b.id}, {"kind", "benchmark"}, {"outcome", r.outcome}, {"reason", r.reason}});
      md_rows += fmt::format("| {} | benchmark | {} | | | {} |\n", b.id, r.outcome, md_cell(r.reason, 160));
    }

    // ---- obligations: a passing backer, and evidence on every required backend ----
    Fraction ob{0, c.obligations.size()};
    nlohmann::json obs = nlohmann::json::array();
    std::string md_obs;
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
      std::vector<std::string> missing;
      const std::vector<std::string> wanted = POPPER_MUTANT("audit-ignores-backends") ? std::vector<std::string>{} : o.backends;
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
      const bool covered = !passed.empty() && missing.empty();
      if (backers.empty()) why = "no test covers it";
      if (!passed.empty() && !missing.empty()) {
        std::vector<std::string> have;
        for (const auto& want : o.backends)
          if (std::none_of(missing.begin(), missing.end(), [&](const std::string& m) { return m.rfind(want + ":", 0) == 0; }))
            have.push_back(want);
        why = fmt::format("{} only; {}", have.empty() ? evidence_text(evidence) : fmt::format("{}", fmt::join(have, ", ")),
                          fmt::join(missing, "; "));
      }
      ob.num += covered ? 1 : 0;
      obs.push_back({{"id", o.id}, {"applies_to", o.applies_to}, {"covered", covered}, {"backed_by", backers},
                     {"passed", passed}, {"backends_required", o.backends}, {"evidence", evidence_json(evidence)},
                     {"missing", missing}, {"why_not", covered ? "" : why}});
      md_obs += fmt::format("| {} | {} | {} | {} | {} |\n", o.id, o.applies_to, covered ? "yes" : "**no**",
                            md_cell(evidence_text(evidence), 300),
                            covered ? fmt::format("passed: {}", fmt::join(passed, ", ")) : md_cell(why, 300));
    }

    // ---- equations with at least one obligation ----
    Fraction eq{0, c.equations.size()};
    for (const auto& e : c.equations)
      if (std::any_of(c.obligations.begin(), c.obligations.end(),
                      [&](const Obligation& o) { return o.applies_to == e.name || o.applies_to == "all"; }))
        ++eq.num;

    // ---- qa_gate: PASS when every check passed, FAIL when one failed, else INCOMPLETE ----
    std::string gate = "none";
    std::vector<std::string> gate_notes;
    if (c.qa_gate) {
      bool any_fail = false, all_pass = true;
      for (const auto& chk : c.qa_gate->checks) {
        std::string state;
        if (const Equation* e = c.find_equation(chk)) {
          bool some = false;
          std::vector<std::string> uncovered;  // named, so an "all" obligation left open is seen as one cause
          for (const auto& oj : obs)
            if (oj["applies_to"] == e->name || oj["applies_to"] == "all") {
              some = true;
              if (!oj["covered"].get<bool>()) uncovered.push_back(oj["id"].get<std::string>());
            }
          state = !some                ? "no obligations"
                  : uncovered.empty() ? "passed"
                                      : fmt::format("uncovered obligations ({})", fmt::join(uncovered, ", "));
        } else if (c.find_test(chk) || c.find_harness(chk)) {
          state = outcome_of(chk).outcome;
        } else {
          auto it = in.bench_claims.find(chk);
          state = it == in.bench_claims.end() ? "not_measured" : it->second.outcome;
          if (state == "met") state = "passed";
          if (state == "not_met") state = "failed";
        }
        if (state == "failed") any_fail = true;
        if (state != "passed") {
          all_pass = false;
          gate_notes.push_back(chk + ": " + state);
        }
      }
      gate = any_fail ? "FAIL" : all_pass ? "PASS" : "INCOMPLETE";
      if (gate == "FAIL")
        failures.add(c.qa_gate->id, fmt::format("qa_gate {} of {} is FAIL ({})", c.qa_gate->id, c.stem,
                                                fmt::join(gate_notes, "; ")));
    }

    tot_eq.num += eq.num;
    tot_eq.den += eq.den;
    tot_ob.num += ob.num;
    tot_ob.den += ob.den;
    const std::size_t hran = hcount["passed"] + hcount["failed"];
    tot_harness_run.num += hran;
    tot_harness_run.den += c.kani_harnesses.size();
    tot_power.num += power.num;
    tot_power.den += power.den;
    tot_with_mutants.num += with_mutants.num;
    tot_with_mutants.den += with_mutants.den;

    cj["equations_with_obligations"] = fraction_json(eq);
    cj["obligations_covered"] = fraction_json(ob);
    cj["obligations"] = obs;
    cj["falsification_tests"] = {{"total", c.falsification_tests.size()}, {"passed", tcount["passed"]},
                                 {"failed", tcount["failed"]}, {"skipped", tcount["skipped"]},
                                 {"unbound", tcount["unbound"]}, {"not_run", tcount["not_run"]}};
    cj["harnesses"] = {{"total", c.kani_harnesses.size()}, {"ran", hran}, {"passed", hcount["passed"]},
                       {"failed", hcount["failed"]}, {"skipped", hcount["skipped"]}, {"unbound", hcount["unbound"]},
                       {"not_run", hcount["not_run"]}};
    cj["benchmarks"] = {{"total", c.benchmarks.size()}, {"met", bcount["met"]}, {"not_met", bcount["not_met"]},
                        {"inconclusive", bcount["inconclusive"]}, {"partially_measured", bcount["partially_measured"]},
                        {"not_measured", bcount["not_measured"]}};
    cj["mutants"] = {{"killed", power.num}, {"declared", power.den}, {"tests_with_mutants", fraction_json(with_mutants)}};
    cj["qa_gate"] = {{"verdict", gate}, {"open_checks", gate_notes}};
    cj["results"] = tests;
    contracts_json.push_back(cj);

    md_contracts += fmt::format(
        "\n## {}\n\n- equations with obligations: {}\n- obligations covered (a backing test bound, ran and "
        "passed, with evidence on every backend the obligation names): {}\n"
        "- falsification tests: {} passed, {} failed, {} skipped, {} unbound, {} not run (of {})\n"
        "- harnesses run: {} ({} passed)\n- power: mutants killed {}; falsification tests declaring mutants {}\n"
        "- benchmark claims: {} met, {} not met, {} inconclusive, {} partially measured, {} not measured (of {})\n"
        "- qa_gate {}: **{}**{}\n",
        c.stem, fmt_fraction(eq), fmt_fraction(ob), tcount["passed"], tcount["failed"], tcount["skipped"],
        tcount["unbound"], tcount["not_run"], c.falsification_tests.size(),
        fmt_fraction({hran, c.kani_harnesses.size()}), hcount["passed"],
        in.have_mutants ? fmt_fraction(power) : fmt::format("not run ({} declared)", power.den),
        fmt_fraction(with_mutants), bcount["met"], bcount["not_met"], bcount["inconclusive"],
        bcount["partially_measured"], bcount["not_measured"], c.benchmarks.size(), c.qa_gate ? c.qa_gate->id : "", gate,
        gate_notes.empty() ? "" : fmt::format(" (open: {})", fmt::join(gate_notes, "; ")));
    if (!c.obligations.empty())
      md_contracts +=
          "\n| obligation | applies to | covered | evidence (backend: site, how chosen) | why |\n|---|---|---|---|---|\n" +
          md_obs;
    if (!md_rows.empty())
      md_contracts += "\n| id | kind | outcome | backends | power | reason |\n|---|---|---|---|---|---|\n" + md_rows;
  }

  for (const auto& id : in.bound_ids)
    if (!named.count(id) && !POPPER_MUTANT("audit-no-orphans")) rep.orphans.push_back(id);
  std::sort(rep.orphans.begin(), rep.orphans.end());
  rep.orphans.erase(std::unique(rep.orphans.begin(), rep.orphans.end()), rep.orphans.end());
  for (const auto& id : rep.orphans)
    failures.add(id, fmt::format("orphan binding {}: no contract names it (remove it or add the test)", id));
  rep.obligations = tot_ob;

  // ---- waivers: a live one moves its failure to `waived`; an expired one is a failure itself ----
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
      rep.failures.push_back(fmt::format("waiver for {} expired on {} ({}:{}): fix it or renew the waiver with a reason",
                                         w.id, w.expires, w.pos.file, w.pos.line));
    else if (!used.count(w.id))
      rep.warnings.push_back(fmt::format("waiver for {} ({}:{}) excuses nothing: remove it", w.id, w.pos.file, w.pos.line));
    waivers_json.push_back({{"id", w.id}, {"reason", w.reason}, {"expires", w.expires}, {"expired", expired},
                            {"used", used.count(w.id) > 0}});
  }

  rep.json = {{"contracts", contracts_json},
              {"total",
               {{"contracts", in.contracts.contracts.size()},
                {"equations_with_obligations", fraction_json(tot_eq)},
                {"obligations_covered", fraction_json(tot_ob)},
                {"falsification_tests",
                 {{"total", tot_test_count}, {"passed", tot_tests["passed"]}, {"failed", tot_tests["failed"]},
                  {"skipped", tot_tests["skipped"]}, {"unbound", tot_tests["unbound"]},
                  {"not_run", tot_tests["not_run"]}}},
                {"harnesses_run", fraction_json(tot_harness_run)},
                {"mutants", {{"ran", in.have_mutants}, {"killed", tot_power.num}, {"declared", tot_power.den},
                             {"tests_with_mutants", fraction_json(tot_with_mutants)}}},
                {"benchmarks",
                 {{"total", tot_bench_count}, {"met", tot_bench["met"]}, {"not_met", tot_bench["not_met"]},
                  {"inconclusive", tot_bench["inconclusive"]}, {"partially_measured", tot_bench["partially_measured"]},
                  {"not_measured", tot_bench["not_measured"]}}}}},
              {"orphans", rep.orphans},
              {"failures", rep.failures},
              {"waived", rep.waived},
              {"waivers", waivers_json},
              {"warnings", rep.warnings},
              {"exit_code", rep.exit_code()}};

  std::string verdict = rep.failures.empty() ? "**PASS** (exit 0)" : fmt::format("**FAIL** (exit 1): {} reason(s) below", rep.failures.size());
  rep.markdown = fmt::format(
      "# Contract coverage\n\nComputed by `popper audit` from test results; covered means bound, ran and passed, "
      "with evidence on every backend the obligation names.\n\nVerdict: {}\n\n"
      "| total | figure |\n|---|---|\n| contracts | {} |\n| equations with obligations | {} |\n"
      "| obligations covered | {} |\n| falsification tests passed | {} |\n| falsification tests failed | {} |\n"
      "| falsification tests skipped | {} |\n| falsification tests UNBOUND | {} |\n| falsification tests not run | {} |\n"
      "| harnesses run | {} |\n| falsification tests declaring mutants | {} |\n| mutants killed (power) | {} |\n"
      "| benchmark claims met | {} |\n| orphan bindings | {} |\n",
      verdict, in.contracts.contracts.size(), fmt_fraction(tot_eq), fmt_fraction(tot_ob),
      fmt_fraction({tot_tests["passed"], tot_test_count}), fmt_fraction({tot_tests["failed"], tot_test_count}),
      fmt_fraction({tot_tests["skipped"], tot_test_count}), fmt_fraction({tot_tests["unbound"], tot_test_count}),
      fmt_fraction({tot_tests["not_run"], tot_test_count}), fmt_fraction(tot_harness_run),
      fmt_fraction(tot_with_mutants),
      in.have_mutants ? fmt_fraction(tot_power) : fmt::format("not run ({} declared; popper audit --mutants)", tot_power.den),
      fmt_fraction({tot_bench["met"], tot_bench_count}),
      rep.orphans.empty() ? "none" : fmt::format("{}", fmt::join(rep.orphans, ", ")));
  if (!rep.failures.empty()) {
    rep.markdown += "\n## Why the audit fails\n\n";
    for (const auto& f : rep.failures) rep.markdown += "- " + md_cell(f, 400) + "\n";
  }
  if (!rep.waived.empty()) {
    rep.markdown += "\n## Waived\n\n";
    for (const auto& w : rep.waived) rep.markdown += "- " + md_cell(w, 400) + "\n";
  }
  for (const auto& w : rep.warnings) rep.markdown += "\nwarning: " + w + "\n";
  rep.markdown += md_contracts;
  return rep;
}

}  // namespace popper
