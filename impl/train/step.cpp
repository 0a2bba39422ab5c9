// The step driver (train.hpp): forward and backward of the decoder over one
// Kernels implementation, every operation an op span of its brick, nested in a
// block span per layer. Per-span FLOPs and bytes are the problem's (the same
// for both backends): a GEMM 2mnk FLOPs over its operands' bytes; the
// element-wise models are those of the fused bench's shapes.h.
//
// Backward, per layer (d = gradient of the loss; "x +=" is the residual path):
//   dh = dx Wd, dWd = dx^T h;  (dg, du) = swiglu'(dh);  df = dg Wg + du Wu,
//   dWg = dg^T f, dWu = du^T f;  dm = dx + rmsnorm'(df);  do = dm Wo, dWo = dm^T o;
//   (dq, dk, dv) = attention'(do);  rope^-1(dq, dk);  db = column sums;
//   da = dq Wq + dk Wk + dv Wv, dW = d^T a;  dx = dm + rmsnorm'(da).
#include <algorithm>
#include <cstring>
#include <limits>

#include "impl/common/parallel.hpp"
#include "impl/train/kernels.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::train {

using detail::GemmCall;
using gemm::Op;
using trace::Scope;

namespace {
// A float buffer of n elements (64-byte aligned, from the fused kernels' heap).
fused::FloatBuffer buffer(std::int64_t n) {
  return fused::FloatBuffer(fused::heap_allocator(), static_cast<std::size_t>(n));
}
}  // namespace

struct Step::Impl {
  struct Acts {  // what layer l's forward keeps for its backward
    fused::FloatBuffer x_mid, a, q, k, v, o, f, g, u, h;
  };

  Config c;
  StepOptions o;
  ParamLayout layout;
  std::unique_ptr<detail::Kernels> k;
  fused::RopeTable rope;
  std::vector<fused::FloatBuffer> resid;  // x_0 .. x_L
  std::vector<Acts> acts;
  fused::FloatBuffer n, logits, loss_rows, dx, dtmp, dnorm, dh, dq, dk, dv, d_o;
  // Per layout tensor: this step's product of its gradient probed every element finite.
  std::vector<char> vouched;
  float* grads = nullptr;  // this step's gradient buffer

  // Mutation points, read once per step (popper/mutant.hpp: hoisted out of the loops).
  bool m_transposed = false, m_residual = false, m_rope = false, m_bias = false, m_scatter = false,
       m_not_cleared = false, m_swapped = false, m_untraced = false, m_misfiled = false, m_attn_cut = false,
       m_vouch_all = false;

  Impl(const Config& cfg, const StepOptions& opt) : c(cfg), o(opt), layout(cfg), vouched(layout.tensors.size(), 0) {
    if (o.threads < 1) throw InvalidArgument("train: threads must be >= 1");
    k = o.backend == Backend::Hand ? detail::make_hand_kernels(c, o) : detail::make_wrapped_kernels(c, o);
    rope = fused::make_rope_table(c.seq, c.head_dim, c.rope_base);
    const std::int64_t T = c.tokens(), H = c.hidden, Q = c.q_width(), K = c.kv_width(), I = c.intermediate;
    for (std::int64_t l = 0; l <= c.layers; ++l) resid.push_back(buffer(T * H));
    for (std::int64_t l = 0; l < c.layers; ++l)
      acts.push_back(Acts{buffer(T * H), buffer(T * H), buffer(T * Q), buffer(T * K), buffer(T * K), buffer(T * Q),
                          buffer(T * H), buffer(T * I), buffer(T * I), buffer(T * I)});
    n = buffer(T * H), logits = buffer(T * c.vocab), loss_rows = buffer(T);
    dx = buffer(T * H), dtmp = buffer(T * H), dnorm = buffer(T * H), dh = buffer(T * I);
    dq = buffer(T * Q), dk = buffer(T * K), dv = buffer(T * K), d_o = buffer(T * Q);
  }

  // One GEMM as an op span of its brick (FLOPs 2mnk; bytes of A, B and C, C twice when accumulated).
  // A weight gradient's tensor is vouched for when the kernel probed it finite.
  void product(trace::Tracer* tr, const char* name, int brick, int layer, const GemmCall& g) {
    if (m_untraced && brick == kGemmBackward) tr = nullptr;
    const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
    const double bytes = 4.0 * static_cast<double>(g.m * g.k + g.k * g.n + g.m * g.n * (g.beta != 0 ? 2 : 1));
    Scope s(tr, name, m_misfiled ? kElementwise : brick, layer, flops, bytes);
    const bool finite = k->gemm(g);
    if (!g.weight_gradient) return;
    const auto offset = static_cast<std::size_t>(g.c - grads);
    for (std::size_t t = 0; t < layout.tensors.size(); ++t)
      if (layout.tensors[t].offset == offset) {
        vouched[t] = finite || m_vouch_all;  // the mutant: the probe ignored
        return;
      }
  }

  // Threads for a pass over `elements` floats: one per 64K (waking a worker costs more than a smaller pass).
  int workers(std::int64_t elements) const {
    return static_cast<int>(std::clamp<std::int64_t>(elements / 65536, 1, o.threads));
  }
  // Rows of `dst` [T, n] all set to `bias` [n] (the bias enters the GEMM as its C with beta = 1).
  void broadcast_rows(const float* bias, float* dst, std::int64_t cols) const {
    parallel::run(static_cast<std::size_t>(c.tokens()), workers(c.tokens() * cols),
                  [&](std::size_t b, std::size_t e, int) {
                    for (std::size_t t = b; t < e; ++t)
                      std::memcpy(dst + t * static_cast<std::size_t>(cols), bias, static_cast<std::size_t>(cols) * 4);
                  });
  }
  // db[j] = sum_t d[t, j], each worker a range of columns summed in token order (deterministic).
  void column_sums(const float* d, float* db, std::int64_t cols) const {
    const std::int64_t T = c.tokens();
    parallel::run(static_cast<std::size_t>(cols), std::min(workers(T * cols), static_cast<int>(cols / 16) + 1),
                  [&](std::size_t b, std::size_t e, int) {
                    std::fill(db + b, db + e, 0.0f);
                    for (std::int64_t t = 0; t < T; ++t) {
                      const float* row = d + t * cols;
                      for (std::size_t j = b; j < e; ++j) db[j] += row[j];
                    }
                  });
  }
  // y += x over [T, H] rows (parallel over tokens).
  void add_into(float* y, const float* x) const {
    const std::size_t H = static_cast<std::size_t>(c.hidden);
    parallel::run(static_cast<std::size_t>(c.tokens()), workers(c.tokens() * c.hidden),
                  [&](std::size_t b, std::size_t e, int) {
                    for (std::size_t i = b * H; i < e * H; ++i) y[i] += x[i];
                  });
  }
  void copy_rows(float* y, const float* x) const {
    const std::size_t H = static_cast<std::size_t>(c.hidden);
    parallel::run(static_cast<std::size_t>(c.tokens()), workers(c.tokens() * c.hidden),
                  [&](std::size_t b, std::size_t e, int) { std::memcpy(y + b * H, x + b * H, (e - b) * H * 4); });
  }

  double run(const float* P, const std::int64_t* tokens, const std::int64_t* labels, float* G, trace::Tracer* tr);
};

double Step::Impl::run(const float* P, const std::int64_t* tokens, const std::int64_t* labels, float* G,
                       trace::Tracer* tr) {
  m_transposed = POPPER_MUTANT("train-grad-gemm-transposed");
  m_residual = POPPER_MUTANT("train-backward-drops-residual");
  m_rope = POPPER_MUTANT("train-rope-backward-skipped");
  m_bias = POPPER_MUTANT("train-bias-grad-dropped");
  m_scatter = POPPER_MUTANT("train-embedding-scatter-overwrites");
  m_not_cleared = POPPER_MUTANT("train-embedding-grad-not-cleared");
  m_swapped = POPPER_MUTANT("train-swiglu-backward-swapped");
  m_untraced = POPPER_MUTANT("budget-gemm-backward-untraced");
  m_misfiled = POPPER_MUTANT("budget-gemm-attributed-to-elementwise");
  m_attn_cut = POPPER_MUTANT("train-attention-grad-cut");
  m_vouch_all = POPPER_MUTANT("train-vouch-ignores-probe");
  grads = G;
  std::fill(vouched.begin(), vouched.end(), 0);

  const std::int64_t T = c.tokens(), H = c.hidden, Q = c.q_width(), K = c.kv_width(), I = c.intermediate, V = c.vocab;
  const double t = static_cast<double>(T), h = static_cast<double>(H);
  const fused::RmsNormShape norm{T, H, c.rms_eps};
  const fused::RopeShape rs{c.batch, c.seq, c.q_heads, c.kv_heads, c.head_dim, 0};
  fused::AttentionShape as;
  as.batch = c.batch, as.q_len = as.kv_len = c.seq, as.q_heads = c.q_heads, as.kv_heads = c.kv_heads;
  as.head_dim = c.head_dim, as.causal = true;
  const double pairs = static_cast<double>(c.seq) * static_cast<double>(c.seq + 1) / 2;
  const double attn_flops = 4.0 * static_cast<double>(c.batch * c.q_heads * c.head_dim) * pairs;
  const double qkv_bytes = 4.0 * t * static_cast<double>(Q + 2 * K);
  const fused::SwigluShape sw{T, I};
  const double ti = t * static_cast<double>(I);

  // ---------------------------------------------------------------- forward
  {
    Scope s(tr, "embedding", kEmbedding, -1, 0, 8.0 * t * h);
    parallel::run(static_cast<std::size_t>(T), workers(T * H), [&](std::size_t b, std::size_t e, int) {
      for (std::size_t i = b; i < e; ++i)
        std::memcpy(resid[0].data() + i * static_cast<std::size_t>(H),
                    P + layout.embed + static_cast<std::size_t>(tokens[i] * H), static_cast<std::size_t>(H) * 4);
    });
  }
  for (std::int64_t l = 0; l < c.layers; ++l) {
    Scope block(tr, "block", trace::kNone, static_cast<int>(l));
    const LayerTensors& w = layout.layers[static_cast<std::size_t>(l)];
    Acts& A = acts[static_cast<std::size_t>(l)];
    const int li = static_cast<int>(l), slot = 2 * li;
    float* x = resid[static_cast<std::size_t>(l)].data();
    {
      Scope s(tr, "attn_norm", kElementwise, li, 4 * t * h, 8 * t * h);
      k->rmsnorm_forward(slot, norm, x, P + w.attn_norm, A.a.data());
    }
    {
      Scope s(tr, "qkv_bias", kElementwise, li, 0, qkv_bytes);
      broadcast_rows(P + w.bq, A.q.data(), Q), broadcast_rows(P + w.bk, A.k.data(), K),
          broadcast_rows(P + w.bv, A.v.data(), K);
    }
    product(tr, "q_proj", kGemmForward, li, {Op::NoTrans, Op::Trans, T, Q, H, A.a.data(), P + w.wq, 1.0f, A.q.data()});
    product(tr, "k_proj", kGemmForward, li, {Op::NoTrans, Op::Trans, T, K, H, A.a.data(), P + w.wk, 1.0f, A.k.data()});
    product(tr, "v_proj", kGemmForward, li, {Op::NoTrans, Op::Trans, T, K, H, A.a.data(), P + w.wv, 1.0f, A.v.data()});
    {
      Scope s(tr, "rope", kElementwise, li, 3 * t * static_cast<double>(Q + K), 8 * t * static_cast<double>(Q + K));
      k->rope(false, rs, rope, A.q.data(), A.k.data());
    }
    {
      Scope s(tr, "attention", kAttention, li, attn_flops, qkv_bytes + 4 * t * static_cast<double>(Q));
      k->attention_forward(li, as, A.q.data(), A.k.data(), A.v.data(), A.o.data());
    }
    {
      Scope s(tr, "residual", kElementwise, li, 0, 8 * t * h);
      copy_rows(A.x_mid.data(), x);
    }
    product(tr, "o_proj", kGemmForward, li,
            {Op::NoTrans, Op::Trans, T, H, Q, A.o.data(), P + w.wo, 1.0f, A.x_mid.data()});
    {
      Scope s(tr, "ffn_norm", kElementwise, li, 4 * t * h, 8 * t * h);
      k->rmsnorm_forward(slot + 1, norm, A.x_mid.data(), P + w.ffn_norm, A.f.data());
    }
    product(tr, "gate_proj", kGemmForward, li,
            {Op::NoTrans, Op::Trans, T, I, H, A.f.data(), P + w.w_gate, 0.0f, A.g.data()});
    product(tr, "up_proj", kGemmForward, li,
            {Op::NoTrans, Op::Trans, T, I, H, A.f.data(), P + w.w_up, 0.0f, A.u.data()});
    {
      Scope s(tr, "swiglu", kElementwise, li, 5 * ti, 12 * ti);
      k->swiglu_forward(sw, A.g.data(), A.u.data(), A.h.data());
    }
    float* x_next = resid[static_cast<std::size_t>(l + 1)].data();
    {
      Scope s(tr, "residual", kElementwise, li, 0, 8 * t * h);
      copy_rows(x_next, A.x_mid.data());
    }
    product(tr, "down_proj", kGemmForward, li,
            {Op::NoTrans, Op::Trans, T, H, I, A.h.data(), P + w.w_down, 1.0f, x_next});
  }
  const int fin = static_cast<int>(2 * c.layers);
  {
    Scope s(tr, "final_norm", kElementwise, -1, 4 * t * h, 8 * t * h);
    k->rmsnorm_forward(fin, norm, resid.back().data(), P + layout.final_norm, n.data());
  }
  product(tr, "lm_head", kGemmForward, -1,
          {Op::NoTrans, Op::Trans, T, V, H, n.data(), P + layout.lm_head, 0.0f, logits.data()});
  std::int64_t counted = 0;
  for (std::int64_t i = 0; i < T; ++i) counted += labels[i] != kIgnore;
  fused::CrossEntropyResult ce;
  {
    const double tv = t * static_cast<double>(V);
    Scope s(tr, "cross_entropy", kCrossEntropy, -1, 8 * tv, 8 * tv);
    fused::CrossEntropyShape cs;
    cs.rows = T, cs.vocab = V, cs.ignore_index = kIgnore, cs.grad_scale = 1.0f / static_cast<float>(counted);
    ce = k->cross_entropy(cs, logits.data(), labels, loss_rows.data());
  }
  const double loss =
      ce.nonfinite_rows > 0 ? std::numeric_limits<double>::quiet_NaN() : ce.loss_sum / static_cast<double>(counted);

  // ---------------------------------------------------------------- backward
  product(tr, "lm_head.dX", kGemmBackward, -1,
          {Op::NoTrans, Op::NoTrans, T, H, V, logits.data(), P + layout.lm_head, 0.0f, dtmp.data()});
  product(tr, "lm_head.dW", kGemmBackward, -1,
          {Op::Trans, Op::NoTrans, V, H, T, logits.data(), n.data(), 0.0f, G + layout.lm_head, true});
  {
    Scope s(tr, "final_norm.backward", kElementwise, -1, 9 * t * h, 12 * t * h);
    k->rmsnorm_backward(fin, norm, resid.back().data(), P + layout.final_norm, dtmp.data(), dx.data(),
                        G + layout.final_norm);
  }
  for (std::int64_t l = c.layers - 1; l >= 0; --l) {
    Scope block(tr, "block.backward", trace::kNone, static_cast<int>(l));
    const LayerTensors& w = layout.layers[static_cast<std::size_t>(l)];
    Acts& A = acts[static_cast<std::size_t>(l)];
    const int li = static_cast<int>(l), slot = 2 * li;
    product(tr, "down_proj.dX", kGemmBackward, li,
            {Op::NoTrans, Op::NoTrans, T, I, H, dx.data(), P + w.w_down, 0.0f, dh.data()});
    product(tr, "down_proj.dW", kGemmBackward, li,
            {Op::Trans, Op::NoTrans, H, I, T, dx.data(), A.h.data(), 0.0f, G + w.w_down, true});
    std::pair<const float*, const float*> dgu;
    {
      Scope s(tr, "swiglu.backward", kElementwise, li, 10 * ti, 20 * ti);
      dgu = k->swiglu_backward(sw, dh.data(), A.g.data(), A.u.data());
      if (m_swapped) std::swap(dgu.first, dgu.second);
    }
    product(tr, "gate_proj.dX", kGemmBackward, li,
            {Op::NoTrans, Op::NoTrans, T, H, I, dgu.first, P + w.w_gate, 0.0f, dtmp.data()});
    product(tr, "up_proj.dX", kGemmBackward, li,
            {Op::NoTrans, Op::NoTrans, T, H, I, dgu.second, P + w.w_up, 1.0f, dtmp.data()});
    product(tr, "gate_proj.dW", kGemmBackward, li,
            {Op::Trans, Op::NoTrans, I, H, T, dgu.first, A.f.data(), 0.0f, G + w.w_gate, true});
    product(tr, "up_proj.dW", kGemmBackward, li,
            {Op::Trans, Op::NoTrans, I, H, T, dgu.second, A.f.data(), 0.0f, G + w.w_up, true});
    {
      Scope s(tr, "ffn_norm.backward", kElementwise, li, 10 * t * h, 24 * t * h);
      k->rmsnorm_backward(slot + 1, norm, A.x_mid.data(), P + w.ffn_norm, dtmp.data(), dnorm.data(), G + w.ffn_norm);
      if (m_residual) copy_rows(dx.data(), dnorm.data());  // the residual's gradient dropped
      else add_into(dx.data(), dnorm.data());
    }
    product(tr, "o_proj.dX", kGemmBackward, li,
            {Op::NoTrans, Op::NoTrans, T, Q, H, dx.data(), P + w.wo, 0.0f, d_o.data()});
    product(tr, "o_proj.dW", kGemmBackward, li,
            {Op::Trans, Op::NoTrans, H, Q, T, dx.data(), A.o.data(), 0.0f, G + w.wo, true});
    {
      Scope s(tr, "attention.backward", kAttention, li, 2.5 * attn_flops,
              2 * qkv_bytes + 12 * t * static_cast<double>(Q));
      k->attention_backward(li, as, A.q.data(), A.k.data(), A.v.data(), A.o.data(), d_o.data(), dq.data(), dk.data(),
                            dv.data());
      if (m_attn_cut)
        for (auto* d : {&dq, &dk, &dv}) std::fill(d->data(), d->data() + d->size(), 0.0f);
    }
    if (!m_rope) {
      Scope s(tr, "rope.backward", kElementwise, li, 3 * t * static_cast<double>(Q + K),
              8 * t * static_cast<double>(Q + K));
      k->rope(true, rs, rope, dq.data(), dk.data());
    }
    {
      Scope s(tr, "qkv_bias.backward", kElementwise, li, t * static_cast<double>(Q + 2 * K), qkv_bytes);
      column_sums(dq.data(), G + w.bq, Q), column_sums(dk.data(), G + w.bk, K), column_sums(dv.data(), G + w.bv, K);
      if (m_bias) std::fill(G + w.bq, G + w.bq + Q, 0.0f);
    }
    product(tr, "q_proj.dX", kGemmBackward, li,
            {Op::NoTrans, Op::NoTrans, T, H, Q, dq.data(), P + w.wq, 0.0f, dtmp.data()});
    product(tr, "k_proj.dX", kGemmBackward, li,
            {Op::NoTrans, Op::NoTrans, T, H, K, dk.data(), P + w.wk, 1.0f, dtmp.data()});
    product(tr, "v_proj.dX", kGemmBackward, li,
            {Op::NoTrans, Op::NoTrans, T, H, K, dv.data(), P + w.wv, 1.0f, dtmp.data()});
    if (m_transposed && l == 0)  // dWq^T = a^T dq written where dWq belongs
      product(tr, "q_proj.dW", kGemmBackward, li,
              {Op::Trans, Op::NoTrans, H, Q, T, A.a.data(), dq.data(), 0.0f, G + w.wq, true});
    else
      product(tr, "q_proj.dW", kGemmBackward, li,
              {Op::Trans, Op::NoTrans, Q, H, T, dq.data(), A.a.data(), 0.0f, G + w.wq, true});
    product(tr, "k_proj.dW", kGemmBackward, li,
            {Op::Trans, Op::NoTrans, K, H, T, dk.data(), A.a.data(), 0.0f, G + w.wk, true});
    product(tr, "v_proj.dW", kGemmBackward, li,
            {Op::Trans, Op::NoTrans, K, H, T, dv.data(), A.a.data(), 0.0f, G + w.wv, true});
    {
      Scope s(tr, "attn_norm.backward", kElementwise, li, 10 * t * h, 24 * t * h);
      k->rmsnorm_backward(slot, norm, resid[static_cast<std::size_t>(l)].data(), P + w.attn_norm, dtmp.data(),
                          dnorm.data(), G + w.attn_norm);
      add_into(dx.data(), dnorm.data());
    }
  }
  {
    // dE[v] = sum over t with tokens[t] = v of dx_0[t]: each worker owns a range of columns, tokens in order.
    const double vh = static_cast<double>(V) * h;
    Scope s(tr, "embedding.backward", kEmbedding, -1, t * h, 4 * vh + 12 * t * h);
    float* dE = G + layout.embed;
    const std::size_t Hs = static_cast<std::size_t>(H);
    if (!m_not_cleared) std::fill(dE, dE + static_cast<std::size_t>(V) * Hs, 0.0f);
    parallel::run(Hs, std::min(workers(T * H), static_cast<int>(H / 16) + 1), [&](std::size_t b, std::size_t e, int) {
      for (std::int64_t i = 0; i < T; ++i) {
        float* row = dE + static_cast<std::size_t>(tokens[i]) * Hs;
        const float* src = dx.data() + static_cast<std::size_t>(i) * Hs;
        if (m_scatter)
          for (std::size_t j = b; j < e; ++j) row[j] = src[j];
        else
          for (std::size_t j = b; j < e; ++j) row[j] += src[j];
      }
    });
  }
  return loss;
}

Step::Step(const Config& c, const StepOptions& o) : impl_(std::make_unique<Impl>(c, o)) {}
Step::~Step() = default;
std::string Step::backend_tag() const { return impl_->k->tag(); }
std::span<const char> Step::vouched_gradients() const { return impl_->vouched; }
const Config& Step::config() const { return impl_->c; }

double Step::forward_backward(std::span<const float> params, std::span<const std::int64_t> tokens,
                              std::span<const std::int64_t> labels, std::span<float> grads, trace::Tracer* tracer) {
  return run(params, tokens, labels, grads, tracer, true);
}

double Step::run(std::span<const float> params, std::span<const std::int64_t> tokens,
                 std::span<const std::int64_t> labels, std::span<float> grads, trace::Tracer* tracer,
                 bool scan_params) {
  const Impl& im = *impl_;
  {
    Scope s(tracer, "check_inputs", kOverhead, -1, 0, scan_params ? 4.0 * static_cast<double>(im.layout.total) : 0);
    check_batch(im.c, tokens, labels);
    if (grads.size() < im.layout.total)
      throw InvalidArgument("train: grads has " + std::to_string(grads.size()) + " elements, the layout needs " +
                            std::to_string(im.layout.total));
    if (scan_params && !POPPER_MUTANT("train-finite-check-after-update"))
      check_finite(im.layout, params, "parameter", im.o.threads, im.o.isa);
  }
  return impl_->run(params.data(), tokens.data(), labels.data(), grads.data(), tracer);
}

}  // namespace popper::train
