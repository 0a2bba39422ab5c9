// Falsifiers of the verdict machinery (popper-engine-v1: ENGINE-PO-011..013):
// evidence-judged device outcomes and backend coverage, the audit's exit code
// against an independent failure count, and the mutant-run judge.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <set>

#include "popper/audit.hpp"
#include "popper/binding.hpp"
#include "popper/mutant_runner.hpp"

using namespace popper;

namespace {

Evidence evidence(std::initializer_list<const char*> tags, std::initializer_list<const char*> declines = {}) {
  Evidence e;
  for (const char* t : tags) e.backends.push_back({t, Dispatch::Auto});
  for (const char* d : declines) e.declines.push_back(d);
  return e;
}

// One contract: obligation O (backends as given) backed by tests T0..Tn.
Contract one_obligation(const std::vector<std::string>& backends, std::size_t tests) {
  Contract c;
  c.stem = "ev";
  c.path = "ev.yaml";
  c.equations.push_back({"e", "y = x", {}, {}});
  Obligation o;
  o.id = "EV-PO-001";
  o.type = "invariant";
  o.property = "p";
  o.applies_to = "e";
  o.backends = backends;
  c.obligations.push_back(o);
  for (std::size_t t = 0; t < tests; ++t) {
    FalsificationTest ft;
    ft.id = "FALSIFY-EV-" + std::to_string(t);
    ft.covers = {"EV-PO-001"};
    c.falsification_tests.push_back(ft);
  }
  return c;
}

IdResult passed_with(std::initializer_list<const char*> tags) {
  IdResult r("passed", "");
  for (const char* t : tags) r.backends[t].push_back({"native", "auto"});
  return r;
}

}  // namespace

POPPER_FALSIFIER("FALSIFY-ENGINE-012", [](const popper::Params&) {
  // Device requirement judged on evidence.
  const std::vector<std::string> cuda = {"cuda"};
  const auto skips = DeviceRule::DeclineSkips;  // the default rule
  auto j = judge_evidence(Outcome::Passed, "", cuda, evidence({"cpu:avx2"}, {"cuda: no CUDA device"}), skips);
  EXPECT_EQ(j.outcome, Outcome::Skipped) << j.reason;
  EXPECT_NE(j.reason.find("requires cuda"), std::string::npos) << j.reason;
  EXPECT_NE(j.reason.find("declined"), std::string::npos) << j.reason;
  j = judge_evidence(Outcome::Passed, "", cuda, evidence({}), skips);
  EXPECT_EQ(j.outcome, Outcome::Skipped) << "no evidence at all is no device evidence";
  j = judge_evidence(Outcome::Passed, "", cuda, evidence({"cuda:sm_90"}), skips);
  EXPECT_EQ(j.outcome, Outcome::Passed) << j.reason;
  j = judge_evidence(Outcome::Passed, "", {"vulkan"}, evidence({"vulkan:llvmpipe", "cpu:avx512"}), skips);
  EXPECT_EQ(j.outcome, Outcome::Passed) << j.reason;
  j = judge_evidence(Outcome::Passed, "", {"vulkan"}, evidence({"ggml-vulkan:llvmpipe"}),
                     skips);  // llama.cpp on the device
  EXPECT_EQ(j.outcome, Outcome::Passed) << j.reason;
  j = judge_evidence(Outcome::Passed, "", {"vulkan"}, evidence({"ggml-cpu:zen4", "cpu:avx512"}), skips);
  EXPECT_EQ(j.outcome, Outcome::Skipped) << "another runtime's CPU work is no Vulkan evidence";
  EXPECT_FALSE(device_ran("vulkan", "-vulkan:x"));
  EXPECT_FALSE(device_ran("vulkan", "ggml-vulkanx:x"));
  EXPECT_FALSE(device_ran("cuda", "cpu:x-cuda"));
  j = judge_evidence(Outcome::Passed, "", {"avx2"}, evidence({}), skips);  // a CPU feature is not a device
  EXPECT_EQ(j.outcome, Outcome::Passed) << j.reason;
  j = judge_evidence(Outcome::Failed, "boom", cuda, evidence({"cpu:avx2"}), skips);
  EXPECT_EQ(j.outcome, Outcome::Failed) << "a failure stays a failure";
  // make gpu-check's rule, passed in (never read from the environment here):
  // a decline or missing device evidence fails; device evidence alone passes.
  const auto fails = DeviceRule::DeclineFails;
  j = judge_evidence(Outcome::Passed, "", cuda, evidence({"cpu:avx2"}, {"cuda: no CUDA device"}), fails);
  EXPECT_EQ(j.outcome, Outcome::Failed) << j.reason;
  j = judge_evidence(Outcome::Passed, "", cuda, evidence({}), fails);
  EXPECT_EQ(j.outcome, Outcome::Failed) << "no device evidence under gpu-check";
  j = judge_evidence(Outcome::Passed, "", cuda, evidence({"cuda:sm_90"}), fails);
  EXPECT_EQ(j.outcome, Outcome::Passed) << j.reason;
  j = judge_evidence(Outcome::Passed, "", {}, evidence({"cuda:sm_90", "cpu:avx2"}, {"cuda: shape not admitted"}),
                     fails);
  EXPECT_EQ(j.outcome, Outcome::Failed) << "any decline fails under gpu-check, required or not";
  EXPECT_NE(j.reason.find("declined"), std::string::npos) << j.reason;
  j = judge_evidence(Outcome::Passed, "", {}, evidence({"cuda:sm_90", "cpu:avx2"}, {"cuda: shape not admitted"}),
                     skips);
  EXPECT_EQ(j.outcome, Outcome::Passed) << "a decline of a test that requires no device is no failure by default";
  EXPECT_FALSE(backend_matches("cuda", "cudax:1"));
  EXPECT_TRUE(backend_matches("cpu", "cpu:avx2"));
  EXPECT_FALSE(backend_matches("cpu:avx2", "cpu:avx512"));

  // Coverage needs passing evidence on every backend the obligation names.
  AuditInputs in;
  in.contracts.contracts.push_back(one_obligation({"cpu", "cuda"}, 2));
  in.bound_ids = {"FALSIFY-EV-0", "FALSIFY-EV-1"};
  in.results["FALSIFY-EV-0"] = passed_with({"cpu:avx512"});
  IdResult skipped("skipped", "requires cuda: declined (no CUDA device)");
  skipped.declines = {"cuda: no CUDA device"};
  in.results["FALSIFY-EV-1"] = skipped;
  AuditReport rep = audit(in);
  const auto& ob = rep.json["contracts"][0]["obligations"][0];
  EXPECT_FALSE(ob["covered"].get<bool>()) << ob.dump();
  EXPECT_NE(ob["why_not"].get<std::string>().find("cuda: declined"), std::string::npos) << ob.dump();
  EXPECT_EQ(rep.obligations.num, 0u);
  in.results["FALSIFY-EV-1"] = passed_with({"cuda:sm_90"});
  rep = audit(in);
  EXPECT_EQ(rep.obligations.num, 1u) << rep.json["contracts"][0]["obligations"][0].dump();
  // Without backends, any passing backer covers (the rule before evidence existed).
  in.contracts.contracts[0] = one_obligation({}, 2);
  in.results["FALSIFY-EV-1"] = skipped;
  EXPECT_EQ(audit(in).obligations.num, 1u);
});

POPPER_FALSIFIER("FALSIFY-ENGINE-013", [](const popper::Params&) {
  const std::vector<std::string> outcomes = {"passed", "failed", "skipped", "unbound", "not_run"};
  const std::vector<std::string> claims = {"met", "not_met", "not_measured", "inconclusive"};
  const std::vector<std::string> mutant_outcomes = {"killed", "survived", "not_reached", "not_run"};
  EXPECT_TRUE(rc::check("exit code = independent failure count minus live waivers", [&] {
    const std::string today = "2026-11-23";
    Contract c;
    c.stem = "x";
    c.path = "x.yaml";
    c.equations.push_back({"e", "y = x", {}, {}});
    Obligation o;
    o.id = "X-PO-001";
    o.type = "invariant";
    o.property = "p";
    o.applies_to = "e";
    c.obligations.push_back(o);
    AuditInputs in;
    in.today = today;
    std::set<std::string> failing;  // waivable ids that must fail
    const int ntests = *rc::gen::inRange(1, 5);
    const bool have_mutants = *rc::gen::arbitrary<bool>();
    in.have_mutants = have_mutants;
    for (int t = 0; t < ntests; ++t) {
      FalsificationTest ft;
      ft.id = "FALSIFY-X-" + std::to_string(t);
      ft.covers = {"X-PO-001"};
      const std::string oc = *rc::gen::elementOf(outcomes);
      if (oc != "unbound") in.bound_ids.push_back(ft.id);
      if (oc != "unbound" && oc != "not_run") in.results[ft.id] = IdResult(oc, "");
      if (oc == "failed" || oc == "unbound" || oc == "not_run") failing.insert(ft.id);
      if (*rc::gen::arbitrary<bool>()) {
        ft.mutants.push_back({"m" + std::to_string(t), "broken", "", {}});
        const std::string mo = *rc::gen::elementOf(mutant_outcomes);
        if (have_mutants) {
          MutantResult mr;
          mr.contract = "x";
          mr.test_id = ft.id;
          mr.mutant_id = ft.mutants[0].id;
          mr.outcome = mo;
          in.mutants.push_back(mr);
          if (mo == "survived" || mo == "not_reached") failing.insert(ft.id + "/" + ft.mutants[0].id);
        }
      } else if (have_mutants) {
        failing.insert(ft.id + "/mutants");
      }
      c.falsification_tests.push_back(ft);
    }
    if (*rc::gen::arbitrary<bool>()) {
      BenchmarkClaim b;
      b.id = "BENCH-X-001";
      c.benchmarks.push_back(b);
      const std::string v = *rc::gen::elementOf(claims);
      in.bench_claims[b.id] = IdResult(v, "");
      in.have_bench_claims = true;
      in.require_claims = *rc::gen::arbitrary<bool>();
      if (v == "not_met" || (in.require_claims && v != "met")) failing.insert(b.id);
    }
    if (*rc::gen::arbitrary<bool>()) {
      in.bound_ids.push_back("FALSIFY-ORPHAN-1");
      failing.insert("FALSIFY-ORPHAN-1");
    }
    in.contracts.contracts.push_back(c);
    // Waivers over some failing ids, some live, some expired; an expired one is itself a failure.
    std::size_t expected = 0;
    for (const auto& id : failing) {
      const int kind = *rc::gen::inRange(0, 3);  // 0 none, 1 live, 2 expired
      if (kind == 1) in.waivers.push_back({id, "known", "2027-01-01", {}});
      if (kind == 2) in.waivers.push_back({id, "known", "2026-01-01", {}});
      expected += kind == 1 ? 0 : kind == 2 ? 2 : 1;  // an expired waiver: the failure and the expiry
    }
    const AuditReport rep = audit(in);
    RC_ASSERT(rep.failures.size() == expected);
    RC_ASSERT(rep.exit_code() == (expected > 0 ? 1 : 0));
  }));
});

POPPER_FALSIFIER("FALSIFY-ENGINE-014", [](const popper::Params&) {
  auto json_of = [](const std::string& outcome, long hits, bool failure, const std::string& backends = "") {
    nlohmann::json tc = {{"name", "T"},
                         {"popper_id", "FALSIFY-T-1"},
                         {"popper_outcome", outcome},
                         {"popper_mutant", "m"},
                         {"popper_mutant_hits", std::to_string(hits)}};
    if (!backends.empty()) tc["popper_backends"] = backends;
    if (failure) tc["failures"] = nlohmann::json::array({{{"failure", "x.cpp:1\nExpected 1 == 2"}}});
    return nlohmann::json{{"testsuites", {{{"name", "s"}, {"testsuite", {tc}}}}}}.dump();
  };
  EXPECT_EQ(judge_mutant_run("FALSIFY-T-1", json_of("failed", 3, true), false, "exit 1").outcome, "killed");
  EXPECT_EQ(judge_mutant_run("FALSIFY-T-1", json_of("passed", 3, false), true, "exit 0").outcome, "survived");
  EXPECT_EQ(judge_mutant_run("FALSIFY-T-1", json_of("passed", 0, false), true, "exit 0").outcome, "not_reached");
  EXPECT_EQ(judge_mutant_run("FALSIFY-T-1", json_of("skipped", 0, false), true, "exit 0").outcome, "not_run");
  EXPECT_EQ(judge_mutant_run("FALSIFY-T-1", "", false, "killed by signal 11").outcome, "killed");
  EXPECT_EQ(judge_mutant_run("FALSIFY-T-1", "", true, "exit 0").outcome, "not_run") << "no such test ran";
  EXPECT_EQ(judge_mutant_run("FALSIFY-T-1", "{not json", false, "exit 2").outcome, "killed");
  // A path mutant: unreached although its path ran -> not_reached; its path never ran here -> not_run.
  const auto avx2_run = json_of("passed", 0, false, "cpu:avx2=forced,openblas:haswell=auto");
  EXPECT_EQ(judge_mutant_run("FALSIFY-T-1", avx2_run, true, "exit 0", "cpu:avx2").outcome, "not_reached");
  EXPECT_EQ(judge_mutant_run("FALSIFY-T-1", avx2_run, true, "exit 0", "cpu:avx512").outcome, "not_run");
  EXPECT_EQ(judge_mutant_run("FALSIFY-T-1", json_of("passed", 2, false, "cpu:avx2=auto"), true, "exit 0", "cpu:avx512")
                .outcome,
            "survived")
      << "a point that fired is reached, whatever the evidence says";

  const std::vector<std::string> order = {"not_run", "not_reached", "survived", "killed"};
  for (std::size_t a = 0; a < order.size(); ++a)
    for (std::size_t b = 0; b < order.size(); ++b) {
      MutantResult x, y;
      x.outcome = order[a];
      x.by_site["native"] = order[a];
      y.outcome = order[b];
      y.by_site["emulated:Haswell"] = order[b];
      merge_mutant(x, y);
      EXPECT_EQ(x.outcome, order[std::max(a, b)]) << order[a] << " + " << order[b];
      EXPECT_EQ(x.by_site.size(), 2u);
    }
});
