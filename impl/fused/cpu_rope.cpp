// Grouped RoPE driver (contract rope): per token one cos/sin row of the table,
// applied to all Hq query heads and Hkv key heads; backward = inverse rotation.
#include <cmath>

#include "impl/common/parallel.hpp"
#include "impl/fused/driver.hpp"
#include "popper/mutant.hpp"

namespace popper::fused {

RopeTable make_rope_table(std::int64_t positions, std::int64_t head_dim, double base) {
  detail::require(positions >= 0 && head_dim >= 2 && head_dim % 2 == 0,
                  "rope table: positions >= 0 and an even head_dim >= 2");
  detail::require(base > 1.0, "rope table: base must be > 1");
  RopeTable t;
  t.positions = positions;
  t.head_dim = head_dim;
  const std::int64_t half = head_dim / 2;
  t.cos.resize(static_cast<std::size_t>(positions * half));
  t.sin.resize(t.cos.size());
  for (std::int64_t p = 0; p < positions; ++p)
    for (std::int64_t j = 0; j < half; ++j) {
      const double angle =
          static_cast<double>(p) * std::pow(base, -2.0 * static_cast<double>(j) / static_cast<double>(head_dim));
      t.cos[static_cast<std::size_t>(p * half + j)] = static_cast<float>(std::cos(angle));
      t.sin[static_cast<std::size_t>(p * half + j)] = static_cast<float>(std::sin(angle));
    }
  return t;
}

namespace detail {

void check_rope(const RopeShape& s, const RopeTable& t, std::size_t q, std::size_t k, const ExecOptions& o) {
  check_threads(o);
  require(s.batch >= 0 && s.seq >= 0 && s.q_heads >= 1 && s.kv_heads >= 1, "rope: batch, seq >= 0 and heads >= 1");
  require(s.head_dim >= 2 && s.head_dim % 2 == 0, "rope: head_dim must be even and >= 2");
  require(t.head_dim == s.head_dim, "rope: table head_dim differs from the shape's");
  require(s.pos_offset >= 0, "rope: pos_offset must be >= 0");
  require(s.pos_offset + s.seq <= t.positions, "rope: positions up to " + std::to_string(s.pos_offset + s.seq - 1) +
                                                   " need a table of at least " + std::to_string(s.pos_offset + s.seq) +
                                                   " positions (has " + std::to_string(t.positions) + ")");
  require(t.cos.size() >= static_cast<std::size_t>(t.positions * t.head_dim / 2) && t.sin.size() == t.cos.size(),
          "rope: table arrays are shorter than positions * head_dim / 2");
  require(s.batch * s.seq <= (std::int64_t{1} << 40) / (s.q_heads * s.head_dim), "rope: tensor too large");
  require_len("q", q, s.batch * s.seq * s.q_heads * s.head_dim);
  require_len("k", k, s.batch * s.seq * s.kv_heads * s.head_dim);
}

RunInfo rope_grouped(const RopeShape& s, const RopeTable& t, std::span<float> q, std::span<float> k,
                     const ExecOptions& o, bool inverse, const char* who) {
  check_rope(s, t, q.size(), k.size(), o);
  const KernelTable& kt = table_for(o, who);
  const std::int64_t half = s.head_dim / 2, tokens = s.batch * s.seq;
  parallel::run(static_cast<std::size_t>(tokens), workers_for(tokens, o.threads),
                [&](std::size_t t0, std::size_t t1, int) {
                  for (std::size_t tok = t0; tok < t1; ++tok) {
                    const std::int64_t tk = static_cast<std::int64_t>(tok);
                    const std::int64_t pos = s.pos_offset + tk % s.seq;
                    const float* c = t.cos.data() + pos * half;
                    const float* sn = t.sin.data() + pos * half;
                    kt.rope_heads(c, sn, q.data() + tk * s.q_heads * s.head_dim, s.q_heads, s.head_dim, inverse);
                    kt.rope_heads(c, sn, k.data() + tk * s.kv_heads * s.head_dim, s.kv_heads, s.head_dim, inverse);
                  }
                });
  return RunInfo{kt.tag, false, ""};
}

}  // namespace detail

RunInfo rope_forward(const RopeShape& s, const RopeTable& t, std::span<float> q, std::span<float> k,
                     const ExecOptions& o) {
  return detail::rope_grouped(s, t, q, k, o, false, "fused::rope_forward");
}

RunInfo rope_backward(const RopeShape& s, const RopeTable& t, std::span<float> dq, std::span<float> dk,
                      const ExecOptions& o) {
  const bool same = POPPER_MUTANT("rope-backward-same-rotation");
  return detail::rope_grouped(s, t, dq, dk, o, !same, "fused::rope_backward");
}

}  // namespace popper::fused
