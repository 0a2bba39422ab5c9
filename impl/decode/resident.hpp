// The resident decode backends, vulkan and cuda (contracts/multi-backend-parity-v1.yaml,
// equation resident_decode): model.hpp's formula with every operation of a
// token on the device, the weights and the KV cache resident, one host
// synchronisation per token. A token is seven kinds of launch, the same list
// on both devices (token_plan):
//
//   embed      x = deq(token_embd)[token]
//   qkv        a = rmsnorm(x, g_attn); q, k, v = W a + b; rope(q, k, pos);
//              q -> act, k and v -> the layer's KV cache at slot pos
//   attention  o_h = sum_{j <= pos} softmax_j(q_h . k_{j,g(h)} / sqrt(D)) v_{j,g(h)}, g(h) = h / (Hq/Hkv)
//   gemv_acc   x = x + W_o o            (and x = x + W_down h)
//   ffn        f = rmsnorm(x, g_ffn); h = silu(W_gate f) * (W_up f)
//   head       logits = W_out rmsnorm(x, g_out)
//
// per layer qkv, attention, gemv_acc(W_o), ffn, gemv_acc(W_down): 5 L + 2
// launches a token. The token id and position are read on the device from a
// step buffer the host writes before each token, so the recorded commands
// (Vulkan command buffer, CUDA graph) are replayed unchanged.
//
// Order of every sum: the 32-lane strided order of accum::Order::Warp32
// (lane l sums terms l, l+32, ... in increasing index, then the tree 16, 8,
// 4, 2, 1): each GEMV row, RMSNorm's sum of squares, each score q.k, the
// softmax denominator and each output P.V. Every other operation is the
// formula of ops.cpp's ordered_ops, one rounding per operation, no fused
// multiply-add. So ordered_ops(Warp32) is the CPU emulation of these
// backends; they differ from it only where the device's exp, division or
// square root is not correctly rounded.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "impl/decode/forward.hpp"
#include "impl/decode/model.hpp"
#include "impl/decode/resident_args.hpp"

namespace popper::decode::resident {

// One launch: `items` work items of 32 lanes each (a CUDA warp; a Vulkan
// workgroup holds four), its arguments and the Q4_K matrices it reads
// (binding W0, W1, W2).
struct Launch {
  Kernel kernel;
  Args args;
  std::uint32_t items = 0;
  std::vector<const Weight*> weights;
};

// Where everything lives. Buffers every launch binds, in this order:
//   0 act      FP32 activations: x, q, attention output, h, logits, scores
//   1 step     two words: the token id and its position
//   2 vectors  FP32 norms and biases: per layer attn_norm, ffn_norm, b_q, b_k, b_v; then output_norm
//   3 kv       FP32 KV cache: per layer K [context][Hkv D] then V
//   4 rope     FP32 cos [context][D/2] then sin, fused::make_rope_table's values
//   5.. 7      the launch's Q4_K matrices
struct Layout {
  std::uint32_t x = 0, q = 0, att = 0, h = 0, logits = 0, scores = 0, act_size = 0;  // act offsets, size
  std::uint32_t per_layer_vectors = 0, output_norm = 0, vectors_size = 0;
  std::uint64_t kv_size = 0;
  std::uint32_t rope_size = 0;
  std::uint32_t layer_vectors(std::size_t l) const { return static_cast<std::uint32_t>(l) * per_layer_vectors; }
};
// Throws InvalidArgument when an offset would not fit 32 bits.
Layout layout_of(const Config& c);

// The contents of the vectors and rope buffers, in the layout above.
std::vector<float> vectors_of(const Model& m);
std::vector<float> rope_of(const Config& c);

// The launches of one token, in order.
std::vector<Launch> token_plan(const Model& m, const Layout& l);

struct Step {
  std::uint32_t token = 0, position = 0;
};

bool stale_step();  // mutation point decode-resident-stale-step

// Decodes `tokens` from position 0: for each token write_step(step) then
// run(); the logits of the last are left in the act buffer. Checks the
// tokens as decode::forward does.
template <class WriteStep, class Run>
void decode_tokens(const Config& c, std::span<const std::int32_t> tokens, WriteStep write_step, Run run) {
  decode::check_tokens(c, tokens);
  const bool stale = stale_step();
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    // Mutation point (decode-resident-stale-step): the step written once, as if baked into the recording.
    if (t == 0 || !stale) write_step(Step{static_cast<std::uint32_t>(tokens[t]), static_cast<std::uint32_t>(t)});
    run();
  }
}

// The backends (make_backend's "vulkan" and "cuda"); unavailable, with the
// reason, when the device is missing or cannot hold the model.
std::unique_ptr<Backend> make_vulkan(const Model& m);
std::unique_ptr<Backend> make_cuda(const Model& m);

}  // namespace popper::decode::resident
