// A training step of a small qwen2-style decoder under contract
// (contracts/train/training-step-v1.yaml), built only from popper's kernels.
// Notation of the contract: T = B*S tokens, V vocabulary, H hidden, I
// intermediate, Hq / Hkv query / key-value heads of D (H = Hq D), L layers.
//
//   x_0 = E[tok]                                                  embedding gather
//   per layer l:  a = rmsnorm(x, g_attn)
//                 q = a Wq^T + bq,  k = a Wk^T + bk,  v = a Wv^T + bv
//                 q, k = rope(q, k)         half-split pairs (j, j + D/2), angle p base^(-2j/D)
//                 o = causal GQA attention(q, k, v), scale 1/sqrt(D)
//                 m = x + o Wo^T
//                 f = rmsnorm(m, g_ffn)
//                 x = m + (silu(f Wg^T) * (f Wu^T)) Wd^T
//   logits = rmsnorm(x_L, g_final) W_lm^T                         untied LM head
//   loss = mean over labelled rows of (lse(logits_r) - logits_r[y_r])
//
// Weights are stored [out, in] (y = x W^T), all in one FP32 buffer (ParamLayout).
// The backward is the exact gradient of that loss; AdamW (decoupled weight
// decay on the matrices, bias-corrected moments) updates the parameters.
//
// Backends: Hand (popper's hand GEMM for every weight product and both
// gradient products, the fused kernels forward and backward) and Wrapped
// (OpenBLAS SGEMM and the separate, unfused operations of impl/fused).
// Every entry checks its inputs before writing anything: a token or label
// out of range, a non-finite parameter, a zero-length batch or a wrong length
// throws popper::InvalidArgument naming it, and no buffer is touched.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "impl/common/cpu_features.hpp"
#include "impl/common/huge_pages.hpp"
#include "impl/common/trace.hpp"

namespace popper::train {

struct Config {
  std::int64_t vocab = 128, hidden = 64, layers = 2, q_heads = 4, kv_heads = 2, head_dim = 16, intermediate = 160;
  std::int64_t seq = 32, batch = 2;
  float rms_eps = 1e-6f;
  double rope_base = 1000000.0;  // qwen2's

  std::int64_t tokens() const { return batch * seq; }
  std::int64_t q_width() const { return q_heads * head_dim; }
  std::int64_t kv_width() const { return kv_heads * head_dim; }
  // Throws InvalidArgument naming the first rule broken: every size >= 1,
  // H = Hq D, Hq a multiple of Hkv, D even, sizes below 2^31 elements per tensor.
  void check() const;
};

struct AdamWConfig {
  float lr = 3e-3f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.1f;
};

// The 8 bricks of contracts/train/training-step-budget-v1.yaml, in order:
// every op span of a step carries one of them.
enum Brick : int {
  kGemmForward,
  kGemmBackward,
  kAttention,
  kElementwise,
  kCrossEntropy,
  kEmbedding,
  kOptimizer,
  kOverhead,
  kBrickCount
};
const std::vector<std::string>& brick_names();  // "gemm_forward", ...

// Where each tensor lives in the one parameter buffer (offsets in floats,
// each a multiple of 16). Gradients and AdamW moments use the same layout.
struct Tensor {
  std::string name;  // "embed", "layers.3.wq", "final_norm", ...
  std::size_t offset = 0;
  std::int64_t rows = 0, cols = 0;  // vectors: rows = 1
  bool decay = false;               // weight decay applies (matrices)
  std::size_t size() const { return static_cast<std::size_t>(rows * cols); }
};
struct LayerTensors {
  std::size_t attn_norm, wq, bq, wk, bk, wv, bv, wo, ffn_norm, w_gate, w_up, w_down;
};
struct ParamLayout {
  explicit ParamLayout(const Config& c);
  std::size_t embed, final_norm, lm_head;
  std::vector<LayerTensors> layers;
  std::vector<Tensor> tensors;
  std::size_t total = 0;  // floats
  // Parameters taking part in a matrix product (all but the embedding table,
  // a gather): the P of MFU = 6 P tokens / (T_step peak).
  std::int64_t matmul_params = 0;
};

// Deterministic initialisation from a seed: matrices uniform with standard
// deviation 1/sqrt(in) (Wo and Wd scaled by 1/sqrt(2L)), norms 1, biases
// uniform +-0.02, embedding uniform +-1.
std::vector<float> init_params(const Config& c, std::uint64_t seed);

// The synthetic copy task: each row holds S/2 random tokens in [1, V) and then
// their copy; only the positions whose next token is a copy (i >= S/2 - 1) are
// labelled, the rest carry kIgnore. Batch `index` of a seed is always the same.
inline constexpr std::int64_t kIgnore = -100;
struct Batch {
  std::vector<std::int64_t> tokens, labels;  // [B*S] each
};
Batch copy_task_batch(const Config& c, std::uint64_t seed, std::int64_t index);

enum class Backend { Hand, Wrapped };
const char* to_string(Backend b);  // "hand" | "wrapped"

struct StepOptions {
  Backend backend = Backend::Hand;
  int threads = 1;
  cpu::Isa isa = cpu::Isa::Auto;  // hand kernels' ISA (a narrower one may be forced in tests)
};

// Forward and backward of one batch: grads (ParamLayout) overwritten, the
// mean loss returned. Workspace for the config is allocated once, at construction.
class Step {
 public:
  Step(const Config& c, const StepOptions& o);
  ~Step();
  Step(const Step&) = delete;
  Step& operator=(const Step&) = delete;

  double forward_backward(std::span<const float> params, std::span<const std::int64_t> tokens,
                          std::span<const std::int64_t> labels, std::span<float> grads,
                          trace::Tracer* tracer = nullptr);
  // What ran: "cpu:avx512" (hand) or "openblas:<core>+cpu:avx512" (wrapped).
  std::string backend_tag() const;
  const Config& config() const;

 private:
  friend class Trainer;  // skips the parameters' scan when its last update vouched for them
  // Per ParamLayout tensor, after run: whether the product that wrote its
  // gradient probed every element finite (the trainer scans the others).
  std::span<const char> vouched_gradients() const;
  double run(std::span<const float> params, std::span<const std::int64_t> tokens, std::span<const std::int64_t> labels,
             std::span<float> grads, trace::Tracer* tracer, bool scan_params);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Throws InvalidArgument (naming the problem) unless tokens and labels have
// B*S entries, B*S >= 1, tokens in [0, V), labels in [0, V) or kIgnore, at
// least one label not ignored.
void check_batch(const Config& c, std::span<const std::int64_t> tokens, std::span<const std::int64_t> labels);
// Throws InvalidArgument naming the first non-finite element's tensor and index;
// the scan runs on the widest path isa allows (fused::all_finite). Tensors t
// with skip[t] != 0 (skip empty or one entry per tensor) are not scanned.
void check_finite(const ParamLayout& layout, std::span<const float> values, const char* what, int threads,
                  cpu::Isa isa = cpu::Isa::Auto, std::span<const char> skip = {});

// AdamW on every tensor (t = the step number, from 1):
//   m = b1 m + (1-b1) g,  v = b2 v + (1-b2) g^2,  mh = m / (1-b1^t),  vh = v / (1-b2^t)
//   p = p - lr (mh / (sqrt(vh) + eps) + wd p)      (wd only where Tensor::decay)
// Returns whether every parameter it wrote is finite. The widest path isa
// allows runs it (fused::adamw_range).
bool adamw_update(const ParamLayout& layout, const AdamWConfig& a, std::int64_t t, std::span<float> params,
                  std::span<const float> grads, std::span<float> m, std::span<float> v, int threads,
                  cpu::Isa isa = cpu::Isa::Auto);

// Parameters, gradients, moments and a Step: one training step at a time.
class Trainer {
 public:
  Trainer(const Config& c, const StepOptions& o, const AdamWConfig& a, std::uint64_t seed);
  // Checks the batch and the parameters, runs forward and backward, checks
  // the gradients and the loss are finite, then updates. On any refusal
  // (InvalidArgument) the parameters, moments and step count are unchanged.
  double train_step(std::span<const std::int64_t> tokens, std::span<const std::int64_t> labels,
                    trace::Tracer* tracer = nullptr);

  const ParamLayout& layout() const { return layout_; }
  const std::vector<float>& params() const { return params_; }
  // Write access: the next step scans the parameters again before its forward.
  std::vector<float>& params() {
    params_finite_ = false;
    return params_;
  }
  std::span<const float> grads() const { return grads_; }
  const std::vector<float>& m() const { return m_; }
  const std::vector<float>& v() const { return v_; }
  std::int64_t steps_done() const { return t_; }
  Step& step() { return step_; }
  // Restores a state (tests): parameters, moments and step count.
  void load_state(std::span<const float> params, std::span<const float> m, std::span<const float> v, std::int64_t t);

 private:
  Config c_;
  StepOptions o_;
  AdamWConfig a_;
  ParamLayout layout_;
  std::vector<float> params_, m_, v_;
  // 64-byte aligned (2 MiB from 2 MiB up): the weight-gradient products store it past the caches.
  std::vector<float, memory::HugePageAllocator<float>> grads_;
  bool params_finite_ = false;  // the last update wrote only finite parameters, untouched since
  std::int64_t t_ = 0;
  Step step_;
};

}  // namespace popper::train
