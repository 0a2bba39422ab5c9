#version 450
#extension GL_GOOGLE_include_directive : require
// Resident decode, embed: x = deq(token_embd)[token] (W0 = token_embd).
// Item b dequantizes block b of the token's row: lane l writes weights
// 256 b + 32 j + l, j = 0..7. args.rows = hidden / 256, args.out = x.
#include "resident_common.glsl"

void main() {
  if (!live()) return;  // no barrier follows
  const uint b = item();
  const Q4kRaw v = load_block0(step[0], args.rows, b);
#define STORE(j) act[args.out_off + 256u * b + 32u * j + lane()] = q4k_weight(v, j);
  EIGHT(STORE)
#undef STORE
}
