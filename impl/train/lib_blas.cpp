// The wrapped step's kernels: OpenBLAS SGEMM through popper's BlasHandle for
// every product, and the separate (unfused) operations of impl/fused: RMSNorm
// saving the normed rows, RoPE one head at a time, attention through SGEMM
// with the probabilities stored, SwiGLU backward through a stored sigmoid,
// cross-entropy through a stored softmax. The SwiGLU forward has no separate
// variant in impl/fused; both steps use the fused one.
#include <cctype>

#include "impl/gemm/lib_blas.hpp"
#include "impl/train/kernels.hpp"

namespace popper::train::detail {

namespace {

std::span<const float> in(const float* p, std::int64_t n) { return {p, static_cast<std::size_t>(n)}; }
std::span<float> out(float* p, std::int64_t n) { return {p, static_cast<std::size_t>(n)}; }

class WrappedKernels final : public Kernels {
 public:
  WrappedKernels(const Config& c, const StepOptions& o)
      : blas_(gemm::BlasOptions{o.threads, ""}),
        norm_(static_cast<std::size_t>(2 * c.layers + 1)),
        attn_(static_cast<std::size_t>(c.layers)) {
    ex_.threads = o.threads, ex_.isa = o.isa, ex_.allocator = &alloc_;
  }
  std::string tag() const override {
    std::string core = blas_.core_name();
    for (auto& ch : core) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return "openblas:" + core + "+" + cpu::backend_tag(ex_.isa);
  }

  bool gemm(const GemmCall& g) override {  // vouches for nothing: the trainer scans every gradient
    gemm::GemmShape s;
    s.op_a = g.op_a, s.op_b = g.op_b, s.m = g.m, s.n = g.n, s.k = g.k;
    blas_.gemm(gemm::with_tight_ld(s), 1.0f, in(g.a, g.m * g.k), in(g.b, g.k * g.n), g.beta, out(g.c, g.m * g.n));
    return false;
  }
  void rmsnorm_forward(int slot, const fused::RmsNormShape& s, const float* x, const float* w, float* y) override {
    const std::int64_t n = s.rows * s.hidden;
    norm_[static_cast<std::size_t>(slot)] =
        fused::separate::rmsnorm_forward(s, in(x, n), in(w, s.hidden), out(y, n), ex_);
  }
  void rmsnorm_backward(int slot, const fused::RmsNormShape& s, const float*, const float* w, const float* dy,
                        float* dx, float* dw) override {
    const std::int64_t n = s.rows * s.hidden;
    fused::separate::rmsnorm_backward(s, norm_[static_cast<std::size_t>(slot)], in(w, s.hidden), in(dy, n), out(dx, n),
                                      out(dw, s.hidden), ex_);
  }
  void rope(bool backward, const fused::RopeShape& s, const fused::RopeTable& t, float* q, float* k) override {
    const std::int64_t tok = s.batch * s.seq;
    const auto qs = out(q, tok * s.q_heads * s.head_dim), ks = out(k, tok * s.kv_heads * s.head_dim);
    if (backward) fused::separate::rope_backward_per_head(s, t, qs, ks, ex_);
    else fused::separate::rope_forward_per_head(s, t, qs, ks, ex_);
  }
  void attention_forward(int slot, const fused::AttentionShape& s, const float* q, const float* k, const float* v,
                         float* o) override {
    const std::int64_t nq = s.batch * s.q_len * s.q_heads * s.head_dim,
                       nk = s.batch * s.kv_len * s.kv_heads * s.head_dim;
    attn_[static_cast<std::size_t>(slot)] =
        fused::separate::attention_forward(s, in(q, nq), in(k, nk), in(v, nk), out(o, nq), ex_);
  }
  void attention_backward(int slot, const fused::AttentionShape& s, const float* q, const float* k, const float* v,
                          const float* o, const float* d_o, float* dq, float* dk, float* dv) override {
    const std::int64_t nq = s.batch * s.q_len * s.q_heads * s.head_dim,
                       nk = s.batch * s.kv_len * s.kv_heads * s.head_dim;
    fused::separate::attention_backward(s, attn_[static_cast<std::size_t>(slot)], in(q, nq), in(k, nk), in(v, nk),
                                        in(o, nq), in(d_o, nq), out(dq, nq), out(dk, nk), out(dv, nk), ex_);
  }
  void swiglu_forward(const fused::SwigluShape& s, const float* g, const float* u, float* h) override {
    const std::int64_t n = s.rows * s.width;
    fused::swiglu_forward(s, in(g, n), in(u, n), out(h, n), ex_);
  }
  std::pair<const float*, const float*> swiglu_backward(const fused::SwigluShape& s, const float* dh, float* g,
                                                        float* u) override {
    const std::int64_t n = s.rows * s.width;
    swiglu_grads_ = fused::separate::swiglu_backward(s, in(dh, n), in(g, n), in(u, n), ex_);
    return {swiglu_grads_.d_gate.data(), swiglu_grads_.d_up.data()};
  }
  fused::CrossEntropyResult cross_entropy(const fused::CrossEntropyShape& s, float* logits, const std::int64_t* labels,
                                          float* loss) override {
    const std::int64_t n = s.rows * s.vocab;
    return fused::separate::cross_entropy(s, in(logits, n), {labels, static_cast<std::size_t>(s.rows)},
                                          out(loss, s.rows), out(logits, n), ex_);
  }

 private:
  gemm::BlasHandle blas_;
  CachingAllocator alloc_;
  fused::ExecOptions ex_;
  std::vector<fused::separate::RmsNormSaved> norm_;
  std::vector<fused::separate::AttentionSaved> attn_;
  fused::separate::SwigluGrads swiglu_grads_;
};

}  // namespace

std::unique_ptr<Kernels> make_wrapped_kernels(const Config& c, const StepOptions& o) {
  return std::make_unique<WrappedKernels>(c, o);
}

}  // namespace popper::train::detail
