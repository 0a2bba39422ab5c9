// The libtorch peer (torch_step.h): the decoder of impl/train/train.hpp in
// eager libtorch, the way its users write it: nn-style ops, autograd for the
// backward, torch::optim::AdamW (decay on the matrices only, like popper's).
// Attention is the textbook form (libtorch 1.13 has no fused
// scaled_dot_product_attention): scores, causal mask, softmax, times V, with
// the KV heads repeated for GQA.
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "impl/train/torch/torch_step.h"

extern "C" void openblas_set_num_threads(int);

namespace {

struct Model {
  popper_torch_config c{};
  std::vector<uint64_t> offsets;
  torch::Tensor embed, final_norm, lm_head, cos, sin, mask;
  struct Layer {
    torch::Tensor attn_norm, wq, bq, wk, bk, wv, bv, wo, ffn_norm, w_gate, w_up, w_down;
  };
  std::vector<Layer> layers;
  std::vector<torch::Tensor> all;  // in offsets order
  std::unique_ptr<torch::optim::AdamW> opt;

  torch::Tensor take(const float* params, std::size_t which, std::vector<int64_t> shape) {
    auto t = torch::from_blob(const_cast<float*>(params + offsets[which]), shape, torch::kFloat32).clone();
    t.set_requires_grad(true);
    all.push_back(t);
    return t;
  }

  torch::Tensor rmsnorm(const torch::Tensor& x, const torch::Tensor& w) const {
    return x * torch::rsqrt(x.pow(2).mean(-1, true) + c.rms_eps) * w;
  }
  // Half-split RoPE on [B, S, heads, D]: pairs (j, j + D/2).
  torch::Tensor rope(const torch::Tensor& x) const {
    const int64_t half = c.head_dim / 2;
    auto x1 = x.narrow(-1, 0, half), x2 = x.narrow(-1, half, half);
    return torch::cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1);
  }

  torch::Tensor loss(const torch::Tensor& tokens, const torch::Tensor& labels) {
    const int64_t B = c.batch, S = c.seq, H = c.hidden, Hq = c.q_heads, Hkv = c.kv_heads, D = c.head_dim;
    auto x = embed.index_select(0, tokens).view({B, S, H});
    for (const Layer& l : layers) {
      auto a = rmsnorm(x, l.attn_norm);
      auto q = rope(torch::linear(a, l.wq, l.bq).view({B, S, Hq, D})).transpose(1, 2);
      auto k = rope(torch::linear(a, l.wk, l.bk).view({B, S, Hkv, D})).transpose(1, 2);
      auto v = torch::linear(a, l.wv, l.bv).view({B, S, Hkv, D}).transpose(1, 2);
      k = k.repeat_interleave(Hq / Hkv, 1), v = v.repeat_interleave(Hq / Hkv, 1);
      auto scores = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(D)));
      auto p = torch::softmax(scores.masked_fill(mask, -INFINITY), -1);
      auto o = torch::matmul(p, v).transpose(1, 2).reshape({B, S, Hq * D});
      auto m = x + torch::linear(o, l.wo);
      auto f = rmsnorm(m, l.ffn_norm);
      x = m + torch::linear(torch::silu(torch::linear(f, l.w_gate)) * torch::linear(f, l.w_up), l.w_down);
    }
    auto logits = torch::linear(rmsnorm(x, final_norm), lm_head).view({B * S, c.vocab});
    return torch::nn::functional::cross_entropy(logits, labels,
                                                torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100));
  }
};

void set_err(char* err, std::size_t len, const std::string& what) {
  if (err && len) {
    std::strncpy(err, what.c_str(), len - 1);
    err[len - 1] = 0;
  }
}

}  // namespace

extern "C" void* popper_torch_create(const popper_torch_config* c, const float* params, const uint64_t* offsets,
                                     size_t n_offsets, char* err, size_t err_len) {
  try {
    if (!c || !params || !offsets || n_offsets != static_cast<size_t>(3 + 12 * c->layers))
      throw std::invalid_argument("popper_torch_create: need a config, the parameters and 3 + 12 L offsets");
    at::set_num_threads(c->threads);
    openblas_set_num_threads(c->threads);  // ATen's SGEMM is OpenBLAS here; set_num_threads does not reach it
    auto m = std::make_unique<Model>();
    m->c = *c;
    m->offsets.assign(offsets, offsets + n_offsets);
    const int64_t H = c->hidden, Q = c->q_heads * c->head_dim, K = c->kv_heads * c->head_dim, I = c->intermediate;
    std::size_t w = 0;
    m->embed = m->take(params, w++, {c->vocab, H});
    for (int64_t l = 0; l < c->layers; ++l) {
      Model::Layer L;
      L.attn_norm = m->take(params, w++, {H});
      L.wq = m->take(params, w++, {Q, H}), L.bq = m->take(params, w++, {Q});
      L.wk = m->take(params, w++, {K, H}), L.bk = m->take(params, w++, {K});
      L.wv = m->take(params, w++, {K, H}), L.bv = m->take(params, w++, {K});
      L.wo = m->take(params, w++, {H, Q});
      L.ffn_norm = m->take(params, w++, {H});
      L.w_gate = m->take(params, w++, {I, H}), L.w_up = m->take(params, w++, {I, H}),
      L.w_down = m->take(params, w++, {H, I});
      m->layers.push_back(L);
    }
    m->final_norm = m->take(params, w++, {H});
    m->lm_head = m->take(params, w++, {c->vocab, H});
    // cos/sin [S, 1, D/2] in FP64, rounded once (as popper's table); mask above the diagonal.
    const int64_t half = c->head_dim / 2;
    auto pos = torch::arange(c->seq, torch::kFloat64).unsqueeze(1);
    auto inv = torch::pow(torch::tensor(c->rope_base, torch::kFloat64),
                          -2.0 * torch::arange(half, torch::kFloat64) / static_cast<double>(c->head_dim));
    auto ang = pos * inv.unsqueeze(0);
    m->cos = torch::cos(ang).to(torch::kFloat32).unsqueeze(1),
    m->sin = torch::sin(ang).to(torch::kFloat32).unsqueeze(1);
    m->mask = torch::ones({c->seq, c->seq}, torch::kBool).triu(1);
    std::vector<torch::Tensor> decay, plain;
    for (auto& t : m->all) (t.dim() == 2 ? decay : plain).push_back(t);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    auto opts = torch::optim::AdamWOptions(c->lr).betas({c->beta1, c->beta2}).eps(c->eps);
    groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(opts.weight_decay(c->weight_decay)));
    groups.emplace_back(plain,
                        std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(opts).weight_decay(0)));
    m->opt = std::make_unique<torch::optim::AdamW>(groups, opts);
    return m.release();
  } catch (const std::exception& e) {
    set_err(err, err_len, e.what());
    return nullptr;
  }
}

extern "C" double popper_torch_step(void* model, const int64_t* tokens, const int64_t* labels, float* grads, int update,
                                    char* err, size_t err_len) {
  try {
    auto* m = static_cast<Model*>(model);
    const int64_t T = m->c.batch * m->c.seq;
    auto tok = torch::from_blob(const_cast<int64_t*>(tokens), {T}, torch::kInt64);
    auto lab = torch::from_blob(const_cast<int64_t*>(labels), {T}, torch::kInt64);
    m->opt->zero_grad();
    auto loss = m->loss(tok, lab);
    loss.backward();
    if (grads)
      for (std::size_t i = 0; i < m->all.size(); ++i) {
        auto g = m->all[i].grad().contiguous();
        std::memcpy(grads + m->offsets[i], g.data_ptr<float>(), static_cast<std::size_t>(g.numel()) * sizeof(float));
      }
    if (update) m->opt->step();
    return loss.item<double>();
  } catch (const std::exception& e) {
    set_err(err, err_len, e.what());
    return NAN;
  }
}

extern "C" const char* popper_torch_describe(void) {
  static const std::string d = std::string(TORCH_VERSION) + (at::globalContext().hasOpenMP() ? "+openmp" : "") +
                               (at::globalContext().hasMKL() ? "+mkl" : "+openblas");
  return d.c_str();
}

extern "C" void popper_torch_destroy(void* model) { delete static_cast<Model*>(model); }
