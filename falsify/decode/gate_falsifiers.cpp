// The parity gate: FALSIFY-MBP-001/002 (device parity), -003 (hand kernels),
// -004 (no silent garbage under injected faults), KANI-MBP-001 (the selection
// rule over every availability x outcome x priority order).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include "testbed.hpp"

namespace {

using namespace popper::decode;
namespace tb = popper::decode::testbed;

// One candidate's parity on the small canary: passes, ran on its own device.
void check_parity(const popper::Params& p, const char* id, const std::string& backend) {
  const Model m = tb::small_model(p);
  GateOptions o;
  o.candidates = {backend};
  o.tokens = static_cast<int>(p.integer("tokens"));
  const GateResult g = run_gate(m, o);
  tb::record(g, true);
  tb::print(id, g);
  const BackendRun& r = g.runs.at(0);
  if (!r.available) return;  // no evidence from the device: the harness reports the test skipped
  EXPECT_TRUE(r.passed) << backend << ": " << r.reason;
  EXPECT_GE(r.agreement.cosine, kMinCosine);
  EXPECT_EQ(g.selected, backend);
}

POPPER_FALSIFIER("FALSIFY-MBP-001", [](const popper::Params& p) { check_parity(p, "FALSIFY-MBP-001", "vulkan"); });
POPPER_FALSIFIER("FALSIFY-MBP-002", [](const popper::Params& p) { check_parity(p, "FALSIFY-MBP-002", "cuda"); });

POPPER_FALSIFIER("FALSIFY-MBP-003", [](const popper::Params& p) {
  check_parity(p, "FALSIFY-MBP-003", "cpu-simd");
  const Model m = tb::small_model(p);
  const auto tokens = canary_tokens(m.config, static_cast<int>(p.integer("tokens")));
  auto cpu = make_backend("cpu", m), simd = make_backend("cpu-simd", m);
  const auto a = compare_logits(simd->logits(tokens), cpu->logits(tokens));
  EXPECT_TRUE(a.top1) << "the hand kernels change the most likely token";
});

POPPER_FALSIFIER("FALSIFY-MBP-004", [](const popper::Params& p) {
  const Model m = tb::small_model(p);
  const std::vector<std::string> candidates{"vulkan", "cpu-simd", "ggml-vulkan", "ggml-cpu"};
  // Which candidates pass unfaulted: the expected selection skips only the faulted one.
  GateOptions clean;
  clean.candidates = candidates;
  clean.tokens = static_cast<int>(p.integer("tokens"));
  const GateResult base = run_gate(m, clean);
  tb::record(base);
  int faulted_runs = 0;
  for (const auto& fault_name : p.strings("faults"))
    for (const auto& target : candidates) {
      const BackendRun* before = tb::run_of(base, target);
      if (!before->available) continue;
      GateOptions o = clean;
      o.faults = {{target, parse_fault(fault_name)}};
      const GateResult g = run_gate(m, o);
      tb::print("FALSIFY-MBP-004", g);
      ++faulted_runs;
      const BackendRun* r = tb::run_of(g, target);
      ASSERT_TRUE(r->available) << target;
      EXPECT_FALSE(r->passed) << target << " with fault " << fault_name << " passed the gate: cosine "
                              << r->agreement.cosine;
      EXPECT_LT(r->agreement.cosine, kMinCosine);
      EXPECT_NE(g.selected, target) << "the gate selected the faulted backend";
      std::string expected = "cpu";
      for (const auto& c : candidates)
        if (c != target && tb::run_of(base, c)->passed) {
          expected = c;
          break;
        }
      EXPECT_EQ(g.selected, expected) << "fault " << fault_name << " in " << target;
    }
  EXPECT_GE(faulted_runs, 2) << "cpu-simd is always available, so each fault ran at least once";
});

POPPER_HARNESS("KANI-MBP-001", [](const popper::Params& p) {
  const auto n = static_cast<std::size_t>(p.bound());
  ASSERT_EQ(n, 3u) << "the harness enumerates three candidates";
  std::array<std::string, 3> names{"cuda", "vulkan", "cpu-simd"};
  std::sort(names.begin(), names.end());
  std::size_t cases = 0;
  do {
    for (int states = 0; states < 27; ++states) {
      std::vector<Candidate> c;
      int s = states;
      for (const auto& name : names) {
        const int state = s % 3;  // 0 unavailable, 1 available and failed, 2 available and passed
        s /= 3;
        // An unavailable candidate never ran, so it cannot have passed.
        c.push_back({name, state > 0, state == 2});
      }
      std::string expected = "cpu";
      for (const auto& x : c)
        if (x.available && x.passed) {
          expected = x.name;
          break;
        }
      const std::string got = select_backend(c);
      ++cases;
      EXPECT_EQ(got, expected) << "states " << states;
      EXPECT_EQ(select_backend(c), got) << "not deterministic";
      for (const auto& x : c)
        if (x.name == got) {
          EXPECT_TRUE(x.available && x.passed) << "selected a failed or unavailable " << got;
        }
      // Inconsistent inputs (passed but unavailable) never select that candidate either.
      std::vector<Candidate> odd = c;
      for (auto& x : odd)
        if (!x.available) x.passed = true;
      EXPECT_EQ(select_backend(odd), got) << "an unavailable candidate marked passed changed the choice";
    }
  } while (std::next_permutation(names.begin(), names.end()));
  EXPECT_EQ(cases, 6u * 27u);
});

}  // namespace
