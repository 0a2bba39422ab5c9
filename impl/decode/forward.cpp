// The decode forward (model.hpp's formula), one token at a time over a KV
// cache, on whatever operations a backend supplies (forward.hpp).
#include "impl/decode/forward.hpp"

#include <algorithm>
#include <string>

#include "popper/error.hpp"
#include "popper/mutant.hpp"
#include "impl/q4k/reference.hpp"

namespace popper::decode {

namespace {

template <class T>
void add(std::span<T> x, std::span<const T> y) {
  for (std::size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}
template <class T>
void add_bias(std::span<T> x, std::span<const float> b) {
  for (std::size_t i = 0; i < x.size(); ++i) x[i] += static_cast<T>(b[i]);
}

}  // namespace

void check_tokens(const Config& c, std::span<const std::int32_t> tokens) {
  if (tokens.empty()) throw InvalidArgument("decode::forward: no tokens");
  // Mutation point (decode-context-unchecked): the context check skipped.
  if (static_cast<std::int64_t>(tokens.size()) > c.context && !POPPER_MUTANT("decode-context-unchecked"))
    throw InvalidArgument("decode::forward: " + std::to_string(tokens.size()) + " tokens exceed the context of " +
                          std::to_string(c.context));
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= c.vocab)
      throw InvalidArgument("decode::forward: token " + std::to_string(i) + " = " + std::to_string(tokens[i]) +
                            " outside [0, " + std::to_string(c.vocab) + ")");
}

template <class T>
std::vector<T> forward(const Model& m, std::span<const std::int32_t> tokens, Ops<T>& ops,
                       const DepthLogits<T>& at_depth) {
  const Config& c = m.config;
  c.check();
  check_tokens(c, tokens);
  const auto H = static_cast<std::size_t>(c.hidden), Q = static_cast<std::size_t>(c.q_width()),
             KV = static_cast<std::size_t>(c.kv_width()), I = static_cast<std::size_t>(c.intermediate),
             n = tokens.size(), blocks_per_row = H / q4k::kBlockWeights;
  std::vector<T> x(H), a(H), q(Q), k(KV), v(KV), att(Q), proj(H), gate(I), up(I), h(I),
      logits(static_cast<std::size_t>(c.vocab));
  std::vector<std::vector<T>> k_cache(m.layers.size(), std::vector<T>(n * KV)), v_cache = k_cache;
  std::vector<float> row(H);

  const auto head = [&] {
    ops.rmsnorm(x, m.output_norm, a);
    ops.gemv(m.output, a, logits);
  };
  for (std::size_t t = 0; t < n; ++t) {
    const auto token = static_cast<std::size_t>(tokens[t]);
    q4k::reference::dequantize_row(m.token_embd.blocks.subspan(token * blocks_per_row, blocks_per_row), row);
    for (std::size_t i = 0; i < H; ++i) x[i] = static_cast<T>(row[i]);
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
      const Layer& y = m.layers[l];
      ops.rmsnorm(x, y.attn_norm, a);
      ops.gemv(y.q, a, q), add_bias<T>(q, y.q_bias);
      ops.gemv(y.k, a, k), add_bias<T>(k, y.k_bias);
      ops.gemv(y.v, a, v), add_bias<T>(v, y.v_bias);
      ops.rope(q, k, static_cast<std::int64_t>(t));
      std::copy(k.begin(), k.end(), k_cache[l].begin() + static_cast<std::ptrdiff_t>(t * KV));
      std::copy(v.begin(), v.end(), v_cache[l].begin() + static_cast<std::ptrdiff_t>(t * KV));
      const std::size_t len = (t + 1) * KV;
      ops.attention(q, std::span<const T>(k_cache[l]).first(len), std::span<const T>(v_cache[l]).first(len),
                    static_cast<std::int64_t>(t + 1), att);
      ops.gemv(y.o, att, proj), add<T>(x, proj);
      ops.rmsnorm(x, y.ffn_norm, a);
      ops.gemv(y.gate, a, gate);
      ops.gemv(y.up, a, up);
      ops.swiglu(gate, up, h);
      ops.gemv(y.down, h, proj), add<T>(x, proj);
      if (at_depth && t + 1 == n) {
        head();
        at_depth(static_cast<int>(l), logits);
      }
    }
  }
  if (!at_depth) head();  // with at_depth, the last layer's head already ran on the final x
  return logits;
}

template std::vector<float> forward(const Model&, std::span<const std::int32_t>, Ops<float>&,
                                    const DepthLogits<float>&);
template std::vector<double> forward(const Model&, std::span<const std::int32_t>, Ops<double>&,
                                     const DepthLogits<double>&);

}  // namespace popper::decode
