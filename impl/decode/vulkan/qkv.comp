#version 450
#extension GL_GOOGLE_include_directive : require
// Resident decode, qkv: a = rmsnorm(x, g_attn); q = W_q a + b_q, k = W_k a + b_k,
// v = W_v a + b_v (biases when kBias); (q, k) = rope(q, k, pos) with the pair
// (y_j, y_{j+D/2}) of each head rotated by the table's cos/sin at pos:
//   y_j' = y_j cos - y_{j+D/2} sin,   y_{j+D/2}' = y_{j+D/2} cos + y_j sin;
// q -> act[args.out_off..], k and v -> this layer's KV cache at slot pos.
// W0 = W_q, W1 = W_k, W2 = W_v. Items: the Hq D/2 query pairs, the Hkv D/2
// key pairs, then the Hkv D value rows (args.rows in all); a pair's two rows
// are summed side by side, each in the Warp32 order.
#define RESIDENT_GEMV
#include "resident_common.glsl"

// The RoPE pair (r0, r0 + D/2) of rows y0, y1 at position pos.
vec2 rotate(float y0, float y1, uint r0, uint pos) {
  const uint half_dim = args.head_dim / 2u, j = r0 % args.head_dim;
  const float c = rope[pos * half_dim + j], s = rope[(args.context + pos) * half_dim + j];
  precise float o0 = y0 * c - y1 * s;
  precise float o1 = y1 * c + y0 * s;
  return vec2(o0, o1);
}

float biased(float y, uint at) {
  precise float r = y + vec[args.bias + at];
  return (args.flags & kBias) != 0u ? r : y;
}

float activation(uint i, float inv) { return normed(inv, i); }

void main() {
  const uint it = live_item();
  const uint nb = args.hidden / 256u, half_dim = args.head_dim / 2u;
  const uint q_pairs = args.q_width / 2u, k_pairs = args.kv_width / 2u;
  const uint pos = step[1];
  const bool is_pair = it < q_pairs + k_pairs, is_q = it < q_pairs;
  const uint p = is_q ? it : it - q_pairs;
  const uint r0 = is_pair ? (p / half_dim) * args.head_dim + p % half_dim : it - q_pairs - k_pairs;
  const uint r1 = r0 + half_dim;
  // W_q, W_k or W_v; a value row's second sum repeats its first, unused.
  const uint m = is_q ? 0u : is_pair ? 1u : 2u;
  float acc0, acc1;
  pair_dot(m, r0, m, is_pair ? r1 : r0, nb, true, acc0, acc1);
  // Both trees in every item: the shared-memory path's barriers need the whole workgroup.
  const float y0 = tree_sum(acc0), y1 = tree_sum(acc1);
  if (!live() || lane() != 0u) return;
  if (is_pair) {
    const uint at = is_q ? 0u : args.q_width;
    const vec2 o = rotate(biased(y0, at + r0), biased(y1, at + r1), r0, pos);
    if (is_q) {
      act[args.out_off + r0] = o.x;
      act[args.out_off + r1] = o.y;
    } else {
      kv[args.kv_k + pos * args.kv_width + r0] = o.x;
      kv[args.kv_k + pos * args.kv_width + r1] = o.y;
    }
  } else {
    kv[args.kv_v + pos * args.kv_width + r0] = biased(y0, args.q_width + args.kv_width + r0);
  }
}
