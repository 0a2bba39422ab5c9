// The router and the device decline (contracts/nsa/nsa-selection-v1.yaml:
// FALSIFY-NSA-009, -010): hand or fallback exactly as the threshold file
// says, reported through RouteDiagnostics; without a device the CUDA entry
// is the hand kernel, bit for bit.
#include <gtest/gtest.h>

#include <cstring>

#include "impl/common/device.hpp"
#include "impl/nsa/nsa.hpp"
#include "nsa/testbed.hpp"
#include "popper/binding.hpp"
#include "popper/error.hpp"

namespace {

using namespace popper::nsa;
namespace tb = popper::nsa::testbed;

// One sequence of 4 query rows over 400 keys, every row selecting `len` keys; H heads in one group, D = 64.
tb::Workload with_selected_length(int len, int heads) {
  tb::Workload w;
  w.layout = {heads, 1, 64, 64};
  w.cu_q = {0, 4};
  w.cu_k = {0, 400};
  const std::vector<std::int64_t> offsets{0, 1, 2, 3, 4};
  const std::vector<Span> spans{{0, len}, {400 - len, 400}, {5, 5 + len}, {(400 - len) / 2, (400 - len) / 2 + len}};
  w.pack = pack_explicit_spans(w.batch(), 1, offsets, spans);
  w.q = tb::bf16_uniform(4 * static_cast<std::size_t>(heads) * 64, 11);
  w.k = tb::bf16_uniform(400 * 64, 12);
  w.v = tb::bf16_uniform(400 * 64, 13);
  return w;
}

bool same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

POPPER_FALSIFIER("FALSIFY-NSA-009", [](const popper::Params&) {
  const RouterConfig cfg = parse_router_config(
      "thresholds:\n  - {h: 4, d: 64, min_l: 256}\n  - {h: 8, d: 64, min_l: never}\n", "test-config");
  struct Case {
    int len, heads;
    RoutePath want;
  };
  const Case cases[] = {{255, 4, RoutePath::Fallback},
                        {256, 4, RoutePath::Hand},
                        {300, 4, RoutePath::Hand},
                        {390, 8, RoutePath::Fallback},
                        {300, 2, RoutePath::Fallback}};
  for (const auto& c : cases) {
    const auto w = with_selected_length(c.len, c.heads);
    RouteDiagnostics diag;
    int callbacks = 0;
    RoutePath seen = RoutePath::Hand;
    diag.set_callback([&](const RouteDecision& d) {
      ++callbacks;
      seen = d.path;
    });
    std::vector<float> o(w.o_size()), lse(w.lse_size()), o_ref(w.o_size()), lse_ref(w.lse_size());
    const auto info = selection_attention_routed(w.problem(), {o, lse}, cfg, {2, &diag});
    popper::record_backend(info.backend);
    const auto where = "Lbar " + std::to_string(c.len) + ", h " + std::to_string(c.heads);
    EXPECT_EQ(diag.hand_calls() + diag.fallback_calls(), 1) << where;
    EXPECT_EQ((c.want == RoutePath::Hand ? diag.hand_calls() : diag.fallback_calls()), 1)
        << where << ": took " << to_string(seen) << ", wanted " << to_string(c.want) << " (" << diag.last()->reason
        << ")";
    EXPECT_EQ(callbacks, 1) << where;
    EXPECT_EQ(seen, c.want) << where;
    ASSERT_TRUE(diag.last().has_value());
    EXPECT_EQ(diag.last()->backend, info.backend) << where;
    EXPECT_EQ(diag.last()->mean_len, double(c.len)) << where;
    // The result is the named path's, bit for bit.
    if (c.want == RoutePath::Hand) selection_attention_hand(w.problem(), {o_ref, lse_ref}, HandOptions{2});
    else selection_attention_fallback(w.problem(), {o_ref, lse_ref}, FallbackOptions{2});
    EXPECT_TRUE(same(o, o_ref) && same(lse, lse_ref))
        << where << ": routed result is not the " << to_string(c.want) << " path's";
  }
  // The process-wide diagnostics count too.
  const auto before = route_diagnostics().hand_calls() + route_diagnostics().fallback_calls();
  const auto w = with_selected_length(64, 4);
  std::vector<float> o(w.o_size());
  selection_attention_routed(w.problem(), {o, {}}, cfg);
  EXPECT_EQ(route_diagnostics().hand_calls() + route_diagnostics().fallback_calls(), before + 1);
  // Malformed configs are refused with the file named.
  for (const char* bad : {"thresholds: 3", "thresholds:\n  - {h: 4, d: 64}", "thresholds:\n  - {h: 0, d: 64, min_l: 1}",
                          "thresholds:\n  - {h: 4, d: 64, min_l: 1}\n  - {h: 4, d: 64, min_l: 2}", "margin: [", "- 1"})
    EXPECT_THROW(parse_router_config(bad, "bad-config"), popper::Error) << bad;
  // The committed config (written by `popper bench threshold --family nsa`) loads and covers the bench grid.
  const std::string path = default_router_config_path();
  RouterConfig committed;
  ASSERT_NO_THROW(committed = load_router_config(path)) << path;
  for (const int h : {4, 8})
    for (const int d : {64, 128})
      EXPECT_NE(committed.find(h, d), nullptr) << path << " has no entry for h " << h << ", d " << d;
  EXPECT_GE(committed.margin, 1.0) << path;
});

POPPER_FALSIFIER("FALSIFY-NSA-010", [](const popper::Params& p) {
  if (popper::device::cuda_status().usable()) GTEST_SKIP() << "a CUDA device is usable; the decline path is not taken";
  (void)p;
  for (const char* dist : {"few", "many"})
    for (const int heads : {1, 4, 8}) {
      const auto w = tb::make_workload(tb::grid_shape(dist, 16, heads, 64, 128));
      std::vector<float> o(w.o_size()), lse(w.lse_size()), o_cpu(w.o_size()), lse_cpu(w.lse_size());
      const auto info = selection_attention_cuda(w.problem(), {o, lse}, HandOptions{2});
      EXPECT_FALSE(info.decline.empty()) << "no device, yet no decline reason";
      popper::record_decline("cuda", info.decline);
      popper::record_backend(info.backend);
      selection_attention_hand(w.problem(), {o_cpu, lse_cpu}, HandOptions{2});
      EXPECT_TRUE(same(o, o_cpu) && same(lse, lse_cpu))
          << dist << " H " << heads << ": the decline is not the CPU hand kernel bit for bit";
    }
});
