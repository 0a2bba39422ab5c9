#version 450
#extension GL_GOOGLE_include_directive : require
// Resident decode, gemv_acc: out = out + W in (kAccumulate) or out = W in;
// W0 = W (args.rows x args.cols), one item per row, the Warp32 order.
#define RESIDENT_GEMV
#include "resident_common.glsl"

float activation(uint i, float inv) { return act[args.in_off + i]; }

void main() {
  const uint row = live_item();
  const float y = tree_sum(row_dot(0u, row, args.cols / 256u, false));
  if (live() && lane() == 0u) {
    precise float out_value = (args.flags & kAccumulate) != 0u ? act[args.out_off + row] + y : y;
    act[args.out_off + row] = out_value;
  }
}
