// Fused transformer training kernels (contracts/fused/fused-kernels-v1.yaml): the
// public API. Notation of the contract: rows = B*S tokens, V vocabulary,
// H hidden, I intermediate, Hq/Hkv query/key-value heads, D head_dim.
//
//   cross_entropy          loss_r = lse_r - x[y_r], grad = scale (softmax(x) - onehot(y)), softmax never stored
//   rmsnorm_forward        y = x * inv_rms * w, saves inv_rms only (rows floats)
//   rmsnorm_backward       recomputes normed = x * inv_rms (bit-exact), d_input, d_weight
//   swiglu_forward         h = silu(g) * u
//   swiglu_backward_inplace  d_gate -> gate buffer, d_up -> up buffer, no allocation
//   rope_forward/backward  rotation of q and k in place, one cos/sin load per token for all heads
//   attention_forward      O = softmax(Q K^T scale + causal mask) V, tiled online softmax, saves lse
//   attention_backward     dQ, dK, dV recomputing P per tile (FlashAttention-2 order)
//
// Every entry point checks every size before touching memory and throws
// popper::InvalidArgument / BufferTooSmall. Workspace comes from
// ExecOptions::allocator, so tests count it. All kernels work for one token
// (rows = 1; attention with q_len = 1 against a KV cache of kv_len keys).
// `separate::` holds the unfused path (the bench's wrapped tier) and
// `reference::` (reference.hpp) the FP64 oracle.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "impl/common/cpu_features.hpp"

namespace popper::fused {

using Isa = popper::cpu::Isa;

// Where workspace and saved activations come from. allocate returns 64-byte
// aligned memory or throws std::bad_alloc; deallocate gets the same size.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p, std::size_t bytes) noexcept = 0;
};
Allocator& heap_allocator();

// An FP32 buffer owned through an Allocator (move-only).
class FloatBuffer {
 public:
  FloatBuffer() = default;
  FloatBuffer(Allocator& a, std::size_t count);
  ~FloatBuffer();
  FloatBuffer(FloatBuffer&& o) noexcept;
  FloatBuffer& operator=(FloatBuffer&& o) noexcept;
  FloatBuffer(const FloatBuffer&) = delete;
  FloatBuffer& operator=(const FloatBuffer&) = delete;
  float* data() const { return p_; }
  std::size_t size() const { return n_; }
  std::span<float> span() const { return {p_, n_}; }
  std::size_t bytes() const { return n_ * sizeof(float); }

 private:
  Allocator* a_ = nullptr;
  float* p_ = nullptr;
  std::size_t n_ = 0;
};

struct ExecOptions {
  int threads = 1;                 // >= 1; popper::parallel::run workers
  Isa isa = Isa::Auto;             // a narrower path may be forced; an unsupported one throws Unsupported
  Allocator* allocator = nullptr;  // nullptr: heap_allocator()
};

// What a call ran on: "cpu:scalar" | "cpu:avx2" | "cpu:avx512" | "cuda:..."
// (declined = a device entry served by the CPU; reason says why).
struct RunInfo {
  std::string backend;
  bool declined = false;
  std::string decline_reason;
};

// ---------------------------------------------------------------- cross-entropy
struct CrossEntropyShape {
  std::int64_t rows = 0;
  std::int64_t vocab = 0;
  std::int64_t ignore_index = -100;
  std::int64_t chunk = 65536;  // vocabulary chunk of the log-sum-exp (>= 1)
  float grad_scale = 1.0f;     // e.g. 1 / non-ignored rows for a mean loss
};
struct CrossEntropyResult {
  RunInfo run;
  std::int64_t ignored_rows = 0;
  std::int64_t nonfinite_rows = 0;  // rows whose loss is not finite (NaN/+inf logit, or -inf at the label)
  double loss_sum = 0;              // sum of the finite losses of non-ignored rows
};
// logits [rows, V]; grad [rows, V] may be the same memory as logits (in place);
// loss [rows]; lse [rows] or empty. labels in [0, V) or == ignore_index.
CrossEntropyResult cross_entropy(const CrossEntropyShape& s, std::span<const float> logits,
                                 std::span<const std::int64_t> labels, std::span<float> loss, std::span<float> lse,
                                 std::span<float> grad, const ExecOptions& o = {});

// ---------------------------------------------------------------- RMSNorm
struct RmsNormShape {
  std::int64_t rows = 0;
  std::int64_t hidden = 0;
  float eps = 1e-6f;
};
// What the forward keeps for the backward: inv_rms [rows], nothing else.
struct RmsNormSaved {
  FloatBuffer inv_rms;
};
// y [rows, H]; normed_out (optional, [rows, H]) receives x * inv_rms as used for y.
RmsNormSaved rmsnorm_forward(const RmsNormShape& s, std::span<const float> x, std::span<const float> weight,
                             std::span<float> y, const ExecOptions& o = {}, RunInfo* run = nullptr,
                             std::span<float> normed_out = {});
// d_weight [H] is overwritten. normed_out (optional) receives the recomputed normed.
RunInfo rmsnorm_backward(const RmsNormShape& s, std::span<const float> x, std::span<const float> weight,
                         std::span<const float> inv_rms, std::span<const float> dy, std::span<float> d_input,
                         std::span<float> d_weight, const ExecOptions& o = {}, std::span<float> normed_out = {});

// ---------------------------------------------------------------- SwiGLU
struct SwigluShape {
  std::int64_t rows = 0;
  std::int64_t width = 0;  // I
};
RunInfo swiglu_forward(const SwigluShape& s, std::span<const float> gate, std::span<const float> up, std::span<float> h,
                       const ExecOptions& o = {});
// On return gate holds d_gate and up holds d_up. Allocates nothing.
RunInfo swiglu_backward_inplace(const SwigluShape& s, std::span<const float> dh, std::span<float> gate,
                                std::span<float> up, const ExecOptions& o = {});

// ---------------------------------------------------------------- RoPE
// cos/sin [positions][D/2], angle p * base^(-2j/D) in FP64, rounded once.
struct RopeTable {
  std::int64_t positions = 0;
  std::int64_t head_dim = 0;
  std::vector<float> cos, sin;
};
RopeTable make_rope_table(std::int64_t positions, std::int64_t head_dim, double base = 10000.0);

struct RopeShape {
  std::int64_t batch = 0, seq = 0, q_heads = 0, kv_heads = 0, head_dim = 0;
  std::int64_t pos_offset = 0;  // token s has position pos_offset + s (decode: the cache length)
};
// q [B, S, Hq, D], k [B, S, Hkv, D], rotated in place.
RunInfo rope_forward(const RopeShape& s, const RopeTable& t, std::span<float> q, std::span<float> k,
                     const ExecOptions& o = {});
RunInfo rope_backward(const RopeShape& s, const RopeTable& t, std::span<float> dq, std::span<float> dk,
                      const ExecOptions& o = {});

// ---------------------------------------------------------------- attention
struct AttentionShape {
  std::int64_t batch = 0, q_len = 0, kv_len = 0, q_heads = 0, kv_heads = 0, head_dim = 0;
  bool causal = true;  // bottom-right aligned: key j visible to query i iff j <= i + kv_len - q_len
  float scale = 0;     // 0: 1 / sqrt(head_dim)
};
// q [B, Sq, Hq, D], k/v [B, Skv, Hkv, D], o [B, Sq, Hq, D], lse [B, Hq, Sq].
RunInfo attention_forward(const AttentionShape& s, std::span<const float> q, std::span<const float> k,
                          std::span<const float> v, std::span<float> o, std::span<float> lse,
                          const ExecOptions& opt = {});
// BF16 inputs (uint16, widened exactly), FP32 accumulation and output.
RunInfo attention_forward_bf16(const AttentionShape& s, std::span<const std::uint16_t> q,
                               std::span<const std::uint16_t> k, std::span<const std::uint16_t> v, std::span<float> o,
                               std::span<float> lse, const ExecOptions& opt = {});
// dq, dk, dv are overwritten.
RunInfo attention_backward(const AttentionShape& s, std::span<const float> q, std::span<const float> k,
                           std::span<const float> v, std::span<const float> o, std::span<const float> lse,
                           std::span<const float> d_o, std::span<float> dq, std::span<float> dk, std::span<float> dv,
                           const ExecOptions& opt = {});
// Bytes the kernels request from the allocator (the same functions size their workspace).
std::size_t attention_forward_workspace_bytes(const AttentionShape& s, int threads);
std::size_t attention_backward_workspace_bytes(const AttentionShape& s, int threads);

// ---------------------------------------------------------------- BF16
// Round to nearest even (NaN stays NaN, quieted). AVX512-BF16 when the CPU has it and isa allows.
void to_bf16(std::span<const float> x, std::span<std::uint16_t> out, Isa isa = Isa::Auto);
void from_bf16(std::span<const std::uint16_t> x, std::span<float> out);
std::uint16_t to_bf16_scalar(float x);
inline float from_bf16_scalar(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
}

// ---------------------------------------------------------------- passes over every parameter
// The training step's (impl/train): each reads or writes every parameter, so
// each runs on the widest path isa allows, at the memory bandwidth.
// Whether x holds no NaN and no infinity.
bool all_finite(std::span<const float> x, Isa isa = Isa::Auto);
// AdamW on n contiguous parameters in place, the constants train::adamw_update's:
//   m = b1 m + (1-b1) g,  v = b2 v + (1-b2) g g,  p = p decay - step m / (sqrt(v) inv_sqrt_c2 + eps).
// Returns whether every parameter written is finite.
struct AdamWConstants {
  float b1, b2, one_b1, one_b2, step_size, inv_sqrt_c2, eps;
};
bool adamw_range(float* p, float* m, float* v, const float* g, std::int64_t n, float decay, const AdamWConstants& k,
                 Isa isa = Isa::Auto);

// ---------------------------------------------------------------- separate (unfused) path
// The bench's wrapped tier and the memory claims' control: each step a
// separate pass over the whole tensor, intermediates allocated through the
// allocator, same SIMD primitives as the fused kernels.
namespace separate {

// softmax stored [rows, V] (allocated), then a loss pass, then a grad pass into grad.
CrossEntropyResult cross_entropy(const CrossEntropyShape& s, std::span<const float> logits,
                                 std::span<const std::int64_t> labels, std::span<float> loss, std::span<float> grad,
                                 const ExecOptions& o = {});

struct RmsNormSaved {
  FloatBuffer normed;   // [rows, H]
  FloatBuffer inv_rms;  // [rows]
};
RmsNormSaved rmsnorm_forward(const RmsNormShape& s, std::span<const float> x, std::span<const float> weight,
                             std::span<float> y, const ExecOptions& o = {});
void rmsnorm_backward(const RmsNormShape& s, const RmsNormSaved& saved, std::span<const float> weight,
                      std::span<const float> dy, std::span<float> d_input, std::span<float> d_weight,
                      const ExecOptions& o = {});

struct SwigluGrads {
  FloatBuffer d_gate, d_up;  // [rows, I] each (a sigma buffer is allocated and freed inside)
};
SwigluGrads swiglu_backward(const SwigluShape& s, std::span<const float> dh, std::span<const float> gate,
                            std::span<const float> up, const ExecOptions& o = {});

// One pass per head, cos/sin reloaded per head.
RunInfo rope_forward_per_head(const RopeShape& s, const RopeTable& t, std::span<float> q, std::span<float> k,
                              const ExecOptions& o = {});
RunInfo rope_backward_per_head(const RopeShape& s, const RopeTable& t, std::span<float> dq, std::span<float> dk,
                               const ExecOptions& o = {});

// S = Q K^T through OpenBLAS SGEMM into P [B, Hq, Sq, Skv] (allocated, kept for the
// backward), a softmax pass over P, O = P V through SGEMM.
struct AttentionSaved {
  FloatBuffer probs;
};
AttentionSaved attention_forward(const AttentionShape& s, std::span<const float> q, std::span<const float> k,
                                 std::span<const float> v, std::span<float> o, const ExecOptions& opt = {});
void attention_backward(const AttentionShape& s, const AttentionSaved& saved, std::span<const float> q,
                        std::span<const float> k, std::span<const float> v, std::span<const float> o,
                        std::span<const float> d_o, std::span<float> dq, std::span<float> dk, std::span<float> dv,
                        const ExecOptions& opt = {});
std::size_t attention_probs_bytes(const AttentionShape& s);

}  // namespace separate

// ---------------------------------------------------------------- CUDA entries
// Each runs on the device when one is usable; otherwise it declines: the CPU
// kernel serves the call (identical bits) and RunInfo says declined.
namespace cuda {
CrossEntropyResult cross_entropy(const CrossEntropyShape& s, std::span<const float> logits,
                                 std::span<const std::int64_t> labels, std::span<float> loss, std::span<float> lse,
                                 std::span<float> grad, const ExecOptions& o = {});
RunInfo rmsnorm_forward(const RmsNormShape& s, std::span<const float> x, std::span<const float> weight,
                        std::span<float> y, std::span<float> inv_rms, const ExecOptions& o = {});
RunInfo swiglu_forward(const SwigluShape& s, std::span<const float> gate, std::span<const float> up, std::span<float> h,
                       const ExecOptions& o = {});
RunInfo swiglu_backward_inplace(const SwigluShape& s, std::span<const float> dh, std::span<float> gate,
                                std::span<float> up, const ExecOptions& o = {});
RunInfo rope_forward(const RopeShape& s, const RopeTable& t, std::span<float> q, std::span<float> k,
                     const ExecOptions& o = {});
RunInfo attention_forward(const AttentionShape& s, std::span<const float> q, std::span<const float> k,
                          std::span<const float> v, std::span<float> o, std::span<float> lse,
                          const ExecOptions& opt = {});
}  // namespace cuda

}  // namespace popper::fused
