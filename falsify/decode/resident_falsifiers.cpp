// The resident decode backends (impl/decode/resident.hpp): FALSIFY-MBP-011
// (Vulkan) and FALSIFY-MBP-012 (CUDA) put the whole token on the device and
// judge its logits against the FP64 oracle at the drift bound, at every
// prompt length the recorded commands are replayed for.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "impl/decode/drift.hpp"
#include "testbed.hpp"

namespace {

using namespace popper::decode;
namespace tb = popper::decode::testbed;

void check_resident(const popper::Params& p, const char* id, const std::string& name) {
  const Model m = tb::small_model(p);
  auto backend = make_backend(name, m);
  if (!backend->available()) {  // no evidence from the device: the harness reports the test skipped
    popper::record_decline(name, backend->unavailable_reason());
    std::printf("[%s] %s unavailable: %s\n", id, name.c_str(), backend->unavailable_reason().c_str());
    return;
  }
  const auto prompt = canary_tokens(m.config, static_cast<int>(p.integer("tokens")), p.seed());
  auto exact_ops = reference_ops(m.config);
  auto emulation_ops = ordered_ops(m.config, popper::accum::Order::Warp32);
  // The drift bound of MBP-PO-010 at this depth: what any FP32 forward of the formula meets.
  const double bound = hypothesis_rel(static_cast<int>(m.config.layers)) / 10;
  std::vector<float> first;
  // Every prompt length from 1 (KV slots, positions and the softmax over 1..n keys), then
  // the whole prompt again: the same recorded commands, replayed from position 0 each time.
  for (std::size_t n = 1; n <= prompt.size() + 1; ++n) {
    const auto tokens = std::span<const std::int32_t>(prompt).first(std::min(n, prompt.size()));
    const auto got = backend->logits(tokens);
    const auto exact = forward<double>(m, tokens, *exact_ops);
    const auto vs_exact = compare_logits(got, std::span<const double>(exact));
    const auto vs_emulation = compare_logits(got, forward<float>(m, tokens, *emulation_ops));
    std::printf(
        "[%s] %s, %zu tokens: against FP64 rel %.3g (bound %.3g), cosine %.9f, top1 %s; against its CPU "
        "emulation (warp32) rel %.3g, max abs %.3g\n",
        id, backend->evidence().c_str(), tokens.size(), vs_exact.rel_l2, bound, vs_exact.cosine,
        vs_exact.top1 ? "yes" : "no", vs_emulation.rel_l2, vs_emulation.max_abs);
    EXPECT_LT(vs_exact.rel_l2, bound) << name << " at " << tokens.size() << " tokens computes another function";
    EXPECT_TRUE(vs_exact.top1) << name << " at " << tokens.size() << " tokens changes the most likely token";
    if (n == prompt.size()) first = got;
    if (n == prompt.size() + 1) {
      EXPECT_EQ(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)), 0)
          << name << ": the same prompt a second time gives other bits (state left from the last call)";
    }
  }
  popper::record_backend(backend->evidence());
}

POPPER_FALSIFIER("FALSIFY-MBP-011", [](const popper::Params& p) { check_resident(p, "FALSIFY-MBP-011", "vulkan"); });
POPPER_FALSIFIER("FALSIFY-MBP-012", [](const popper::Params& p) { check_resident(p, "FALSIFY-MBP-012", "cuda"); });

}  // namespace
