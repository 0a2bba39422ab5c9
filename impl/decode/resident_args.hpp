// The arguments of the resident decode's launches (resident.hpp), shared by
// the host, the CUDA kernels (cuda/resident_kernels.cu) and, word for word,
// the Vulkan shaders (vulkan/resident_common.glsl); no other include.
#pragma once
#include <cstdint>

namespace popper::decode::resident {

// The arguments of every launch: the push constants of the Vulkan shaders
// (vulkan/resident_common.glsl, block Args) and the by-value argument of the
// CUDA kernels (cuda/resident_kernels.cu), the same 18 words in this order.
// Offsets are in elements of the buffer they index.
struct Args {
  std::uint32_t rows = 0;      // items: output rows (GEMVs), heads (attention), blocks (embed)
  std::uint32_t cols = 0;      // the input width of a GEMV
  std::uint32_t in = 0;        // activation offset of the input (RMSNorm kernels: x)
  std::uint32_t out = 0;       // activation offset of the output
  std::uint32_t norm = 0;      // vector offset of the RMSNorm weight
  std::uint32_t bias = 0;      // vector offset of b_q (b_k, b_v follow)
  std::uint32_t flags = 0;     // kAccumulate, kBias
  std::uint32_t kv_k = 0;      // KV offset of this layer's K cache [context][Hkv D]
  std::uint32_t kv_v = 0;      // and of its V cache
  std::uint32_t q_width = 0;   // Hq D
  std::uint32_t kv_width = 0;  // Hkv D
  std::uint32_t head_dim = 0;  // D
  std::uint32_t group = 0;     // Hq / Hkv
  std::uint32_t context = 0;   // positions the KV cache and the RoPE table hold
  std::uint32_t scores = 0;    // activation offset of the attention scratch [Hq][context]
  std::uint32_t hidden = 0;    // H (the embedding row width)
  float eps = 0;               // RMSNorm epsilon
  float scale = 0;             // attention score scale 1/sqrt(D)
};
static_assert(sizeof(Args) == 18 * 4, "Args is 18 words on every device");

inline constexpr std::uint32_t kAccumulate = 1;  // gemv_acc: out = out + W in (else out = W in)
inline constexpr std::uint32_t kBias = 2;        // qkv: add b_q, b_k, b_v

enum class Kernel { Embed, Qkv, Attention, GemvAcc, Ffn, Head };
inline constexpr int kKernels = 6;

}  // namespace popper::decode::resident
