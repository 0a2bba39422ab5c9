// Separate attention over OpenBLAS (the bench's wrapped tier; contract
// attention_memory's control): every step a pass over all (b, h) of its own,
// the probabilities P [B, Hq, Sq, Skv] stored for the backward.
//   forward   S = Q K^T (SGEMM, op_b = Trans) -> softmax pass (scale, causal mask) -> O = P V (SGEMM)
//   backward  dV = sum_g P^T dO,  dP = dO V^T,  dS = P (dP - D),  dQ = scale dS K,  dK = scale sum_g dS^T Q
// The SGEMMs cover the full Sq x Skv square (the masked half included), as a
// separate implementation does. Heads run in parallel through
// popper::parallel with OpenBLAS held at one thread (BlasHandle), so threads
// do not multiply.
#include <algorithm>

#include "impl/common/parallel.hpp"
#include "impl/fused/driver.hpp"
#include "popper/mutant.hpp"
#include "impl/gemm/lib_blas.hpp"

namespace popper::fused::separate {
namespace {

using gemm::GemmShape;
using gemm::Op;

std::span<const float> sub(std::span<const float> s, std::int64_t off, std::int64_t len) {
  return s.subspan(static_cast<std::size_t>(off), static_cast<std::size_t>(len));
}
std::span<float> sub(std::span<float> s, std::int64_t off, std::int64_t len) {
  return s.subspan(static_cast<std::size_t>(off), static_cast<std::size_t>(len));
}
// Elements of `rows` strided rows of D values.
std::int64_t strided_len(std::int64_t rows, std::int64_t stride, std::int64_t D) {
  return rows == 0 ? 0 : (rows - 1) * stride + D;
}

GemmShape shape(std::int64_t m, std::int64_t n, std::int64_t k, Op oa, Op ob, std::int64_t lda, std::int64_t ldb,
                std::int64_t ldc) {
  GemmShape g;
  g.m = m, g.n = n, g.k = k, g.op_a = oa, g.op_b = ob, g.lda = lda, g.ldb = ldb, g.ldc = ldc;
  return g;
}

template <class F>
void over(std::int64_t units, const ExecOptions& o, F&& f) {
  parallel::run(static_cast<std::size_t>(units), detail::workers_for(units, o.threads),
                [&](std::size_t u0, std::size_t u1, int) {
                  for (std::size_t u = u0; u < u1; ++u) f(static_cast<std::int64_t>(u));
                });
}

}  // namespace

std::size_t attention_probs_bytes(const AttentionShape& s) {
  return static_cast<std::size_t>(s.batch * s.q_heads * s.q_len * s.kv_len) * sizeof(float);
}

AttentionSaved attention_forward(const AttentionShape& s, std::span<const float> q, std::span<const float> k,
                                 std::span<const float> v, std::span<float> o, const ExecOptions& opt) {
  using namespace detail;
  check_attention(s, q.size(), k.size(), v.size(), o.size(), static_cast<std::size_t>(s.batch * s.q_heads * s.q_len),
                  opt);
  const KernelTable& t = table_for(opt, "separate::attention_forward");
  const std::int64_t Sq = s.q_len, Skv = s.kv_len, Hq = s.q_heads, Hkv = s.kv_heads, D = s.head_dim;
  const std::int64_t g = Hq / Hkv, units = s.batch * Hq;
  AttentionSaved saved{FloatBuffer(allocator_of(opt), static_cast<std::size_t>(units * Sq * Skv))};
  if (units == 0 || Sq == 0) return saved;
  std::span<float> P = saved.probs.span();
  const float scale = attention_scale(s);
  const gemm::BlasHandle blas(gemm::BlasOptions{1, ""});
  over(units, opt, [&](std::int64_t u) {  // S = Q K^T
    const std::int64_t b = u / Hq, h = u % Hq, hk = h / g;
    blas.gemm(shape(Sq, Skv, D, Op::NoTrans, Op::Trans, Hq * D, Hkv * D, Skv), 1.0f,
              sub(q, (b * Sq * Hq + h) * D, strided_len(Sq, Hq * D, D)),
              sub(k, (b * Skv * Hkv + hk) * D, strided_len(Skv, Hkv * D, D)), 0.0f, sub(P, u * Sq * Skv, Sq * Skv));
  });
  const std::uint32_t mut = POPPER_MUTANT("attn-sep-shift-rounded-max") ? kMutAttnSepShiftRoundedMax : 0u;
  over(units, opt, [&](std::int64_t u) {  // softmax rows
    t.softmax_scaled_rows(P.data() + u * Sq * Skv, Skv, Skv, Sq, 0, Skv - Sq, s.causal, scale, nullptr, mut);
  });
  over(units, opt, [&](std::int64_t u) {  // O = P V
    const std::int64_t b = u / Hq, h = u % Hq, hk = h / g;
    blas.gemm(shape(Sq, D, Skv, Op::NoTrans, Op::NoTrans, Skv, Hkv * D, Hq * D), 1.0f,
              sub(std::span<const float>(P), u * Sq * Skv, Sq * Skv),
              sub(v, (b * Skv * Hkv + hk) * D, strided_len(Skv, Hkv * D, D)), 0.0f,
              sub(o, (b * Sq * Hq + h) * D, strided_len(Sq, Hq * D, D)));
  });
  return saved;
}

void attention_backward(const AttentionShape& s, const AttentionSaved& saved, std::span<const float> q,
                        std::span<const float> k, std::span<const float> v, std::span<const float> o,
                        std::span<const float> d_o, std::span<float> dq, std::span<float> dk, std::span<float> dv,
                        const ExecOptions& opt) {
  using namespace detail;
  check_attention(s, q.size(), k.size(), v.size(), o.size(), static_cast<std::size_t>(s.batch * s.q_heads * s.q_len),
                  opt);
  const std::int64_t Sq = s.q_len, Skv = s.kv_len, Hq = s.q_heads, Hkv = s.kv_heads, D = s.head_dim;
  require_len("probs", saved.probs.size(), s.batch * Hq * Sq * Skv);
  require_len("d_o", d_o.size(), s.batch * Sq * Hq * D);
  require_len("dq", dq.size(), s.batch * Sq * Hq * D);
  require_len("dk", dk.size(), s.batch * Skv * Hkv * D);
  require_len("dv", dv.size(), s.batch * Skv * Hkv * D);
  (void)table_for(opt, "separate::attention_backward");
  const std::int64_t g = Hq / Hkv, units = s.batch * Hq;
  std::fill(dk.begin(), dk.end(), 0.0f);
  std::fill(dv.begin(), dv.end(), 0.0f);
  if (units == 0) return;
  const float scale = attention_scale(s);
  std::span<const float> P(saved.probs.data(), saved.probs.size());
  FloatBuffer dS(allocator_of(opt), static_cast<std::size_t>(units * Sq * Skv));
  const gemm::BlasHandle blas(gemm::BlasOptions{1, ""});
  over(units, opt, [&](std::int64_t u) {  // dP = dO V^T
    const std::int64_t b = u / Hq, h = u % Hq, hk = h / g;
    blas.gemm(shape(Sq, Skv, D, Op::NoTrans, Op::Trans, Hq * D, Hkv * D, Skv), 1.0f,
              sub(d_o, (b * Sq * Hq + h) * D, strided_len(Sq, Hq * D, D)),
              sub(v, (b * Skv * Hkv + hk) * D, strided_len(Skv, Hkv * D, D)), 0.0f,
              sub(dS.span(), u * Sq * Skv, Sq * Skv));
  });
  over(units, opt, [&](std::int64_t u) {  // dS = P (dP - D_i), D_i = dO_i . O_i
    const std::int64_t b = u / Hq, h = u % Hq;
    for (std::int64_t i = 0; i < Sq; ++i) {
      const float* orow = o.data() + ((b * Sq + i) * Hq + h) * D;
      const float* drow = d_o.data() + ((b * Sq + i) * Hq + h) * D;
      float di = 0.0f;
      for (std::int64_t c = 0; c < D; ++c) di += drow[c] * orow[c];
      const float* p = P.data() + (u * Sq + i) * Skv;
      float* ds = dS.data() + (u * Sq + i) * Skv;
      for (std::int64_t j = 0; j < Skv; ++j) ds[j] = p[j] * (ds[j] - di);
    }
  });
  over(units, opt, [&](std::int64_t u) {  // dQ = scale dS K
    const std::int64_t b = u / Hq, h = u % Hq, hk = h / g;
    blas.gemm(shape(Sq, D, Skv, Op::NoTrans, Op::NoTrans, Skv, Hkv * D, Hq * D), scale,
              sub(std::span<const float>(dS.data(), dS.size()), u * Sq * Skv, Sq * Skv),
              sub(k, (b * Skv * Hkv + hk) * D, strided_len(Skv, Hkv * D, D)), 0.0f,
              sub(dq, (b * Sq * Hq + h) * D, strided_len(Sq, Hq * D, D)));
  });
  over(s.batch * Hkv, opt, [&](std::int64_t u) {  // dK = scale sum_g dS^T Q,  dV = sum_g P^T dO
    const std::int64_t b = u / Hkv, hk = u % Hkv;
    for (std::int64_t gi = 0; gi < g; ++gi) {
      const std::int64_t h = hk * g + gi, uq = b * Hq + h;
      const float beta = gi == 0 ? 0.0f : 1.0f;
      auto dkv = [&](std::span<float> out) { return sub(out, (b * Skv * Hkv + hk) * D, strided_len(Skv, Hkv * D, D)); };
      blas.gemm(shape(Skv, D, Sq, Op::Trans, Op::NoTrans, Skv, Hq * D, Hkv * D), scale,
                sub(std::span<const float>(dS.data(), dS.size()), uq * Sq * Skv, Sq * Skv),
                sub(q, (b * Sq * Hq + h) * D, strided_len(Sq, Hq * D, D)), beta, dkv(dk));
      blas.gemm(shape(Skv, D, Sq, Op::Trans, Op::NoTrans, Skv, Hq * D, Hkv * D), 1.0f, sub(P, uq * Sq * Skv, Sq * Skv),
                sub(d_o, (b * Sq * Hq + h) * D, strided_len(Sq, Hq * D, D)), beta, dkv(dv));
    }
  });
}

}  // namespace popper::fused::separate
