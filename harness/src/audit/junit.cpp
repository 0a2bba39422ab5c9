// JUnit XML of an audit report, for CI test views: one <testsuite> per
// contract, one <testcase> per falsification test, harness and benchmark
// claim (classname = contract, name = id), and one per declared mutant
// (name = "<id> ~ <mutant>": killed passes, survived or never reached fails).
//   failed, not_met, survived, not_reached   -> <failure message=reason>
//   skipped, UNBOUND, not measured, inconclusive, not run, mutant not run
//                                             -> <skipped message=reason>
// A skipped case is not a pass: the audit's own exit code still fails on
// UNBOUND and not-run ids; JUnit has no third state to say so.
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/text.hpp"
#include "popper/audit.hpp"
#include "popper/mutant.hpp"
#include "popper/version.hpp"

namespace popper {

namespace {

// Every text the XML carries goes through here (the mutant shows the
// falsifier notices markup that was not escaped).
std::string xml(const std::string& s) {
  if (POPPER_MUTANT("junit-no-escape")) return s;
  return markup_escape(s);
}

enum class Verdict { Pass, Fail, Skip };

Verdict verdict_of(const std::string& outcome) {
  if (outcome == "passed" || outcome == "met" || outcome == "killed") return Verdict::Pass;
  if (outcome == "failed" || outcome == "not_met" || outcome == "survived" || outcome == "not_reached")
    return Verdict::Fail;
  if (POPPER_MUTANT("junit-skip-as-pass")) return Verdict::Pass;
  return Verdict::Skip;
}

struct Case {
  std::string name, outcome, message;
};

std::string case_xml(const std::string& suite, const Case& c) {
  const std::string head = fmt::format("    <testcase classname=\"{}\" name=\"{}\"", xml(suite), xml(c.name));
  const std::string msg = c.message.empty() ? c.outcome : c.outcome + ": " + c.message;
  switch (verdict_of(c.outcome)) {
    case Verdict::Pass: return head + "/>\n";
    case Verdict::Fail:
      return fmt::format("{}>\n      <failure message=\"{}\" type=\"{}\"/>\n    </testcase>\n", head, xml(msg),
                         xml(c.outcome));
    case Verdict::Skip: return fmt::format("{}>\n      <skipped message=\"{}\"/>\n    </testcase>\n", head, xml(msg));
  }
  return head + "/>\n";
}

struct SuiteTotals {
  std::size_t tests = 0, failures = 0, skipped = 0;
};

// One <testsuite> of `cases`, added to `all`.
std::string suite_xml(const std::string& name, const std::vector<Case>& cases, SuiteTotals& all) {
  SuiteTotals t;
  std::string body;
  for (const auto& k : cases) {
    const Verdict v = verdict_of(k.outcome);
    ++t.tests;
    t.failures += v == Verdict::Fail;
    t.skipped += v == Verdict::Skip;
    body += case_xml(name, k);
  }
  all.tests += t.tests;
  all.failures += t.failures;
  all.skipped += t.skipped;
  return fmt::format(
      "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n{}  </testsuite>\n",
      xml(name), t.tests, t.failures, t.skipped, body);
}

}  // namespace

std::string audit_junit(const nlohmann::json& report) {
  std::string suites;
  SuiteTotals all;
  for (const auto& c : report.at("contracts")) {
    std::vector<Case> cases;
    for (const auto& r : c.at("results")) {
      const std::string id = r.at("id").get<std::string>();
      const std::string outcome = r.at("outcome").get<std::string>();
      cases.push_back({id, outcome == "unbound" ? "UNBOUND" : outcome, r.value("reason", "")});
      if (!r.contains("mutants")) continue;
      for (const auto& m : r.at("mutants")) {
        const std::string detail = m.value("detail", "");
        cases.push_back({id + " ~ " + m.at("id").get<std::string>(), m.at("outcome").get<std::string>(),
                         m.value("description", "") + (detail.empty() ? "" : " (" + detail + ")")});
      }
    }
    suites += suite_xml(c.at("contract").get<std::string>(), cases, all);
  }
  // A bound id no contract names: an orphan fails the audit, so it fails here.
  if (report.contains("orphans") && !report.at("orphans").empty()) {
    std::vector<Case> cases;
    for (const auto& o : report.at("orphans"))
      cases.push_back({o.get<std::string>(), "failed", "bound in the test binary but named by no contract"});
    suites += suite_xml("orphans", cases, all);
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      // A comment, not a <properties> element: docs/junit.xsd (what CI test views read) has none on testsuites.
      "<!-- written by popper {} -->\n"
      "<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n{}</testsuites>\n",
      build_id(),
      xml("popper audit" +
          (report.contains("headline") ? ": " + report.at("headline").get<std::string>() : std::string())),
      all.tests, all.failures, all.skipped, suites);
}

}  // namespace popper
