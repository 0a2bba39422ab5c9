#version 450
#extension GL_GOOGLE_include_directive : require
// Resident decode, head: logits = W_out rmsnorm(x, g_out); W0 = W_out
// (args.rows = vocab, args.cols = hidden), x = act[args.in_off..],
// g_out = vec[args.norm..]. Every item computes the RMSNorm scale itself
// (the same sum in the same order, so the same value) and each lane its
// activations a_i = (x_i inv) g_i as it needs them.
#include "resident_common.glsl"

void main() {
  const uint row = item();
  if (row >= args.rows) return;
  const uint nb = args.cols / 256u;
  const float inv = rms_inverse(args.in_off, args.cols);
  precise float acc = 0.0;
  for (uint b = 0u; b < nb; ++b) {
    const Q4kLane v = lane_block0(row, nb, b, lane());
    for (uint j = 0u; j < 8u; ++j) {
      const uint i = 256u * b + 32u * j + lane();
      precise float a = (act[args.in_off + i] * inv) * vec[args.norm + i];
      precise float p = q4k_weight(v, j) * a;
      acc = acc + p;
    }
  }
  const float y = tree_sum(acc);
  if (lane() == 0u) act[args.out_off + row] = y;
}
