// The canary model of the parity gate (contracts/decode/multi-backend-parity-v1.yaml):
// a decoder-only transformer in the layout of llama.cpp's "qwen2"
// architecture, every matrix in Q4_K, the norms and biases in FP32.
//
//   x_0 = deq(token_embd)[token]
//   per layer l:  a = rmsnorm(x, attn_norm_l)
//                 q = W_q a + b_q,  k = W_k a + b_k,  v = W_v a + b_v     (Hq, Hkv heads of D)
//                 q, k = rope(q, k, pos)                                   (half-split pairs, base rope_base)
//                 o_h = sum_{j<=pos} softmax_j(q_h . k_{j,g(h)} / sqrt(D)) v_{j,g(h)},  g(h) = h / (Hq/Hkv)
//                 x = x + W_o o
//                 f = rmsnorm(x, ffn_norm_l)
//                 x = x + W_down (silu(W_gate f) * (W_up f))
//   logits = W_output rmsnorm(x, output_norm)
//
// Every Q4_K matrix has cols % 256 == 0 (the super-block), so hidden,
// Hq * D and the intermediate width are multiples of 256. Qwen2.5-0.5B's
// hidden width 896 is not (llama.cpp itself falls back to Q5_0 for those
// tensors); the canary keeps every GEMV in Q4_K with hidden 1024 and 16 query
// heads instead, and Qwen2.5-0.5B's other dimensions.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "impl/q4k/q4k.hpp"

namespace popper::decode {

struct Config {
  std::int64_t hidden = 1024;
  std::int64_t layers = 24;
  std::int64_t q_heads = 16;
  std::int64_t kv_heads = 2;
  std::int64_t head_dim = 64;
  std::int64_t intermediate = 4864;
  std::int64_t vocab = 32768;
  std::int64_t context = 4096;                  // longest position the model is run at
  double rms_eps = static_cast<double>(1e-6f);  // GGUF stores it as f32: keep it exact
  double rope_base = 1000000.0;

  std::int64_t q_width() const { return q_heads * head_dim; }
  std::int64_t kv_width() const { return kv_heads * head_dim; }
  // Throws InvalidArgument naming the first dimension that breaks the rules above.
  void check() const;
};

// The canary's dimensions (above), and a small model with the same structure
// that the contract tests run in milliseconds.
Config canary_config();
Config small_config();

// A Q4_K matrix: rows x cols, row-major blocks (q4k.hpp).
struct Weight {
  std::int64_t rows = 0, cols = 0;
  std::span<const q4k::Block> blocks;
};

struct Layer {
  std::span<const float> attn_norm, ffn_norm;     // [hidden]
  std::span<const float> q_bias, k_bias, v_bias;  // [Hq D], [Hkv D], [Hkv D]
  Weight q, k, v, o, gate, up, down;
};

// A model: the weights as views into storage the model owns (its generated
// arrays, or the mapped GGUF file). Copies share that storage.
struct Model {
  Config config;
  Weight token_embd, output;
  std::span<const float> output_norm;
  std::vector<Layer> layers;
  std::string source;  // "canary (seed N)" or the GGUF path
  std::string file;    // the GGUF file these exact weights are in; empty for a generated or altered model
  std::shared_ptr<const void> storage;

  // Weights read by one decode step (every Q4_K matrix except the embedding,
  // plus one embedding row and the FP32 vectors).
  std::uint64_t bytes_per_token() const;
};

// Deterministic weights: every Q4_K block drawn from `seed` (codes uniform,
// sub-block scales 4..8, mins centring each sub-block at zero, d chosen for a
// standard deviation of 1/sqrt(cols), output projections W_o and W_down
// further scaled by 1/sqrt(2 layers)); norms 1 +- 0.1; biases +- 0.02.
Model make_canary(const Config& c, std::uint64_t seed = 20261123, int threads = 1);

// The canary prompt: `count` token ids drawn from `seed`, each in [0, vocab).
std::vector<std::int32_t> canary_tokens(const Config& c, int count, std::uint64_t seed = 20261123);

// GGUF (llama.cpp's qwen2 names and metadata, gguf/llama_names.hpp). The
// writer is atomic; the loader maps the file and checks every tensor's type
// (Q4_K matrices, F32 vectors) and shape against the metadata before use.
void write_gguf(const Model& m, const std::string& path);
Model load_gguf(const std::string& path);

// A kernel fault, injected into the weights one backend sees: the effect of a
// GEMV that reads sub-block 0's scale as 0, or pairs sub-block j with the
// scale and min of sub-block 7 - j, in every block of every matrix.
enum class Fault { None, ZeroScale, ReverseSubBlocks };
const char* to_string(Fault f);              // "none" "zero-scale" "reverse-subblocks"
Fault parse_fault(const std::string& name);  // throws InvalidArgument listing the names
Model with_fault(const Model& m, Fault f);   // a copy with its own corrupted blocks

// The model cut after its first `layers` layers (1 <= layers <= m's): the
// final RMSNorm and LM head applied to the residual stream there. Shares m's storage.
Model truncated(const Model& m, int layers);

}  // namespace popper::decode
