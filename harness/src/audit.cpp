#include "popper/audit.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "popper/error.hpp"
#include "popper/io.hpp"

namespace popper {

namespace {

nlohmann::json parse_json_file(const std::string& path) {
  const std::string text = read_file(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not valid JSON: " + e.what());
  }
}

std::string fmt_fraction(const Fraction& f) {
  if (f.den == 0) return "0/0 (n/a)";
  return fmt::format("{}/{} ({:.1f}%)", f.num, f.den, f.percent());
}

nlohmann::json fraction_json(const Fraction& f) {
  nlohmann::json j = {{"covered", f.num}, {"total", f.den}};
  j["percent"] = f.den == 0 ? nlohmann::json(nullptr) : nlohmann::json(std::round(f.percent() * 10) / 10);
  return j;
}

}  // namespace

void read_gtest_results(const std::string& path, std::map<std::string, IdResult>& out) {
  const nlohmann::json doc = parse_json_file(path);
  if (!doc.is_object() || !doc.contains("testsuites") || !doc["testsuites"].is_array())
    throw Error(path + ": not GoogleTest JSON output (no 'testsuites' array)");
  for (const auto& suite : doc["testsuites"]) {
    if (!suite.contains("testsuite") || !suite["testsuite"].is_array()) continue;
    for (const auto& tc : suite["testsuite"]) {
      if (!tc.contains("popper_id") || !tc["popper_id"].is_string()) continue;
      IdResult r;
      r.outcome = tc.value("popper_outcome", "not_run");
      r.reason = tc.value("popper_reason", "");
      // The JSON's own verdict wins over the recorded property if they disagree.
      const bool has_failures = tc.contains("failures") && tc["failures"].is_array() && !tc["failures"].empty();
      if (has_failures) {
        r.outcome = "failed";
        if (r.reason.empty() && tc["failures"][0].contains("failure"))
          r.reason = tc["failures"][0]["failure"].get<std::string>().substr(0, 300);
      }
      out[tc["popper_id"].get<std::string>()] = r;
    }
  }
}

std::vector<std::string> read_bindings(const std::string& path) {
  const nlohmann::json doc = parse_json_file(path);
  if (!doc.is_object() || !doc.contains("bindings") || !doc["bindings"].is_array())
    throw Error(path + ": not a binding list (expected the output of --popper-list-bindings)");
  std::vector<std::string> ids;
  for (const auto& b : doc["bindings"])
    if (b.contains("id") && b["id"].is_string()) ids.push_back(b["id"].get<std::string>());
  return ids;
}

void read_bench_claims(const std::string& path, std::map<std::string, IdResult>& out) {
  const nlohmann::json doc = parse_json_file(path);
  if (!doc.is_object() || !doc.contains("claims") || !doc["claims"].is_array())
    throw Error(path + ": not a bench claims file (expected {\"claims\": [...]})");
  for (const auto& c : doc["claims"])
    if (c.contains("id") && c["id"].is_string())
      out[c["id"].get<std::string>()] = {c.value("verdict", "not_measured"), c.value("detail", "")};
}

AuditReport audit(const AuditInputs& in) {
  AuditReport rep;
  const std::set<std::string> bound(in.bound_ids.begin(), in.bound_ids.end());
  auto outcome_of = [&](const std::string& id) -> IdResult {
    if (auto it = in.results.find(id); it != in.results.end()) return it->second;
    if (!bound.count(id)) return {"unbound", "UNBOUND: no binding registered and no result"};
    return {"not_run", "bound but no result in the given test results"};
  };

  std::set<std::string> named;
  Fraction tot_eq, tot_ob, tot_harness_run;
  std::map<std::string, std::size_t> tot_tests, tot_harness, tot_bench;
  std::size_t tot_test_count = 0, tot_harness_count = 0, tot_bench_count = 0;
  nlohmann::json contracts_json = nlohmann::json::array();
  std::string md_contracts;

  for (const auto& c : in.contracts.contracts) {
    nlohmann::json cj;
    cj["contract"] = c.stem;
    cj["file"] = c.path;

    // Tests and harnesses.
    std::map<std::string, std::size_t> tcount;
    nlohmann::json tests = nlohmann::json::array();
    std::string md_rows;
    auto add_row = [&](const std::string& id, const std::string& kind, const IdResult& r) {
      tests.push_back({{"id", id}, {"kind", kind}, {"outcome", r.outcome}, {"reason", r.reason}});
      std::string reason = r.reason;
      std::replace(reason.begin(), reason.end(), '\n', ' ');
      std::replace(reason.begin(), reason.end(), '|', '/');
      if (reason.size() > 160) reason = reason.substr(0, 157) + "...";
      md_rows += fmt::format("| {} | {} | {} | {} |\n", id, kind, r.outcome, reason);
    };
    for (const auto& t : c.falsification_tests) {
      named.insert(t.id);
      const IdResult r = outcome_of(t.id);
      ++tcount[r.outcome];
      ++tot_tests[r.outcome];
      ++tot_test_count;
      add_row(t.id, "falsification", r);
    }
    std::map<std::string, std::size_t> hcount;
    for (const auto& h : c.kani_harnesses) {
      named.insert(h.id);
      const IdResult r = outcome_of(h.id);
      ++hcount[r.outcome];
      ++tot_harness[r.outcome];
      ++tot_harness_count;
      add_row(h.id, fmt::format("harness (bound {})", h.bound ? std::to_string(*h.bound) : "?"), r);
    }
    std::map<std::string, std::size_t> bcount;
    for (const auto& b : c.benchmarks) {
      named.insert(b.id);
      IdResult r{"not_measured", in.have_bench_claims ? "no row in the bench claims file"
                                                      : "no bench claims given (run make bench-compare)"};
      if (auto it = in.bench_claims.find(b.id); it != in.bench_claims.end()) r = it->second;
      ++bcount[r.outcome];
      ++tot_bench[r.outcome];
      ++tot_bench_count;
      add_row(b.id, "benchmark", r);
    }

    // Obligations: covered = some backing test or harness passed.
    Fraction ob{0, c.obligations.size()};
    nlohmann::json obs = nlohmann::json::array();
    std::string md_obs;
    for (const auto& o : c.obligations) {
      std::vector<std::string> backers;
      for (const auto& t : c.falsification_tests)
        if (std::find(t.covers.begin(), t.covers.end(), o.id) != t.covers.end()) backers.push_back(t.id);
      for (const auto& h : c.kani_harnesses)
        if (h.obligation == o.id) backers.push_back(h.id);
      std::vector<std::string> passed;
      std::string why;
      for (const auto& id : backers) {
        const IdResult r = outcome_of(id);
        if (r.outcome == "passed")
          passed.push_back(id);
        else
          why += (why.empty() ? "" : "; ") + id + " " + r.outcome;
      }
      const bool covered = !passed.empty();
      if (backers.empty()) why = "no test covers it";
      ob.num += covered ? 1 : 0;
      obs.push_back({{"id", o.id}, {"applies_to", o.applies_to}, {"covered", covered}, {"backed_by", backers},
                     {"passed", passed}, {"why_not", covered ? "" : why}});
      md_obs += fmt::format("| {} | {} | {} | {} |\n", o.id, o.applies_to, covered ? "yes" : "**no**",
                            covered ? fmt::format("passed: {}", fmt::join(passed, ", ")) : why);
    }

    // Equations with at least one obligation.
    Fraction eq{0, c.equations.size()};
    for (const auto& e : c.equations)
      if (std::any_of(c.obligations.begin(), c.obligations.end(),
                      [&](const Obligation& o) { return o.applies_to == e.name || o.applies_to == "all"; }))
        ++eq.num;

    // qa_gate: PASS when every check passed, FAIL when any failed, else INCOMPLETE.
    std::string gate = "none";
    std::vector<std::string> gate_notes;
    if (c.qa_gate) {
      bool any_fail = false, all_pass = true;
      for (const auto& chk : c.qa_gate->checks) {
        std::string state;
        if (const Equation* e = c.find_equation(chk)) {
          bool some = false, all = true;
          for (const auto& oj : obs)
            if (oj["applies_to"] == e->name || oj["applies_to"] == "all") {
              some = true;
              all = all && oj["covered"].get<bool>();
            }
          state = !some ? "no obligations" : all ? "passed" : "uncovered obligations";
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
    }

    tot_eq.num += eq.num;
    tot_eq.den += eq.den;
    tot_ob.num += ob.num;
    tot_ob.den += ob.den;
    const std::size_t hran = hcount["passed"] + hcount["failed"];
    tot_harness_run.num += hran;
    tot_harness_run.den += c.kani_harnesses.size();

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
                        {"not_measured", bcount["not_measured"]}};
    cj["qa_gate"] = {{"verdict", gate}, {"open_checks", gate_notes}};
    cj["results"] = tests;
    contracts_json.push_back(cj);

    md_contracts += fmt::format(
        "\n## {}\n\n- equations with obligations: {}\n- obligations covered (a backing test bound, ran and "
        "passed): {}\n- falsification tests: {} passed, {} failed, {} skipped, {} unbound, {} not run (of {})\n"
        "- harnesses run: {} ({} passed)\n- benchmark claims: {} met, {} not met, {} not measured (of {})\n"
        "- qa_gate {}: **{}**{}\n",
        c.stem, fmt_fraction(eq), fmt_fraction(ob), tcount["passed"], tcount["failed"], tcount["skipped"],
        tcount["unbound"], tcount["not_run"], c.falsification_tests.size(),
        fmt_fraction({hran, c.kani_harnesses.size()}), hcount["passed"], bcount["met"], bcount["not_met"],
        bcount["not_measured"], c.benchmarks.size(), c.qa_gate ? c.qa_gate->id : "", gate,
        gate_notes.empty() ? "" : fmt::format(" (open: {})", fmt::join(gate_notes, "; ")));
    if (!c.obligations.empty())
      md_contracts += "\n| obligation | applies to | covered | evidence |\n|---|---|---|---|\n" + md_obs;
    if (!md_rows.empty()) md_contracts += "\n| id | kind | outcome | reason |\n|---|---|---|---|\n" + md_rows;
  }

  for (const auto& id : in.bound_ids)
    if (!named.count(id)) rep.orphans.push_back(id);
  std::sort(rep.orphans.begin(), rep.orphans.end());
  rep.orphans.erase(std::unique(rep.orphans.begin(), rep.orphans.end()), rep.orphans.end());
  rep.obligations = tot_ob;

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
                {"benchmarks",
                 {{"total", tot_bench_count}, {"met", tot_bench["met"]}, {"not_met", tot_bench["not_met"]},
                  {"not_measured", tot_bench["not_measured"]}}}}},
              {"orphans", rep.orphans}};

  rep.markdown = fmt::format(
      "# Contract coverage\n\nComputed by `popper audit` from test results; covered means bound, ran and passed.\n\n"
      "| total | figure |\n|---|---|\n| contracts | {} |\n| equations with obligations | {} |\n"
      "| obligations covered | {} |\n| falsification tests passed | {} |\n| falsification tests failed | {} |\n"
      "| falsification tests skipped | {} |\n| falsification tests UNBOUND | {} |\n| falsification tests not run | {} |\n"
      "| harnesses run | {} |\n| benchmark claims met | {} |\n| orphan bindings | {} |\n",
      in.contracts.contracts.size(), fmt_fraction(tot_eq), fmt_fraction(tot_ob),
      fmt_fraction({tot_tests["passed"], tot_test_count}), fmt_fraction({tot_tests["failed"], tot_test_count}),
      fmt_fraction({tot_tests["skipped"], tot_test_count}), fmt_fraction({tot_tests["unbound"], tot_test_count}),
      fmt_fraction({tot_tests["not_run"], tot_test_count}), fmt_fraction(tot_harness_run),
      fmt_fraction({tot_bench["met"], tot_bench_count}),
      rep.orphans.empty() ? "none" : fmt::format("{}", fmt::join(rep.orphans, ", ")));
  rep.markdown += md_contracts;
  return rep;
}

}  // namespace popper
