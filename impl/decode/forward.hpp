// The decode forward of the canary (model.hpp gives the formula) over the
// operations a backend supplies, and the backends of the parity gate
// (contracts/decode/multi-backend-parity-v1.yaml):
//
//   cpu        FP32, every reduction (GEMV rows, RMSNorm, attention scores,
//              softmax, P.V) summed sequentially: the reference order
//   cpu-simd   the hand kernels: q4k::cpu::gemv (AVX-512/AVX2, threaded) and
//              the fused family's RMSNorm, RoPE, attention and SwiGLU
//   vulkan     resident.hpp: every operation of a token on the Vulkan device,
//              weights and KV cache resident, one command buffer recorded once
//              and resubmitted per token; every sum in the Warp32 order, so
//              ordered_ops(Warp32) is its CPU emulation
//   cuda       the same launches on a CUDA device, captured once in a CUDA graph
//
// A backend whose device is missing, or cannot hold the model, is
// *unavailable* (never run as itself, never served by the CPU in its name).
// Every reduction is deterministic: results do not depend on the thread count.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "impl/accum/accum.hpp"
#include "impl/decode/model.hpp"

namespace popper::decode {

// One token's operations in element type T (float for the backends, double
// for the FP64 reference).
template <class T>
class Ops {
 public:
  virtual ~Ops() = default;
  // y = W x (W rows x cols, Q4_K).
  virtual void gemv(const Weight& w, std::span<const T> x, std::span<T> y) = 0;
  // y = x / sqrt(mean(x^2) + eps) * weight.
  virtual void rmsnorm(std::span<const T> x, std::span<const float> weight, std::span<T> y) = 0;
  // q [Hq D] and k [Hkv D] of the token at position pos, rotated in place.
  virtual void rope(std::span<T> q, std::span<T> k, std::int64_t pos) = 0;
  // q [Hq D] against positions 0..len-1 of k/v cache [len][Hkv][D]; out [Hq D].
  virtual void attention(std::span<const T> q, std::span<const T> k_cache, std::span<const T> v_cache, std::int64_t len,
                         std::span<T> out) = 0;
  // h = silu(gate) * up.
  virtual void swiglu(std::span<const T> gate, std::span<const T> up, std::span<T> h) = 0;
};

// The logits of a model truncated after layer `layer` (0-based): the final
// RMSNorm and LM head applied to the residual stream there.
template <class T>
using DepthLogits = std::function<void(int layer, std::span<const T> logits)>;

// Runs `tokens` one at a time from position 0 (a fresh KV cache) and returns
// the logits after the last one. `at_depth`, when given, receives the logits
// of every truncated model for the last token (the drift-vs-depth measurement).
// Throws InvalidArgument for an empty prompt, more tokens than the context, or
// a token id outside [0, vocab).
template <class T>
std::vector<T> forward(const Model& m, std::span<const std::int32_t> tokens, Ops<T>& ops,
                       const DepthLogits<T>& at_depth = {});
// forward's checks of a prompt, for the backends that run their own (resident.hpp).
void check_tokens(const Config& c, std::span<const std::int32_t> tokens);

// The FP64 oracle: weights dequantized exactly (q4k::reference), every
// operation and sum in FP64.
std::unique_ptr<Ops<double>> reference_ops(const Config& c, int threads = 1);
// FP32 with every reduction in `order` (accum-order-v1): Sequential is the cpu backend.
std::unique_ptr<Ops<float>> ordered_ops(const Config& c, accum::Order order, int threads = 1);

class Backend {
 public:
  virtual ~Backend() = default;
  const std::string& name() const { return name_; }
  // Empty when available; otherwise why not (no device, a declined call).
  const std::string& unavailable_reason() const { return reason_; }
  bool available() const { return reason_.empty(); }
  // What ran: "cpu:avx512", "vulkan:llvmpipe", "ggml-cpu:zen4", ...
  const std::string& evidence() const { return evidence_; }
  // The logits after the last of `tokens`, decoded one at a time from
  // position 0 with a fresh KV cache.
  virtual std::vector<float> logits(std::span<const std::int32_t> tokens) = 0;
  // The per-operation interface of a backend that runs popper's forward;
  // nullptr for a whole-model runtime (llama.cpp), which gives logits only.
  virtual Ops<float>* ops() { return nullptr; }

 protected:
  std::string name_, reason_, evidence_;
};

// popper's own backends, then llama.cpp on its devices (decode/lib_llama.hpp:
// the model is handed to it as a GGUF file, written to a temporary file when
// the model is not one already).
inline const std::vector<std::string>& backend_names() {
  static const std::vector<std::string> names{"cpu",      "cpu-simd",    "vulkan",   "cuda",
                                              "ggml-cpu", "ggml-vulkan", "ggml-cuda"};
  return names;
}
// backend_names() as "cpu, cpu-simd, ...", for messages.
inline std::string backend_list() {
  std::string out;
  for (const auto& n : backend_names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}
// One of backend_names(), over model m (which must outlive it); throws
// InvalidArgument for another name. Device backends upload m's weights here;
// llama.cpp loads them here (popper::Error when it refuses the file).
std::unique_ptr<Backend> make_backend(const std::string& name, const Model& m, int threads = 1);

}  // namespace popper::decode
