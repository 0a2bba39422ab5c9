#version 450
#extension GL_GOOGLE_include_directive : require
// Resident decode, ffn: f = rmsnorm(x, g_ffn); h_r = silu(W_gate f)_r * (W_up f)_r
// with silu(g) = g / (1 + exp(-g)); W0 = W_gate, W1 = W_up (args.rows =
// intermediate, args.cols = hidden), one item per row r, both sums in the
// Warp32 order; the RMSNorm scale as in head.comp.
#define RESIDENT_GEMV
#include "resident_common.glsl"

float activation(uint i, float inv) { return normed(inv, i); }

void main() {
  const uint row = live_item();
  float acc_gate, acc_up;
  pair_dot(0u, row, 1u, row, args.cols / 256u, true, acc_gate, acc_up);
  const float g = tree_sum(acc_gate);
  const float u = tree_sum(acc_up);
  if (live() && lane() == 0u) {
    precise float h = g / (1.0 + exp(-g)) * u;
    act[args.out_off + row] = h;
  }
}
