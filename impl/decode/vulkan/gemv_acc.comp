#version 450
#extension GL_GOOGLE_include_directive : require
// Resident decode, gemv_acc: out = out + W in (kAccumulate) or out = W in;
// W0 = W (args.rows x args.cols), one item per row, the Warp32 order.
#include "resident_common.glsl"

void main() {
  const uint row = item();
  if (row >= args.rows) return;  // the whole workgroup leaves together
  const uint nb = args.cols / 256u;
  precise float acc = 0.0;
  for (uint b = 0u; b < nb; ++b) {
    const Q4kLane v = lane_block0(row, nb, b, lane());
    for (uint j = 0u; j < 8u; ++j) {
      precise float p = q4k_weight(v, j) * act[args.in_off + 256u * b + 32u * j + lane()];
      acc = acc + p;
    }
  }
  const float y = tree_sum(acc);
  if (lane() == 0u) {
    precise float out_value = (args.flags & kAccumulate) != 0u ? act[args.out_off + row] + y : y;
    act[args.out_off + row] = out_value;
  }
}
