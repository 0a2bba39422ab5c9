#version 450
#extension GL_GOOGLE_include_directive : require
// Resident decode, attention of head h = item over positions j <= pos:
//   s_j = (q_h . k_{j,g}) * scale,  g = h / group,  p_j = exp(s_j - max s),
//   o_h,d = (sum_j p_j v_{j,g,d}) / (sum_j p_j)
// q at act[args.in_off..], o to act[args.out_off..], K and V in this layer's
// cache, s and p in act[args.scores + h context ..]. Each sum (the D terms
// of a score, the softmax denominator, each P.V) in the Warp32 order. Lane
// j % 32 keeps s_j and p_j, so a lane reads back only what it wrote.
#include "resident_common.glsl"

void main() {
  const uint h = item();
  if (h >= args.rows) return;
  const uint D = args.head_dim, KV = args.kv_width, len = step[1] + 1u;
  const uint g = h / args.group, at = args.scores + h * args.context;
  float lane_max = -1.0 / 0.0;
  for (uint j = 0u; j < len; ++j) {
    precise float acc = 0.0;
    for (uint d = lane(); d < D; d += 32u) {
      precise float p = act[args.in_off + h * D + d] * kv[args.kv_k + j * KV + g * D + d];
      acc = acc + p;
    }
    precise float s = tree_sum(acc) * args.scale;
    if (lane() == j % 32u) {
      act[at + j] = s;
      lane_max = max(lane_max, s);
    }
  }
  const float mx = tree_max(lane_max);
  precise float lane_sum = 0.0;
  for (uint j = lane(); j < len; j += 32u) {
    precise float e = exp(act[at + j] - mx);
    act[at + j] = e;
    lane_sum = lane_sum + e;
  }
  const float sum = tree_sum(lane_sum);
  for (uint d = 0u; d < D; ++d) {
    precise float acc = 0.0;
    for (uint j = lane(); j < len; j += 32u) {
      precise float p = act[at + j] * kv[args.kv_v + j * KV + g * D + d];
      acc = acc + p;
    }
    precise float o = tree_sum(acc) / sum;
    if (lane() == 0u) act[args.out_off + h * D + d] = o;
  }
}
