// Fused causal GQA attention driver (contract attention_forward,
// attention_backward, attention_memory).
//
//   O = softmax(Q K^T scale + causal mask) V,  lse = ln sum_j exp(s_ij)   (bottom-right causal)
//
// Forward units (b, hkv, 64-query block: every query head of the group, so a
// key/value block is packed once per group) weighted by their number of key blocks;
// backward units (b, hkv) own dK, dV and the dQ of their query heads. Workspace
// per worker is attn_fwd_ws_floats / attn_bwd_ws_floats (cpu_kernels.hpp), so
// the peak is O(threads tile) (+ O(g Sq D) per backward worker), never O(Sq Skv).
#include <cmath>
#include <vector>

#include "impl/common/parallel.hpp"
#include "impl/fused/driver.hpp"
#include "popper/mutant.hpp"

namespace popper::fused {
namespace detail {

void check_attention(const AttentionShape& s, std::size_t q, std::size_t k, std::size_t v, std::size_t o,
                     std::size_t lse, const ExecOptions& opt) {
  check_threads(opt);
  require(s.batch >= 0 && s.q_len >= 0 && s.kv_len >= 0, "attention: batch, q_len, kv_len must be >= 0");
  require(s.q_heads >= 1 && s.kv_heads >= 1 && s.q_heads % s.kv_heads == 0,
          "attention: q_heads must be a positive multiple of kv_heads (GQA)");
  require(s.head_dim >= 1 && s.head_dim <= 1024, "attention: head_dim must be in [1, 1024]");
  require(!s.causal || s.kv_len >= s.q_len, "attention: causal needs kv_len >= q_len (bottom-right aligned mask)");
  require(s.q_len == 0 || s.kv_len >= 1, "attention: queries need at least one key");
  require(s.scale == s.scale && s.scale >= 0.0f && s.scale < 1e30f,
          "attention: scale must be finite and >= 0 (0 = 1/sqrt(D))");
  const std::int64_t big = std::int64_t{1} << 40;
  require(s.batch * s.q_len <= big / (s.q_heads * s.head_dim) && s.batch * s.kv_len <= big / (s.kv_heads * s.head_dim),
          "attention: tensors too large");
  require_len("q", q, s.batch * s.q_len * s.q_heads * s.head_dim);
  require_len("k", k, s.batch * s.kv_len * s.kv_heads * s.head_dim);
  require_len("v", v, s.batch * s.kv_len * s.kv_heads * s.head_dim);
  require_len("o", o, s.batch * s.q_len * s.q_heads * s.head_dim);
  require_len("lse", lse, s.batch * s.q_heads * s.q_len);
}

float attention_scale(const AttentionShape& s) {
  return s.scale > 0.0f ? s.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.head_dim)));
}

std::uint32_t attn_mutants() {
  std::uint32_t m = 0;
  if (POPPER_MUTANT("attn-no-rescale")) m |= kMutAttnNoRescale;
  if (POPPER_MUTANT("attn-causal-off-by-one")) m |= kMutAttnCausalOffByOne;
  if (POPPER_MUTANT("attn-gqa-wrong-kv-head")) m |= kMutAttnGqaWrongKvHead;
  if (POPPER_MUTANT("attn-decode-causal-top-left")) m |= kMutAttnDecodeTopLeft;
  if (POPPER_MUTANT("attn-bwd-missing-delta")) m |= kMutAttnBwdMissingDelta;
  if (POPPER_MUTANT("attn-bwd-gqa-overwrite")) m |= kMutAttnBwdGqaOverwrite;
  if (POPPER_MUTANT("attn-diagonal-columns-short")) m |= kMutAttnDiagonalColumnsShort;
  if (POPPER_MUTANT("attn-bwd-diagonal-first-query-late")) m |= kMutAttnBwdDiagonalLate;
  if (POPPER_MUTANT("bf16-widen-drops-low-bit")) m |= kMutBf16WidenDropsLowBit;
  return m;
}

std::int64_t forward_units(const AttentionShape& s) { return s.batch * s.kv_heads * ((s.q_len + kTileQ - 1) / kTileQ); }

RunInfo run_forward(const AttentionShape& s, AttnArgs a, const ExecOptions& opt, const char* who) {
  const KernelTable& t = table_for(opt, who);
  const std::int64_t units = forward_units(s);
  if (units == 0) return RunInfo{t.tag, false, ""};
  Allocator& alloc = allocator_of(opt);
  if (POPPER_MUTANT("attn-materializes-scores")) {  // the full score tensor the fused kernel must never need
    FloatBuffer scores(alloc, static_cast<std::size_t>(s.batch * s.q_heads * s.q_len * s.kv_len));
    scores.data()[0] = 0.0f;
  }
  const int workers = workers_for(units, opt.threads);
  WorkerScratch ws(alloc, workers, attn_fwd_ws_floats(s.head_dim, s.q_heads / s.kv_heads));
  // Cost of a unit: its key blocks (causal: grows with the query block).
  const std::int64_t nqb = (s.q_len + kTileQ - 1) / kTileQ;
  std::vector<double> cost(static_cast<std::size_t>(units));
  for (std::int64_t u = 0; u < units; ++u) {
    const std::int64_t qb = u % nqb;
    const std::int64_t last = s.causal ? std::min(s.kv_len, (qb + 1) * kTileQ + s.kv_len - s.q_len) : s.kv_len;
    cost[static_cast<std::size_t>(u)] = static_cast<double>((last + kTileKv - 1) / kTileKv + 1);
  }
  parallel::run_weighted(cost, workers, [&](std::size_t u0, std::size_t u1, int w) {
    for (std::size_t u = u0; u < u1; ++u) t.attn_fwd_unit(a, static_cast<std::int64_t>(u), ws.of(w));
  });
  return RunInfo{t.tag, false, ""};
}

}  // namespace detail

std::size_t attention_forward_workspace_bytes(const AttentionShape& s, int threads) {
  const int workers = detail::workers_for(detail::forward_units(s), threads < 1 ? 1 : threads);
  return static_cast<std::size_t>(workers) *
         ((detail::attn_fwd_ws_floats(s.head_dim, s.q_heads / s.kv_heads) + 15) / 16 * 16) * sizeof(float);
}

std::size_t attention_backward_workspace_bytes(const AttentionShape& s, int threads) {
  const int workers = detail::workers_for(s.batch * s.kv_heads, threads < 1 ? 1 : threads);
  const std::size_t per = detail::attn_bwd_ws_floats(s.head_dim, s.q_heads / s.kv_heads, s.q_len);
  return static_cast<std::size_t>(workers) * ((per + 15) / 16 * 16) * sizeof(float);
}

RunInfo attention_forward(const AttentionShape& s, std::span<const float> q, std::span<const float> k,
                          std::span<const float> v, std::span<float> o, std::span<float> lse, const ExecOptions& opt) {
  using namespace detail;
  check_attention(s, q.size(), k.size(), v.size(), o.size(), lse.size(), opt);
  AttnArgs a{q.data(),      k.data(),   v.data(),   nullptr,  nullptr,
             nullptr,       o.data(),   lse.data(), nullptr,  nullptr,
             nullptr,       nullptr,    s.batch,    s.q_len,  s.kv_len,
             s.q_heads,     s.kv_heads, s.head_dim, s.causal, attention_scale(s),
             attn_mutants()};
  return run_forward(s, a, opt, "fused::attention_forward");
}

RunInfo attention_forward_bf16(const AttentionShape& s, std::span<const std::uint16_t> q,
                               std::span<const std::uint16_t> k, std::span<const std::uint16_t> v, std::span<float> o,
                               std::span<float> lse, const ExecOptions& opt) {
  using namespace detail;
  check_attention(s, q.size(), k.size(), v.size(), o.size(), lse.size(), opt);
  AttnArgs a{nullptr,       nullptr,    nullptr,    q.data(), k.data(),
             v.data(),      o.data(),   lse.data(), nullptr,  nullptr,
             nullptr,       nullptr,    s.batch,    s.q_len,  s.kv_len,
             s.q_heads,     s.kv_heads, s.head_dim, s.causal, attention_scale(s),
             attn_mutants()};
  return run_forward(s, a, opt, "fused::attention_forward_bf16");
}

RunInfo attention_backward(const AttentionShape& s, std::span<const float> q, std::span<const float> k,
                           std::span<const float> v, std::span<const float> o, std::span<const float> lse,
                           std::span<const float> d_o, std::span<float> dq, std::span<float> dk, std::span<float> dv,
                           const ExecOptions& opt) {
  using namespace detail;
  check_attention(s, q.size(), k.size(), v.size(), o.size(), lse.size(), opt);
  require_len("d_o", d_o.size(), s.batch * s.q_len * s.q_heads * s.head_dim);
  require_len("dq", dq.size(), s.batch * s.q_len * s.q_heads * s.head_dim);
  require_len("dk", dk.size(), s.batch * s.kv_len * s.kv_heads * s.head_dim);
  require_len("dv", dv.size(), s.batch * s.kv_len * s.kv_heads * s.head_dim);
  const KernelTable& t = table_for(opt, "fused::attention_backward");
  AttnArgs a{q.data(),
             k.data(),
             v.data(),
             nullptr,
             nullptr,
             nullptr,
             const_cast<float*>(o.data()),
             const_cast<float*>(lse.data()),
             d_o.data(),
             dq.data(),
             dk.data(),
             dv.data(),
             s.batch,
             s.q_len,
             s.kv_len,
             s.q_heads,
             s.kv_heads,
             s.head_dim,
             s.causal,
             attention_scale(s),
             attn_mutants()};
  const std::int64_t units = s.batch * s.kv_heads;
  if (units == 0) return RunInfo{t.tag, false, ""};
  const int workers = workers_for(units, opt.threads);
  WorkerScratch ws(allocator_of(opt), workers, attn_bwd_ws_floats(s.head_dim, s.q_heads / s.kv_heads, s.q_len));
  parallel::run(static_cast<std::size_t>(units), workers, [&](std::size_t u0, std::size_t u1, int w) {
    for (std::size_t u = u0; u < u1; ++u) t.attn_bwd_unit(a, static_cast<std::int64_t>(u), ws.of(w));
  });
  return RunInfo{t.tag, false, ""};
}

}  // namespace popper::fused
