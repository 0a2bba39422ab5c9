// The launches of a resident decode token and the buffers they share
// (resident.hpp), the same for the Vulkan and the CUDA backend. The mutation
// points of the resident backends are here, in what the host records, so one
// switch breaks both devices alike.
#include "impl/decode/resident.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "impl/fused/fused.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::decode::resident {

Layout layout_of(const Config& c) {
  c.check();
  const auto fits = [](std::uint64_t v, const char* what) {
    if (v > std::numeric_limits<std::uint32_t>::max())
      throw InvalidArgument(std::string("resident decode: ") + what + " exceeds 32-bit offsets");
    return static_cast<std::uint32_t>(v);
  };
  const auto H = static_cast<std::uint64_t>(c.hidden), Q = static_cast<std::uint64_t>(c.q_width()),
             KV = static_cast<std::uint64_t>(c.kv_width()), I = static_cast<std::uint64_t>(c.intermediate),
             V = static_cast<std::uint64_t>(c.vocab), ctx = static_cast<std::uint64_t>(c.context),
             L = static_cast<std::uint64_t>(c.layers);
  Layout l;
  l.x = 0;
  l.q = fits(H, "the activations");
  l.att = fits(H + Q, "the activations");
  l.h = fits(H + 2 * Q, "the activations");
  l.logits = fits(H + 2 * Q + I, "the activations");
  l.scores = fits(H + 2 * Q + I + V, "the activations");
  l.act_size = fits(H + 2 * Q + I + V + static_cast<std::uint64_t>(c.q_heads) * ctx, "the activations");
  l.per_layer_vectors = fits(2 * H + Q + 2 * KV, "the norms and biases");
  l.output_norm = fits(L * l.per_layer_vectors, "the norms and biases");
  l.vectors_size = fits(L * l.per_layer_vectors + H, "the norms and biases");
  l.kv_size = 2 * L * ctx * KV;
  fits(l.kv_size, "the KV cache");
  l.rope_size = fits(ctx * static_cast<std::uint64_t>(c.head_dim), "the RoPE table");
  return l;
}

std::vector<float> vectors_of(const Model& m) {
  const Layout l = layout_of(m.config);
  std::vector<float> v;
  v.reserve(l.vectors_size);
  for (const auto& y : m.layers)
    for (auto part : {y.attn_norm, y.ffn_norm, y.q_bias, y.k_bias, y.v_bias})
      v.insert(v.end(), part.begin(), part.end());
  v.insert(v.end(), m.output_norm.begin(), m.output_norm.end());
  if (v.size() != l.vectors_size)
    throw InvalidArgument("resident decode: the model's norms and biases do not match its configuration");
  return v;
}

std::vector<float> rope_of(const Config& c) {
  const fused::RopeTable t = fused::make_rope_table(c.context, c.head_dim, c.rope_base);
  std::vector<float> v(t.cos);
  v.insert(v.end(), t.sin.begin(), t.sin.end());
  return v;
}

std::vector<Launch> token_plan(const Model& m, const Layout& l) {
  const Config& c = m.config;
  const auto u32 = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
  Args base;
  base.q_width = u32(c.q_width());
  base.kv_width = u32(c.kv_width());
  base.head_dim = u32(c.head_dim);
  base.group = u32(c.q_heads / c.kv_heads);
  base.context = u32(c.context);
  base.scores = l.scores;
  base.hidden = u32(c.hidden);
  base.eps = static_cast<float>(c.rms_eps);
  base.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));  // as ordered_ops' attention
  // Mutation points of what the host records (resident.hpp): a dropped residual,
  // K/V written one slot after the one attention reads, the GQA group one too
  // wide (query head h reads KV head h / (group + 1)), the QKV biases dropped.
  const bool no_residual = POPPER_MUTANT("decode-resident-no-residual");
  const bool wrong_slot = POPPER_MUTANT("decode-resident-kv-wrong-slot");
  const bool wide_group = POPPER_MUTANT("decode-resident-gqa-off-by-one");
  const bool no_bias = POPPER_MUTANT("decode-resident-drop-bias");

  std::vector<Launch> plan;
  const auto add = [&](Kernel k, Args a, std::uint32_t items, std::vector<const Weight*> w) {
    a.rows = items;
    plan.push_back({k, a, items, std::move(w)});
  };
  Args a = base;
  a.out = l.x;
  add(Kernel::Embed, a, u32(c.hidden / q4k::kBlockWeights), {&m.token_embd});
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    const Layer& y = m.layers[i];
    const std::uint32_t vectors = l.layer_vectors(i);
    const auto kv_layer = static_cast<std::uint32_t>(2 * i * static_cast<std::size_t>(c.context * c.kv_width()));
    const auto kv_stride = u32(c.context * c.kv_width());
    a = base;
    a.in = l.x, a.out = l.q, a.norm = vectors, a.bias = vectors + u32(2 * c.hidden);
    a.flags = no_bias ? 0 : kBias;
    a.kv_k = kv_layer + (wrong_slot ? base.kv_width : 0);
    a.kv_v = kv_layer + kv_stride + (wrong_slot ? base.kv_width : 0);
    add(Kernel::Qkv, a, u32(c.q_width() / 2 + c.kv_width() / 2 + c.kv_width()), {&y.q, &y.k, &y.v});
    a = base;
    a.in = l.q, a.out = l.att, a.kv_k = kv_layer, a.kv_v = kv_layer + kv_stride;
    if (wide_group) a.group += 1;
    add(Kernel::Attention, a, u32(c.q_heads), {});
    a = base;
    a.cols = base.q_width, a.in = l.att, a.out = l.x, a.flags = kAccumulate;
    add(Kernel::GemvAcc, a, u32(c.hidden), {&y.o});
    a = base;
    a.cols = base.hidden, a.in = l.x, a.out = l.h, a.norm = vectors + u32(c.hidden);
    add(Kernel::Ffn, a, u32(c.intermediate), {&y.gate, &y.up});
    a = base;
    a.cols = u32(c.intermediate), a.in = l.h, a.out = l.x, a.flags = no_residual ? 0 : kAccumulate;
    add(Kernel::GemvAcc, a, u32(c.hidden), {&y.down});
  }
  a = base;
  a.cols = base.hidden, a.in = l.x, a.out = l.logits, a.norm = l.output_norm;
  add(Kernel::Head, a, u32(c.vocab), {&m.output});
  return plan;
}

bool stale_step() { return POPPER_MUTANT("decode-resident-stale-step"); }

}  // namespace popper::decode::resident
