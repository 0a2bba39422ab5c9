// The canary forward: FALSIFY-MBP-005 (bitwise determinism over runs and
// thread counts) and FALSIFY-MBP-006 (the seed's drift hypothesis against
// the FP64 oracle, every accumulation order and the hand kernels).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "impl/decode/drift.hpp"
#include "testbed.hpp"

namespace {

using namespace popper::decode;
namespace tb = popper::decode::testbed;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

POPPER_FALSIFIER("FALSIFY-MBP-005", [](const popper::Params& p) {
  const Model m = tb::small_model(p);
  const auto tokens = canary_tokens(m.config, static_cast<int>(p.integer("tokens")));
  for (const std::string name : {"cpu", "cpu-simd"}) {
    auto first = make_backend(name, m, 1);
    popper::record_backend(first->evidence());
    const auto one = first->logits(tokens);
    EXPECT_TRUE(same_bits(first->logits(tokens), one)) << name << ": a second run differs";
    for (auto t : p.integers("threads")) {
      auto b = make_backend(name, m, static_cast<int>(t));
      EXPECT_TRUE(same_bits(b->logits(tokens), one)) << name << ": threads " << t << " differ from 1";
    }
  }
  GateOptions o;
  o.candidates = {"vulkan", "cpu-simd"};
  o.tokens = static_cast<int>(p.integer("tokens"));
  const GateResult a = run_gate(m, o), b = run_gate(m, o);
  tb::record(a);
  EXPECT_EQ(a.selected, b.selected);
  for (std::size_t i = 0; i < a.runs.size(); ++i)
    if (a.runs[i].available) {
      EXPECT_EQ(a.runs[i].agreement.cosine, b.runs[i].agreement.cosine) << a.runs[i].name << ": cosine moved";
    }
});

POPPER_FALSIFIER("FALSIFY-MBP-006", [](const popper::Params& p) {
  const Model m = tb::small_model(p);
  const auto tokens = canary_tokens(m.config, static_cast<int>(p.integer("tokens")));
  const auto series = drift_series();
  const auto points = measure_drift(m, tokens, series, 2);
  tb::record_cpu_reference();
  popper::record_backend(make_backend("cpu-simd", m)->evidence());
  popper::record_backend("reference");
  ASSERT_EQ(points.size(), series.size() * static_cast<std::size_t>(m.config.layers));
  for (const auto& pt : points) {
    const double predicted = hypothesis_rel(pt.depth);
    EXPECT_LT(pt.rel_l2, predicted / 10) << pt.series << " at depth " << pt.depth << ": rel " << pt.rel_l2
                                         << " is within 10x of the hypothesis' " << predicted;
  }
  for (const auto& s : series) {
    const auto f = fit_drift(points, s);
    std::printf(
        "[FALSIFY-MBP-006] %-10s rel at L=1 %.3g, at L=%lld %.3g (hypothesis %.3g): growth %.2fx "
        "(hypothesis %.1fx), exponent p = %.2f\n",
        s.c_str(), f.rel / f.growth, static_cast<long long>(m.config.layers), f.rel, f.hypothesis_rel, f.growth,
        f.hypothesis_growth, f.power);
  }
});

}  // namespace
