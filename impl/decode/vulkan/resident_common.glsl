// Shared by the resident decode shaders (impl/decode/resident.hpp: the
// launches, the buffers and the order of every sum). One workgroup of 32
// invocations is one work item; its sums run in the Warp32 order: lane l
// accumulates terms l, l+32, ... in increasing index, then tree_sum adds
// lane l + off into lane l for off = 16, 8, 4, 2, 1. Every operation is
// `precise` (SPIR-V NoContraction): no fused multiply-add.
layout(local_size_x = 32) in;

layout(std430, set = 0, binding = 0) buffer Act { float act[]; };
layout(std430, set = 0, binding = 1) readonly buffer Step { uint step[]; };  // token id, position
layout(std430, set = 0, binding = 2) readonly buffer Vectors { float vec[]; };
layout(std430, set = 0, binding = 3) buffer Kv { float kv[]; };
layout(std430, set = 0, binding = 4) readonly buffer Rope { float rope[]; };  // cos [context][D/2], then sin
layout(std430, set = 0, binding = 5) readonly buffer W0 { uint w0[]; };      // Q4_K, 36 words per block
layout(std430, set = 0, binding = 6) readonly buffer W1 { uint w1[]; };
layout(std430, set = 0, binding = 7) readonly buffer W2 { uint w2[]; };

// resident::Args, word for word.
layout(push_constant) uniform Args {
  uint rows, cols, in_off, out_off, norm, bias, flags, kv_k, kv_v;
  uint q_width, kv_width, head_dim, group, context, scores, hidden;
  float eps, scale;
} args;

const uint kAccumulate = 1u;
const uint kBias = 2u;

shared float partial[32];
shared float reduced;

uint lane() { return gl_LocalInvocationID.x; }
// The work item of this workgroup (grids wider than 65535 use y).
uint item() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

// The Warp32 tree over the 32 lanes' partial sums (lane l += lane l + off,
// off = 16, 8, 4, 2, 1), run by lane 0 alone in that order: the same sum as
// a parallel tree, with two barriers instead of six (a barrier is what costs
// on a CPU device such as lavapipe). Every lane gets the sum.
float tree_sum(float v) {
  partial[lane()] = v;
  barrier();
  if (lane() == 0u) {
    for (uint off = 16u; off > 0u; off >>= 1u)
      for (uint l = 0u; l < off; ++l) {
        precise float s = partial[l] + partial[l + off];
        partial[l] = s;
      }
    reduced = partial[0];
  }
  barrier();
  return reduced;
}

float tree_max(float v) {
  partial[lane()] = v;
  barrier();
  if (lane() == 0u) {
    float m = partial[0];
    for (uint l = 1u; l < 32u; ++l) m = max(m, partial[l]);
    reduced = m;
  }
  barrier();
  return reduced;
}

// 1 / sqrt(mean(x^2) + eps) of x = act[in_off .. in_off + n), as ordered_ops' rmsnorm.
float rms_inverse(uint x, uint n) {
  precise float acc = 0.0;
  for (uint i = lane(); i < n; i += 32u) {
    precise float p = act[x + i] * act[x + i];
    acc = acc + p;
  }
  precise float mean = tree_sum(acc) / float(n);
  precise float inv = 1.0 / sqrt(mean + args.eps);
  return inv;
}

// Lane l's view of block b of row `row` (nb blocks a row) of a Q4_K matrix:
// the 8 sub-block scales d sc_j and offsets dmin m_j, and its 4 code bytes
// (byte 16 + 32 c + l holds the codes of weights 64 c + l and 64 c + 32 + l),
// read as 8 words. Weight 32 j + l is then q4k_weight(view, j), exactly
// q4k::reference::dequantize_row's (d sc_j) q - dmin m_j.
struct Q4kLane {
  float scale[8];
  float offset[8];
  uint qs[4];
};

uint scale_byte(uvec3 s, uint i) { return (s[i / 4u] >> (8u * (i % 4u))) & 0xFFu; }

#define DEFINE_Q4K_LANE(NAME, W)                                                       \
  Q4kLane NAME(uint row, uint nb, uint b, uint l) {                                    \
    const uint base = (row * nb + b) * 36u;                                            \
    const vec2 dm = unpackHalf2x16(W[base]);                                           \
    const uvec3 s = uvec3(W[base + 1u], W[base + 2u], W[base + 3u]);                   \
    Q4kLane v;                                                                         \
    for (uint j = 0u; j < 8u; ++j) {                                                   \
      uint sc, mn;                                                                     \
      if (j < 4u) {                                                                    \
        sc = scale_byte(s, j) & 63u;                                                   \
        mn = scale_byte(s, j + 4u) & 63u;                                              \
      } else {                                                                         \
        sc = (scale_byte(s, j + 4u) & 15u) | ((scale_byte(s, j - 4u) >> 6u) << 4u);     \
        mn = (scale_byte(s, j + 4u) >> 4u) | ((scale_byte(s, j) >> 6u) << 4u);          \
      }                                                                                \
      precise float scale = dm.x * float(sc);                                          \
      precise float offset = dm.y * float(mn);                                         \
      v.scale[j] = scale;                                                              \
      v.offset[j] = offset;                                                            \
    }                                                                                  \
    for (uint c = 0u; c < 4u; ++c) v.qs[c] = (W[base + 4u + 8u * c + l / 4u] >> (8u * (l % 4u))) & 0xFFu; \
    return v;                                                                          \
  }
DEFINE_Q4K_LANE(lane_block0, w0)
DEFINE_Q4K_LANE(lane_block1, w1)
DEFINE_Q4K_LANE(lane_block2, w2)

float q4k_weight(Q4kLane v, uint j) {
  const uint q = (j % 2u == 0u) ? (v.qs[j / 2u] & 15u) : (v.qs[j / 2u] >> 4u);
  precise float w = v.scale[j] * float(q) - v.offset[j];
  return w;
}
