// The audit's verdict rules one at a time, so removing any one fails a test
// here (the engine's falsifiers, FALSIFY-ENGINE-007/008/009/012/013, check
// several of them at random in popper_contract_tests). Every test names the
// rule it pins.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "popper/audit.hpp"
#include "popper/contract.hpp"

namespace {

// One contract "v-v1": equation e, obligation V-PO-001 (on e, needing
// `backends`), backed by falsification test FALSIFY-V-001, which is bound and
// passed with evidence on cpu:avx2, and declares mutant m1.
popper::AuditInputs passing(const std::vector<std::string>& backends = {}) {
  popper::Contract c;
  c.stem = "v-v1";
  c.path = "v-v1.yaml";
  c.equations.push_back({"e", "y = x", {}, {}});
  popper::Obligation o;
  o.id = "V-PO-001";
  o.type = "invariant";
  o.property = "p";
  o.applies_to = "e";
  o.backends = backends;
  c.obligations.push_back(o);
  popper::FalsificationTest t;
  t.id = "FALSIFY-V-001";
  t.covers = {"V-PO-001"};
  t.mutants.push_back({"m1", "off by one", "", {}});
  c.falsification_tests.push_back(t);
  popper::AuditInputs in;
  in.contracts.contracts.push_back(c);
  in.bound_ids = {"FALSIFY-V-001"};
  popper::IdResult r("passed", "");
  r.backends["cpu:avx2"].push_back({"native", "auto"});
  in.results["FALSIFY-V-001"] = r;
  in.today = "2026-11-27";
  return in;
}

bool fails_with(const popper::AuditReport& rep, const std::string& text) {
  for (const auto& f : rep.failures)
    if (f.find(text) != std::string::npos) return true;
  return false;
}

std::string failures_of(const popper::AuditReport& rep) {
  std::string s;
  for (const auto& f : rep.failures) s += f + "\n";
  return s;
}

bool covered(const popper::AuditReport& rep) {
  return rep.json["contracts"][0]["obligations"][0]["covered"].get<bool>();
}

}  // namespace

TEST(AuditVerdict, FixturePasses) {
  const auto rep = popper::audit(passing());
  EXPECT_EQ(rep.exit_code(), 0) << failures_of(rep);
  EXPECT_TRUE(covered(rep));
}

// Rule: a failed test fails the audit (exit 1), with the test named.
TEST(AuditVerdict, FailedTestFails) {
  auto in = passing();
  in.results["FALSIFY-V-001"] = {"failed", "expected 1 == 2"};
  const auto rep = popper::audit(in);
  EXPECT_EQ(rep.exit_code(), 1);
  EXPECT_TRUE(fails_with(rep, "FALSIFY-V-001 failed: expected 1 == 2")) << failures_of(rep);
  EXPECT_FALSE(covered(rep));
}

// Rules: a test with no binding and no result is UNBOUND, and fails the audit;
// a bound test with no result did not run, and fails it too.
TEST(AuditVerdict, UnboundAndNotRunTestsFail) {
  auto in = passing();
  in.results.clear();
  in.bound_ids.clear();
  auto rep = popper::audit(in);
  EXPECT_EQ(rep.json["contracts"][0]["falsification_tests"]["unbound"], 1);
  EXPECT_TRUE(fails_with(rep, "FALSIFY-V-001 is UNBOUND")) << failures_of(rep);
  EXPECT_EQ(rep.exit_code(), 1);
  in.bound_ids = {"FALSIFY-V-001"};
  rep = popper::audit(in);
  EXPECT_EQ(rep.json["contracts"][0]["falsification_tests"]["not_run"], 1);
  EXPECT_TRUE(fails_with(rep, "FALSIFY-V-001 did not run")) << failures_of(rep);
  EXPECT_EQ(rep.exit_code(), 1);
}

// Rules (with --mutants): a mutant the test does not kill fails the audit,
// whether it survived or its point was never reached; killed passes; a test
// declaring no mutant fails.
TEST(AuditVerdict, MutantsTheTestCannotDetectFail) {
  auto in = passing();
  in.have_mutants = true;
  popper::MutantResult m;
  m.contract = "v-v1";
  m.test_id = "FALSIFY-V-001";
  m.mutant_id = "m1";
  m.outcome = "killed";
  in.mutants = {m};
  EXPECT_EQ(popper::audit(in).exit_code(), 0) << failures_of(popper::audit(in));
  in.mutants[0].outcome = "survived";
  auto rep = popper::audit(in);
  EXPECT_TRUE(fails_with(rep, "FALSIFY-V-001 cannot detect m1")) << failures_of(rep);
  EXPECT_EQ(rep.exit_code(), 1);
  in.mutants[0].outcome = "not_reached";
  rep = popper::audit(in);
  EXPECT_TRUE(fails_with(rep, "its mutation point was never reached")) << failures_of(rep);
  EXPECT_EQ(rep.exit_code(), 1);
  in.contracts.contracts[0].falsification_tests[0].mutants.clear();
  in.mutants.clear();
  rep = popper::audit(in);
  EXPECT_TRUE(fails_with(rep, "FALSIFY-V-001 declares no mutant")) << failures_of(rep);
  EXPECT_EQ(rep.exit_code(), 1);
}

// Rule: a binding no contract names is an orphan and fails the audit.
TEST(AuditVerdict, OrphanBindingFails) {
  auto in = passing();
  in.bound_ids.push_back("FALSIFY-NOBODY-001");
  const auto rep = popper::audit(in);
  EXPECT_EQ(rep.orphans, std::vector<std::string>{"FALSIFY-NOBODY-001"});
  EXPECT_TRUE(fails_with(rep, "orphan binding FALSIFY-NOBODY-001")) << failures_of(rep);
  EXPECT_EQ(rep.exit_code(), 1);
}

// Rules: an obligation is covered only by a passing backer (a skipped one is
// no evidence) with evidence on every backend the obligation names.
TEST(AuditVerdict, CoverageNeedsAPassWithEvidenceOnEveryNamedBackend) {
  EXPECT_TRUE(covered(popper::audit(passing({"cpu"}))));
  const auto no_cuda = popper::audit(passing({"cpu", "cuda"}));
  EXPECT_FALSE(covered(no_cuda));
  EXPECT_NE(no_cuda.json["contracts"][0]["obligations"][0]["why_not"].get<std::string>().find("cuda: not run"),
            std::string::npos);
  auto in = passing();
  in.results["FALSIFY-V-001"] = {"skipped", "requires cuda"};
  EXPECT_FALSE(covered(popper::audit(in))) << "a skipped backer covers nothing";
}

// Rules of a qa_gate: FAIL when a check failed (and that fails the audit), PASS
// only when every check passed, INCOMPLETE otherwise; an equation check passes
// when its obligations are covered; a claim check: met passes, not_met fails.
TEST(AuditVerdict, QaGateFailPassIncomplete) {
  auto in = passing();
  popper::QaGate g;
  g.id = "QA-V-001";
  g.checks = {"e", "FALSIFY-V-001"};
  in.contracts.contracts[0].qa_gate = g;
  auto gate = [](const popper::AuditReport& rep) {
    return rep.json["contracts"][0]["qa_gate"]["verdict"].get<std::string>();
  };
  auto rep = popper::audit(in);
  EXPECT_EQ(gate(rep), "PASS") << rep.json["contracts"][0]["qa_gate"].dump();
  EXPECT_EQ(rep.exit_code(), 0) << failures_of(rep);
  // The equation's obligation needs cuda evidence the pass does not have.
  in.contracts.contracts[0].obligations[0].backends = {"cuda"};
  rep = popper::audit(in);
  EXPECT_EQ(gate(rep), "INCOMPLETE") << rep.json["contracts"][0]["qa_gate"].dump();
  EXPECT_EQ(rep.exit_code(), 0) << failures_of(rep);
  in.contracts.contracts[0].obligations[0].backends.clear();
  in.results["FALSIFY-V-001"] = {"failed", "boom"};
  rep = popper::audit(in);
  EXPECT_EQ(gate(rep), "FAIL");
  EXPECT_TRUE(fails_with(rep, "qa_gate QA-V-001 of v-v1 is FAIL")) << failures_of(rep);
  // A benchmark claim as a check.
  in = passing();
  popper::BenchmarkClaim b;
  b.id = "BENCH-V-001";
  b.family = "v";
  in.contracts.contracts[0].benchmarks.push_back(b);
  g.checks = {"BENCH-V-001"};
  in.contracts.contracts[0].qa_gate = g;
  in.have_bench_claims = true;
  in.bench_claims["BENCH-V-001"] = {"met", ""};
  EXPECT_EQ(gate(popper::audit(in)), "PASS");
  in.bench_claims["BENCH-V-001"] = {"inconclusive", ""};
  EXPECT_EQ(gate(popper::audit(in)), "INCOMPLETE");
  in.bench_claims["BENCH-V-001"] = {"not_met", "0.8 < 0.9"};
  rep = popper::audit(in);
  EXPECT_EQ(gate(rep), "FAIL");
  EXPECT_TRUE(fails_with(rep, "qa_gate QA-V-001 of v-v1 is FAIL")) << failures_of(rep);
}

// Rule: under --require-claims any claim short of met fails the audit (without
// it, only not_met does).
TEST(AuditVerdict, RequireClaimsFailsAClaimShortOfMet) {
  auto in = passing();
  popper::BenchmarkClaim b;
  b.id = "BENCH-V-001";
  b.family = "v";
  in.contracts.contracts[0].benchmarks.push_back(b);
  in.have_bench_claims = true;
  in.bench_claims["BENCH-V-001"] = {"inconclusive", "[0.85, 0.95] straddles 0.9"};
  EXPECT_EQ(popper::audit(in).exit_code(), 0);
  in.require_claims = true;
  const auto rep = popper::audit(in);
  EXPECT_EQ(rep.exit_code(), 1);
  EXPECT_TRUE(fails_with(rep, "BENCH-V-001 inconclusive")) << failures_of(rep);
  in.bench_claims["BENCH-V-001"] = {"met", ""};
  EXPECT_EQ(popper::audit(in).exit_code(), 0);
}

// Rules of waivers: a live waiver moves its failure to `waived` (exit 0); an
// expired one excuses nothing and is a failure itself; one that excuses
// nothing is a warning.
TEST(AuditVerdict, WaiversLiveExpiredUnused) {
  auto in = passing();
  in.results["FALSIFY-V-001"] = {"failed", "boom"};
  in.waivers = {{"FALSIFY-V-001", "known, fixed in #12", "2026-12-31", {"waivers.yaml", 3, 1}}};
  auto rep = popper::audit(in);
  EXPECT_EQ(rep.exit_code(), 0) << failures_of(rep);
  ASSERT_EQ(rep.waived.size(), 1u);
  EXPECT_NE(rep.waived[0].find("waived until 2026-12-31"), std::string::npos) << rep.waived[0];
  EXPECT_TRUE(rep.warnings.empty());
  in.waivers[0].expires = "2026-11-26";
  rep = popper::audit(in);
  EXPECT_EQ(rep.exit_code(), 1);
  EXPECT_TRUE(fails_with(rep, "FALSIFY-V-001 failed")) << failures_of(rep);
  EXPECT_TRUE(fails_with(rep, "waiver for FALSIFY-V-001 expired on 2026-11-26")) << failures_of(rep);
  EXPECT_TRUE(rep.waived.empty());
  in = passing();
  in.waivers = {{"FALSIFY-V-001", "stale", "2026-12-31", {"waivers.yaml", 3, 1}}};
  rep = popper::audit(in);
  EXPECT_EQ(rep.exit_code(), 0) << failures_of(rep);
  ASSERT_EQ(rep.warnings.size(), 1u);
  EXPECT_NE(rep.warnings[0].find("excuses nothing"), std::string::npos) << rep.warnings[0];
}

// Rule of the headline: a contract set with no claims says so.
TEST(AuditVerdict, HeadlineWithoutClaims) {
  EXPECT_EQ(popper::audit(passing()).json.at("headline").get<std::string>(),
            "correctness PASS (exit 0); no performance claims");
}

// Rule: a bench mutant that survived fails the audit, and the benchmarks'
// power is reported beside the tests'.
TEST(AuditVerdict, ASurvivingBenchMutantFailsAndPowerIsReported) {
  auto in = passing();
  in.have_bench_mutants = true;
  in.bench_mutants.push_back({"dot", "cached-result", "killed", 2, 2, "incorrect: after timing", ""});
  auto rep = popper::audit(in);
  EXPECT_EQ(rep.exit_code(), 0) << failures_of(rep);
  EXPECT_EQ(rep.json["total"]["bench_mutants"]["killed"].get<int>(), 1);
  EXPECT_NE(rep.markdown.find("| bench mutants killed (power of the benchmarks) | 1/1"), std::string::npos);
  in.bench_mutants.push_back({"dot", "skipped-work", "survived", 2, 1, "incorrect: after timing", "b: timed"});
  rep = popper::audit(in);
  EXPECT_TRUE(fails_with(rep, "bench mutant skipped-work survived in family dot")) << failures_of(rep);
  EXPECT_EQ(rep.json["total"]["bench_mutants"]["run"].get<int>(), 2);
}
