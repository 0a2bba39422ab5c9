#version 450
#extension GL_GOOGLE_include_directive : require
// Resident decode, head: logits = W_out rmsnorm(x, g_out); W0 = W_out
// (args.rows = vocab, args.cols = hidden), x = act[args.in_off..],
// g_out = vec[args.norm..]. Every item computes the RMSNorm scale itself
// (the same sum in the same order, so the same value) and each lane its
// activations a_i = (x_i inv) g_i as it needs them.
#define RESIDENT_GEMV
#include "resident_common.glsl"

float activation(uint i, float inv) { return normed(inv, i); }

void main() {
  const uint row = live_item();
  const float y = tree_sum(row_dot(0u, row, args.cols / 256u, true));
  if (live() && lane() == 0u) act[args.out_off + row] = y;
}
