// The separate (unfused) path of CE, RMSNorm, SwiGLU and RoPE: the bench's
// wrapped tier and the memory claims' control. Each step is its own pass over
// the whole tensor with its intermediate allocated through the allocator, on
// the same SIMD primitives as the fused kernels (so a speed ratio measures
// the fusion, not the vector width).
//   CE       softmax pass (P stored, rows x V) -> loss pass -> grad pass
//   RMSNorm  forward saves normed (rows x H) and inv_rms; backward reads normed
//   SwiGLU   sigma pass (stored) -> d_up pass -> d_gate pass, grads allocated
//   RoPE     one pass per head, cos/sin reloaded per head
#include <algorithm>
#include <cmath>
#include <vector>

#include "impl/common/parallel.hpp"
#include "impl/fused/driver.hpp"
#include "popper/mutant.hpp"

namespace popper::fused {
namespace detail {
void rmsnorm_backward_rows(const KernelTable& t, const RmsNormShape& s, RmsArgs a, bool from_saved,
                           std::span<float> d_weight, const ExecOptions& o);
}

namespace separate {
using namespace detail;

namespace {
template <class F>
void rows_parallel(std::int64_t rows, const ExecOptions& o, F&& f) {
  parallel::run(static_cast<std::size_t>(rows), workers_for(rows, o.threads), [&](std::size_t r0, std::size_t r1, int) {
    f(static_cast<std::int64_t>(r0), static_cast<std::int64_t>(r1));
  });
}
}  // namespace

CrossEntropyResult cross_entropy(const CrossEntropyShape& s, std::span<const float> logits,
                                 std::span<const std::int64_t> labels, std::span<float> loss, std::span<float> grad,
                                 const ExecOptions& o) {
  check_cross_entropy(s, logits, labels, loss, grad, {}, o);
  const KernelTable& t = table_for(o, "separate::cross_entropy");
  CrossEntropyResult res;
  res.run.backend = t.tag;
  if (s.rows == 0) return res;
  const std::int64_t V = s.vocab;
  FloatBuffer probs(allocator_of(o), static_cast<std::size_t>(s.rows * V));
  rows_parallel(s.rows, o,
                [&](std::int64_t r0, std::int64_t r1) { t.softmax_rows(logits.data(), probs.data(), V, r0, r1); });
  for (std::int64_t r = 0; r < s.rows; ++r) {  // loss pass
    const std::int64_t y = labels[static_cast<std::size_t>(r)];
    if (y == s.ignore_index) {
      loss[static_cast<std::size_t>(r)] = 0.0f;
      ++res.ignored_rows;
      continue;
    }
    const float l = -std::log(probs.data()[r * V + y]);
    loss[static_cast<std::size_t>(r)] = l;
    if (std::isfinite(l)) res.loss_sum += l;
    else ++res.nonfinite_rows;
  }
  rows_parallel(s.rows, o, [&](std::int64_t r0, std::int64_t r1) {
    t.ce_grad_from_probs(probs.data(), labels.data(), grad.data(), V, s.ignore_index, s.grad_scale, r0, r1);
  });
  return res;
}

RmsNormSaved rmsnorm_forward(const RmsNormShape& s, std::span<const float> x, std::span<const float> weight,
                             std::span<float> y, const ExecOptions& o) {
  check_rmsnorm(s, x.size(), weight.size(), y.size(), o);
  const KernelTable& t = table_for(o, "separate::rmsnorm_forward");
  Allocator& alloc = allocator_of(o);
  RmsNormSaved saved{FloatBuffer(alloc, static_cast<std::size_t>(s.rows * s.hidden)),
                     FloatBuffer(alloc, static_cast<std::size_t>(s.rows))};
  RmsArgs a{x.data(), weight.data(), y.data(), saved.inv_rms.data(), saved.normed.data(), nullptr, nullptr,
            s.hidden, s.eps,         0};
  rows_parallel(s.rows, o, [&](std::int64_t r0, std::int64_t r1) { t.rms_fwd_rows(a, r0, r1); });
  return saved;
}

void rmsnorm_backward(const RmsNormShape& s, const RmsNormSaved& saved, std::span<const float> weight,
                      std::span<const float> dy, std::span<float> d_input, std::span<float> d_weight,
                      const ExecOptions& o) {
  check_rmsnorm(s, saved.normed.size(), weight.size(), d_input.size(), o);
  require_len("inv_rms", saved.inv_rms.size(), s.rows);
  require_len("dy", dy.size(), s.rows * s.hidden);
  require_len("d_weight", d_weight.size(), s.hidden);
  const KernelTable& t = table_for(o, "separate::rmsnorm_backward");
  RmsArgs a{nullptr,  weight.data(), nullptr, saved.inv_rms.data(), saved.normed.data(), dy.data(), d_input.data(),
            s.hidden, s.eps,         0};
  rmsnorm_backward_rows(t, s, a, true, d_weight, o);
}

SwigluGrads swiglu_backward(const SwigluShape& s, std::span<const float> dh, std::span<const float> gate,
                            std::span<const float> up, const ExecOptions& o) {
  check_swiglu(s, gate.size(), up.size(), dh.size(), o);
  const KernelTable& t = table_for(o, "separate::swiglu_backward");
  Allocator& alloc = allocator_of(o);
  const std::size_t n = static_cast<std::size_t>(s.rows * s.width);
  SwigluGrads g{FloatBuffer(alloc, n), FloatBuffer(alloc, n)};
  FloatBuffer sigma(alloc, n);
  const std::int64_t W = s.width;
  rows_parallel(s.rows, o, [&](std::int64_t r0, std::int64_t r1) {
    t.sigmoid(gate.data() + r0 * W, sigma.data() + r0 * W, (r1 - r0) * W);
  });
  rows_parallel(s.rows, o, [&](std::int64_t r0, std::int64_t r1) {
    const std::int64_t b = r0 * W;
    t.swiglu_sep(dh.data() + b, gate.data() + b, up.data() + b, sigma.data() + b, nullptr, g.d_up.data() + b,
                 (r1 - r0) * W);
  });
  rows_parallel(s.rows, o, [&](std::int64_t r0, std::int64_t r1) {
    const std::int64_t b = r0 * W;
    t.swiglu_sep(dh.data() + b, gate.data() + b, up.data() + b, sigma.data() + b, g.d_gate.data() + b, nullptr,
                 (r1 - r0) * W);
  });
  return g;
}

namespace {
RunInfo rope_per_head(const RopeShape& s, const RopeTable& t, std::span<float> q, std::span<float> k,
                      const ExecOptions& o, bool inverse, const char* who) {
  check_rope(s, t, q.size(), k.size(), o);
  const KernelTable& kt = table_for(o, who);
  const std::int64_t half = s.head_dim / 2, tokens = s.batch * s.seq, D = s.head_dim;
  // Mutant: the per-head path recomputes cos/sin in FP32 from the angle instead of loading the table.
  const bool own_angles = POPPER_MUTANT("rope-per-head-angle-formula");
  const int workers = workers_for(tokens, o.threads);
  std::vector<float> angle_rows(own_angles ? static_cast<std::size_t>(2 * half * workers) : 0);
  for (int which = 0; which < 2; ++which) {
    const std::int64_t heads = which == 0 ? s.q_heads : s.kv_heads;
    float* base = which == 0 ? q.data() : k.data();
    for (std::int64_t h = 0; h < heads; ++h) {  // one pass per head (a "launch" per head)
      parallel::run(static_cast<std::size_t>(tokens), workers, [&](std::size_t t0, std::size_t t1, int w) {
        for (std::size_t tok = t0; tok < t1; ++tok) {
          const std::int64_t tk = static_cast<std::int64_t>(tok);
          const std::int64_t pos = s.pos_offset + tk % s.seq;
          const float* c = t.cos.data() + pos * half;
          const float* sn = t.sin.data() + pos * half;
          if (own_angles) {
            float* cc = angle_rows.data() + 2 * half * w;
            for (std::int64_t j = 0; j < half; ++j) {
              const float ang =
                  static_cast<float>(pos) * std::pow(10000.0f, -2.0f * static_cast<float>(j) / static_cast<float>(D));
              cc[j] = std::cos(ang);
              cc[half + j] = std::sin(ang);
            }
            c = cc;
            sn = cc + half;
          }
          kt.rope_heads(c, sn, base + (tk * heads + h) * D, 1, D, inverse);
        }
      });
    }
  }
  return RunInfo{kt.tag, false, ""};
}
}  // namespace

RunInfo rope_forward_per_head(const RopeShape& s, const RopeTable& t, std::span<float> q, std::span<float> k,
                              const ExecOptions& o) {
  return rope_per_head(s, t, q, k, o, false, "separate::rope_forward_per_head");
}
RunInfo rope_backward_per_head(const RopeShape& s, const RopeTable& t, std::span<float> dq, std::span<float> dk,
                               const ExecOptions& o) {
  return rope_per_head(s, t, dq, dk, o, true, "separate::rope_backward_per_head");
}

}  // namespace separate
}  // namespace popper::fused
