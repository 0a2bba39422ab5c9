// The hand step's kernels: popper's hand GEMM (impl/gemm/cpu_gemm.hpp) for
// every product and the fused kernels (impl/fused/fused.hpp) forward and
// backward. What the forward saves: inv_rms per RMSNorm, lse per attention.
#include "impl/gemm/cpu_gemm.hpp"
#include "impl/train/kernels.hpp"

namespace popper::train::detail {

CachingAllocator::~CachingAllocator() {
  for (auto& b : free_) fused::heap_allocator().deallocate(b.p, b.bytes);
}
void* CachingAllocator::allocate(std::size_t bytes) {
  for (auto it = free_.begin(); it != free_.end(); ++it)
    if (it->bytes == bytes) {
      void* p = it->p;
      free_.erase(it);
      return p;
    }
  free_.reserve(free_.size() + 1);  // so deallocate never needs to grow the list
  return fused::heap_allocator().allocate(bytes);
}
void CachingAllocator::deallocate(void* p, std::size_t bytes) noexcept {
  if (free_.size() < free_.capacity()) free_.push_back({p, bytes});
  else fused::heap_allocator().deallocate(p, bytes);
}

namespace {

std::span<const float> in(const float* p, std::int64_t n) { return {p, static_cast<std::size_t>(n)}; }
std::span<float> out(float* p, std::int64_t n) { return {p, static_cast<std::size_t>(n)}; }

class HandKernels final : public Kernels {
 public:
  HandKernels(const Config& c, const StepOptions& o)
      : c_(c), inv_rms_(static_cast<std::size_t>(2 * c.layers + 1)), lse_(static_cast<std::size_t>(c.layers)) {
    ex_.threads = o.threads, ex_.isa = o.isa, ex_.allocator = &alloc_;
    gemm_.threads = o.threads, gemm_.isa = o.isa;
    for (auto& l : lse_) l.resize(static_cast<std::size_t>(c.batch * c.q_heads * c.seq));
  }
  std::string tag() const override { return cpu::backend_tag(ex_.isa); }

  bool gemm(const GemmCall& g) override {
    gemm::GemmShape s;
    s.op_a = g.op_a, s.op_b = g.op_b, s.m = g.m, s.n = g.n, s.k = g.k;
    gemm::cpu::CpuGemmOptions o = gemm_;
    o.stream_c = o.probe_finite = g.weight_gradient;
    return gemm::cpu::gemm(gemm::with_tight_ld(s), 1.0f, in(g.a, g.m * g.k), in(g.b, g.k * g.n), g.beta,
                           out(g.c, g.m * g.n), o);
  }
  void rmsnorm_forward(int slot, const fused::RmsNormShape& s, const float* x, const float* w, float* y) override {
    const std::int64_t n = s.rows * s.hidden;
    inv_rms_[static_cast<std::size_t>(slot)] =
        fused::rmsnorm_forward(s, in(x, n), in(w, s.hidden), out(y, n), ex_).inv_rms;
  }
  void rmsnorm_backward(int slot, const fused::RmsNormShape& s, const float* x, const float* w, const float* dy,
                        float* dx, float* dw) override {
    const std::int64_t n = s.rows * s.hidden;
    fused::rmsnorm_backward(s, in(x, n), in(w, s.hidden), inv_rms_[static_cast<std::size_t>(slot)].span(), in(dy, n),
                            out(dx, n), out(dw, s.hidden), ex_);
  }
  void rope(bool backward, const fused::RopeShape& s, const fused::RopeTable& t, float* q, float* k) override {
    const std::int64_t tok = s.batch * s.seq;
    if (backward)
      fused::rope_backward(s, t, out(q, tok * s.q_heads * s.head_dim), out(k, tok * s.kv_heads * s.head_dim), ex_);
    else fused::rope_forward(s, t, out(q, tok * s.q_heads * s.head_dim), out(k, tok * s.kv_heads * s.head_dim), ex_);
  }
  void attention_forward(int slot, const fused::AttentionShape& s, const float* q, const float* k, const float* v,
                         float* o) override {
    const std::int64_t nq = s.batch * s.q_len * s.q_heads * s.head_dim,
                       nk = s.batch * s.kv_len * s.kv_heads * s.head_dim;
    fused::attention_forward(s, in(q, nq), in(k, nk), in(v, nk), out(o, nq), lse_[static_cast<std::size_t>(slot)], ex_);
  }
  void attention_backward(int slot, const fused::AttentionShape& s, const float* q, const float* k, const float* v,
                          const float* o, const float* d_o, float* dq, float* dk, float* dv) override {
    const std::int64_t nq = s.batch * s.q_len * s.q_heads * s.head_dim,
                       nk = s.batch * s.kv_len * s.kv_heads * s.head_dim;
    fused::attention_backward(s, in(q, nq), in(k, nk), in(v, nk), in(o, nq), lse_[static_cast<std::size_t>(slot)],
                              in(d_o, nq), out(dq, nq), out(dk, nk), out(dv, nk), ex_);
  }
  void swiglu_forward(const fused::SwigluShape& s, const float* g, const float* u, float* h) override {
    const std::int64_t n = s.rows * s.width;
    fused::swiglu_forward(s, in(g, n), in(u, n), out(h, n), ex_);
  }
  std::pair<const float*, const float*> swiglu_backward(const fused::SwigluShape& s, const float* dh, float* g,
                                                        float* u) override {
    const std::int64_t n = s.rows * s.width;
    fused::swiglu_backward_inplace(s, in(dh, n), out(g, n), out(u, n), ex_);
    return {g, u};
  }
  fused::CrossEntropyResult cross_entropy(const fused::CrossEntropyShape& s, float* logits, const std::int64_t* labels,
                                          float* loss) override {
    const std::int64_t n = s.rows * s.vocab;
    return fused::cross_entropy(s, in(logits, n), {labels, static_cast<std::size_t>(s.rows)}, out(loss, s.rows), {},
                                out(logits, n), ex_);
  }

 private:
  Config c_;
  CachingAllocator alloc_;
  fused::ExecOptions ex_;
  gemm::cpu::CpuGemmOptions gemm_;
  std::vector<fused::FloatBuffer> inv_rms_;
  std::vector<std::vector<float>> lse_;
};

}  // namespace

std::unique_ptr<Kernels> make_hand_kernels(const Config& c, const StepOptions& o) {
  return std::make_unique<HandKernels>(c, o);
}

}  // namespace popper::train::detail
