// Internal to the fused CPU kernels: the per-ISA kernel table shared by the
// ISA translation units (cpu_fused_avx2.cpp, cpu_fused_avx512.cpp, the scalar
// table in cpu_fused_scalar.cpp) and the ISA-neutral drivers (cpu_*.cpp,
// separate.cpp). Bodies live in *_body.inl, written once over simd.inl.
//
// Mutation points (popper/mutant.hpp) are evaluated by the drivers and passed
// down as bits of `mut`: the ISA units stay free of inline functions shared
// with other translation units.
#pragma once
#include <cstddef>
#include <cstdint>

namespace popper::fused::detail {

enum MutantBit : std::uint32_t {
  kMutCeUnstabilized = 1u << 0,
  kMutCeOnehotWrongIndex = 1u << 1,
  kMutCeNarrowAccumulation = 1u << 2,
  kMutCeChunkDropsLast = 1u << 3,
  kMutCeChunkMergeNoRescale = 1u << 4,
  kMutCeIgnoreIndexIgnored = 1u << 5,
  kMutCeIgnoredGradLeft = 1u << 6,
  kMutRmsRecomputeReordered = 1u << 7,
  kMutRmsDxMissingProjection = 1u << 8,
  kMutSwigluInplaceOrder = 1u << 9,
  kMutSwigluDgateMissingTerm = 1u << 10,
  kMutAttnNoRescale = 1u << 11,
  kMutAttnCausalOffByOne = 1u << 12,
  kMutAttnGqaWrongKvHead = 1u << 13,
  kMutAttnDecodeTopLeft = 1u << 14,
  kMutAttnBwdMissingDelta = 1u << 15,
  kMutAttnBwdGqaOverwrite = 1u << 16,
  kMutBf16WidenDropsLowBit = 1u << 17,
  kMutBf16Truncate = 1u << 18,
  kMutExp2Truncated = 1u << 19,
  kMutAttnDiagonalColumnsShort = 1u << 20,
  kMutAttnBwdDiagonalLate = 1u << 21,
  kMutCeShiftRoundedMax = 1u << 22,
  kMutFiniteScanTail = 1u << 23,
  kMutAttnSepShiftRoundedMax = 1u << 24,
};

// ---- cross-entropy
struct CeArgs {
  const float* logits;
  float* grad;  // may equal logits
  const std::int64_t* labels;
  float* loss;
  float* lse;  // may be null
  std::int64_t vocab, chunk, ignore_index;
  float scale;
  std::uint32_t mut;
};
struct CeStats {
  std::int64_t ignored = 0, nonfinite = 0;
  double loss_sum = 0;
};
// Rows [r0, r1); chunk_max: ceil(V / chunk) floats of workspace.
using CeRowsFn = void (*)(const CeArgs&, std::int64_t r0, std::int64_t r1, float* chunk_max, CeStats* stats);
// Separate path: p[r] = softmax(x[r]) for rows [r0, r1) (stored), grad = scale (p - onehot).
using SoftmaxRowsFn = void (*)(const float* x, float* p, std::int64_t n, std::int64_t r0, std::int64_t r1);
using CeGradFromProbsFn = void (*)(const float* p, const std::int64_t* labels, float* grad, std::int64_t vocab,
                                   std::int64_t ignore_index, float scale, std::int64_t r0, std::int64_t r1);

// ---- RMSNorm
struct RmsArgs {
  const float* x;
  const float* w;
  float* y;
  float* inv_rms;
  float* normed;  // optional: forward / backward write the normed they use
  const float* dy;
  float* dx;
  std::int64_t hidden;
  float eps;
  std::uint32_t mut;
};
using RmsFwdRowsFn = void (*)(const RmsArgs&, std::int64_t r0, std::int64_t r1);
// Backward rows [r0, r1): dx, and dw_block[i] += sum_r dy normed (dw_block zeroed by the caller).
// from_saved_normed: read normed instead of recomputing (the separate path).
using RmsBwdRowsFn = void (*)(const RmsArgs&, std::int64_t r0, std::int64_t r1, float* dw_block,
                              bool from_saved_normed);

// ---- SwiGLU (flat element ranges)
using SwigluFwdFn = void (*)(const float* g, const float* u, float* h, std::int64_t n);
using SwigluBwdFn = void (*)(const float* dh, float* g, float* u, std::int64_t n, std::uint32_t mut);
using SigmoidFn = void (*)(const float* g, float* s, std::int64_t n);
// Separate backward steps: d_up = dh g s;  d_gate = dh u s (1 + g (1 - s)).
using SwigluSepFn = void (*)(const float* dh, const float* g, const float* u, const float* s, float* d_gate,
                             float* d_up, std::int64_t n);

// ---- RoPE: rotate `heads` consecutive heads of one token with one cos/sin row.
using RopeHeadsFn = void (*)(const float* cos_row, const float* sin_row, float* x, std::int64_t heads,
                             std::int64_t head_dim, bool inverse);

// ---- attention
constexpr int kTileQ = 64;   // Br
constexpr int kTileKv = 64;  // Bc
static inline std::int64_t padded_head_dim(std::int64_t d) { return (d + 15) / 16 * 16; }

struct AttnArgs {
  const float *q, *k, *v;
  const std::uint16_t *q16, *k16, *v16;  // BF16 inputs (forward only) when non-null
  float *o, *lse;
  const float* d_o;
  float *dq, *dk, *dv;
  std::int64_t batch, q_len, kv_len, q_heads, kv_heads, head_dim;
  bool causal;
  float scale;
  std::uint32_t mut;
};
// Workspace floats per worker (identical for every ISA). Forward: one packed
// K^T and V block, shared by the group's query heads, and per query head:
static inline std::size_t attn_fwd_head_ws_floats(std::int64_t d) {
  const std::size_t dp = static_cast<std::size_t>(padded_head_dim(d));
  return dp * kTileQ         // Qs
         + kTileQ * kTileKv  // S / P
         + kTileQ * dp       // O accumulator
         + 2 * kTileQ;       // m, l
}
static inline std::size_t attn_fwd_ws_floats(std::int64_t d, std::int64_t group) {
  const std::size_t dp = static_cast<std::size_t>(padded_head_dim(d));
  return dp * kTileKv    // K^T
         + kTileKv * dp  // V
         + static_cast<std::size_t>(group) * attn_fwd_head_ws_floats(d);
}
static inline std::size_t attn_bwd_ws_floats(std::int64_t d, std::int64_t group, std::int64_t q_len) {
  const std::size_t dp = static_cast<std::size_t>(padded_head_dim(d));
  const std::size_t gq = static_cast<std::size_t>(group * q_len);
  return 3 * dp * kTileKv        // K^T, K, V^T
         + 2 * kTileKv * dp      // dK, dV accumulators
         + 3 * kTileQ * dp       // Qs, Q, dO
         + 2 * kTileQ * kTileKv  // P, dP / dS (P^T and dS^T are read in place)
         + 2 * gq                // lse2, D
         + gq * dp;              // dQ accumulator
}
// Forward unit = (b, hkv, q block); backward unit = (b, hkv).
using AttnUnitFn = void (*)(const AttnArgs&, std::int64_t unit, float* ws);

// ---- BF16 conversion and exp2 (tests)
using ToBf16Fn = void (*)(const float* x, std::uint16_t* out, std::int64_t n, std::uint32_t mut);
using Exp2ArrayFn = void (*)(const float* x, float* out, std::int64_t n, std::uint32_t mut);

// ---- the passes over every parameter (parameter_body.inl)
// Finiteness scan: whether x[0, n) holds no NaN and no infinity.
using AllFiniteFn = bool (*)(const float* x, std::int64_t n, std::uint32_t mut);
// AdamW on [0, n) in place (constants of train::adamw_update); returns whether every p written is finite.
struct AdamWArgs {
  float b1, b2, one_b1, one_b2, step_size, inv_sqrt_c2, eps;
};
using AdamWRangeFn = bool (*)(float* p, float* m, float* v, const float* g, std::int64_t n, float decay,
                              const AdamWArgs& k);

// S = A (M x K, lda) * B (K x N, ldb) for the separate attention path's softmax pass.
using SoftmaxScaledRowsFn = void (*)(float* s, std::int64_t n, std::int64_t ld, std::int64_t rows,
                                     std::int64_t row0_global, std::int64_t causal_offset, bool causal, float scale,
                                     float* lse_out, std::uint32_t mut);

struct KernelTable {
  const char* tag;  // "cpu:avx512" ...
  CeRowsFn ce_rows;
  SoftmaxRowsFn softmax_rows;
  CeGradFromProbsFn ce_grad_from_probs;
  RmsFwdRowsFn rms_fwd_rows;
  RmsBwdRowsFn rms_bwd_rows;
  SwigluFwdFn swiglu_fwd;
  SwigluBwdFn swiglu_bwd;
  SigmoidFn sigmoid;
  SwigluSepFn swiglu_sep;
  RopeHeadsFn rope_heads;
  AttnUnitFn attn_fwd_unit;
  AttnUnitFn attn_bwd_unit;
  SoftmaxScaledRowsFn softmax_scaled_rows;
  Exp2ArrayFn exp2_array;
  AllFiniteFn all_finite;
  AdamWRangeFn adamw_range;
};

const KernelTable& scalar_table();
const KernelTable& avx2_table();
const KernelTable& avx512_table();

}  // namespace popper::fused::detail
