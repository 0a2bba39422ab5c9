#version 450
#extension GL_GOOGLE_include_directive : require
// Resident decode, attention of head h = item over positions j <= pos:
//   s_j = (q_h . k_{j,g}) * scale,  g = h / group,  p_j = exp(s_j - max s),
//   o_h,d = (sum_j p_j v_{j,g,d}) / (sum_j p_j)
// q at act[args.in_off..], o to act[args.out_off..], K and V in this layer's
// cache, s and p in act[args.scores + h context ..]. Each sum (the D terms
// of a score, the softmax denominator, each P.V) in the Warp32 order. Lane
// j % 32 keeps s_j and p_j, so a lane reads back only what it wrote.
// Scores and outputs are summed eight at a time, side by side in every
// lane, so that their loads and their trees overlap.
#include "resident_common.glsl"

void tree_step(inout float acc[8], uint off) {
#define ADD(k)                                                 \
  {                                                            \
    precise float s = acc[k] + subgroupShuffleDown(acc[k], off); \
    acc[k] = s;                                                \
  }
  EIGHT(ADD)
#undef ADD
}

// The Warp32 trees of eight sums; lane 0 gets them (every lane, without 32-wide subgroups).
void tree_sums(inout float acc[8]) {
  if (gl_SubgroupSize == 32u) {
    tree_step(acc, 16u);
    tree_step(acc, 8u);
    tree_step(acc, 4u);
    tree_step(acc, 2u);
    tree_step(acc, 1u);
  } else {
    for (uint k = 0u; k < 8u; ++k) acc[k] = tree_sum(acc[k]);
  }
}

void main() {
  const uint h = live_item();
  const uint D = args.head_dim, KV = args.kv_width, len = step[1] + 1u;
  const uint g = h / args.group, at = args.scores + h * args.context;
  const uint q = args.in_off + h * D, k_row = args.kv_k + g * D, v_row = args.kv_v + g * D;
  float lane_max = -1.0 / 0.0;
  for (uint j0 = 0u; j0 < len; j0 += 8u) {
    float acc[8];
#define ZERO(k) acc[k] = 0.0;
    EIGHT(ZERO)
    for (uint d = lane(); d < D; d += 32u) {
      const float qd = act[q + d];
#define TERM(k)                                                          \
  {                                                                      \
    precise float p = qd * kv[k_row + min(j0 + k, len - 1u) * KV + d];   \
    precise float s = acc[k] + p;                                        \
    acc[k] = s;                                                          \
  }
      EIGHT(TERM)
#undef TERM
    }
    tree_sums(acc);
    // Score j0 + k goes to lane (j0 + k) % 32.
    const uint mine = lane() - j0 % 32u;
    float dot = 0.0;
#define PICK(k)                                                                  \
  {                                                                              \
    const float sk = gl_SubgroupSize == 32u ? subgroupShuffle(acc[k], 0u) : acc[k]; \
    dot = mine == k ? sk : dot;                                                  \
  }
    EIGHT(PICK)
#undef PICK
    if (mine < 8u && j0 + mine < len) {
      precise float s = dot * args.scale;
      if (live()) act[at + j0 + mine] = s;
      lane_max = max(lane_max, s);
    }
  }
  const float mx = tree_max(lane_max);
  precise float lane_sum = 0.0;
  for (uint j = lane(); j < len; j += 32u) {
    precise float e = exp(act[at + j] - mx);
    if (live()) act[at + j] = e;
    lane_sum = lane_sum + e;
  }
  const float sum = tree_sum(lane_sum);
  for (uint d0 = 0u; d0 < D; d0 += 8u) {
    float acc[8];
    EIGHT(ZERO)
    for (uint j = lane(); j < len; j += 32u) {
      const float pj = act[at + j];
#define TERM(k)                                                          \
  {                                                                      \
    precise float p = pj * kv[v_row + j * KV + min(d0 + k, D - 1u)];     \
    precise float s = acc[k] + p;                                        \
    acc[k] = s;                                                          \
  }
      EIGHT(TERM)
#undef TERM
    }
    tree_sums(acc);
#define OUT(k)                                                \
  if (d0 + k < D) {                                           \
    precise float o = acc[k] / sum;                           \
    act[args.out_off + h * D + d0 + k] = o;                   \
  }
    if (live() && lane() == 0u) {
      EIGHT(OUT)
    }
#undef OUT
  }
#undef ZERO
}
