#version 450
#extension GL_GOOGLE_include_directive : require
// Resident decode, ffn: f = rmsnorm(x, g_ffn); h_r = silu(W_gate f)_r * (W_up f)_r
// with silu(g) = g / (1 + exp(-g)); W0 = W_gate, W1 = W_up (args.rows =
// intermediate, args.cols = hidden), one item per row r, both sums in the
// Warp32 order; the RMSNorm scale as in head.comp.
#include "resident_common.glsl"

void main() {
  const uint row = item();
  if (row >= args.rows) return;
  const uint nb = args.cols / 256u;
  const float inv = rms_inverse(args.in_off, args.cols);
  precise float acc_gate = 0.0, acc_up = 0.0;
  for (uint b = 0u; b < nb; ++b) {
    const Q4kLane vg = lane_block0(row, nb, b, lane()), vu = lane_block1(row, nb, b, lane());
    for (uint j = 0u; j < 8u; ++j) {
      const uint i = 256u * b + 32u * j + lane();
      precise float a = (act[args.in_off + i] * inv) * vec[args.norm + i];
      precise float pg = q4k_weight(vg, j) * a;
      precise float pu = q4k_weight(vu, j) * a;
      acc_gate = acc_gate + pg;
      acc_up = acc_up + pu;
    }
  }
  const float g = tree_sum(acc_gate);
  const float u = tree_sum(acc_up);
  if (lane() == 0u) {
    precise float h = g / (1.0 + exp(-g)) * u;
    act[args.out_off + row] = h;
  }
}
