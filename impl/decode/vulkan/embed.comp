#version 450
#extension GL_GOOGLE_include_directive : require
// Resident decode, embed: x = deq(token_embd)[token] (W0 = token_embd).
// Item b dequantizes block b of the token's row: lane l writes weights
// 256 b + 32 j + l, j = 0..7. args.rows = hidden / 256, args.out = x.
#include "resident_common.glsl"

void main() {
  const uint b = item();
  if (b >= args.rows) return;
  const uint token = step[0];
  const Q4kLane v = lane_block0(token, args.rows, b, lane());
  for (uint j = 0u; j < 8u; ++j) act[args.out_off + 256u * b + 32u * j + lane()] = q4k_weight(v, j);
}
