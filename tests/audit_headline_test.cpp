// The audit's headline: a correctness PASS is printed beside
// how many performance claims were measured and how they came out, in
// coverage.json, coverage.md and the JUnit XML alike, so a run whose claims
// were never measured does not read as a performance pass.
#include <gtest/gtest.h>

#include "popper/audit.hpp"
#include "popper/contract.hpp"

namespace {

popper::AuditInputs with_claims(const std::vector<std::string>& ids) {
  popper::Contract c;
  c.stem = "k-v1";
  for (const auto& id : ids) {
    popper::BenchmarkClaim b;
    b.id = id;
    b.family = "k";
    c.benchmarks.push_back(b);
  }
  popper::AuditInputs in;
  in.contracts.contracts.push_back(c);
  return in;
}

}  // namespace

TEST(AuditHeadline, NothingMeasuredIsSaidBesideThePass) {
  const auto rep = popper::audit(with_claims({"BENCH-K-001", "BENCH-K-002"}));
  ASSERT_EQ(rep.exit_code(), 0);
  const std::string h = rep.json.at("headline").get<std::string>();
  EXPECT_EQ(h,
            "correctness PASS (exit 0); performance claims measured 0 of 2: met 0, not met 0, inconclusive 0, "
            "partially measured 0, not measured 2");
  EXPECT_NE(rep.markdown.find("Verdict: **" + h + "**"), std::string::npos) << rep.markdown.substr(0, 400);
  EXPECT_NE(popper::audit_junit(rep.json).find("testsuites name=\"popper audit: " + h + "\""), std::string::npos);
}

TEST(AuditHeadline, MeasuredClaimsAreCountedByVerdict) {
  auto in = with_claims({"BENCH-K-001", "BENCH-K-002", "BENCH-K-003"});
  in.have_bench_claims = true;
  in.bench_claims["BENCH-K-001"] = {"met", ""};
  in.bench_claims["BENCH-K-002"] = {"inconclusive", "[0.85, 0.95] straddles 0.9"};
  const auto rep = popper::audit(in);
  EXPECT_EQ(rep.json.at("headline").get<std::string>(),
            "correctness PASS (exit 0); performance claims measured 2 of 3: met 1, not met 0, inconclusive 1, "
            "partially measured 0, not measured 1");
  // A claim not met fails the audit (so does any claim short of met under
  // --require-claims), and the headline says FAIL first.
  in.bench_claims["BENCH-K-002"] = {"not_met", "0.8 < 0.9"};
  const auto failed = popper::audit(in);
  EXPECT_EQ(failed.exit_code(), 1);
  EXPECT_EQ(failed.json.at("headline").get<std::string>(),
            "FAIL (exit 1): 1 reason(s); performance claims measured 2 of 3: met 1, not met 1, inconclusive 0, "
            "partially measured 0, not measured 1");
}
