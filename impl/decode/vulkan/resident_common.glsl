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

uint lane() { return gl_LocalInvocationID.x; }
// The work item of this workgroup (grids wider than 65535 use y).
uint item() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

// The Warp32 tree over the 32 lanes' partial sums; every lane gets the sum.
float tree_sum(float v) {
  partial[lane()] = v;
  barrier();
  for (uint off = 16u; off > 0u; off >>= 1u) {
    if (lane() < off) {
      precise float s = partial[lane()] + partial[lane() + off];
      partial[lane()] = s;
    }
    barrier();
  }
  const float r = partial[0];
  barrier();
  return r;
}

float tree_max(float v) {
  partial[lane()] = v;
  barrier();
  for (uint off = 16u; off > 0u; off >>= 1u) {
    if (lane() < off) partial[lane()] = max(partial[lane()], partial[lane() + off]);
    barrier();
  }
  const float r = partial[0];
  barrier();
  return r;
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

// Weight 32 j + l of block b of row `row` (nb blocks a row) of the Q4_K matrix
// in W, as q4k::reference::dequantize_row: (d sc_j) q - dmin m_j.
#define Q4K_BYTE(W, base, k) ((W[(base) + (k) / 4u] >> (8u * ((k) % 4u))) & 0xFFu)
#define DEFINE_Q4K_WEIGHT(NAME, W)                                                   \
  float NAME(uint row, uint nb, uint b, uint j, uint l) {                            \
    const uint base = (row * nb + b) * 36u;                                          \
    const vec2 dm = unpackHalf2x16(W[base]);                                         \
    uint sc, mn;                                                                     \
    if (j < 4u) {                                                                    \
      sc = Q4K_BYTE(W, base, 4u + j) & 63u;                                          \
      mn = Q4K_BYTE(W, base, 8u + j) & 63u;                                          \
    } else {                                                                         \
      sc = (Q4K_BYTE(W, base, 8u + j) & 15u) | ((Q4K_BYTE(W, base, j) >> 6u) << 4u); \
      mn = (Q4K_BYTE(W, base, 8u + j) >> 4u) | ((Q4K_BYTE(W, base, 4u + j) >> 6u) << 4u); \
    }                                                                                \
    const uint byte = Q4K_BYTE(W, base, 16u + 32u * (j / 2u) + l);                   \
    const uint q = (j % 2u == 0u) ? (byte & 15u) : (byte >> 4u);                     \
    precise float scale = dm.x * float(sc);                                          \
    precise float offset = dm.y * float(mn);                                         \
    precise float w = scale * float(q) - offset;                                     \
    return w;                                                                        \
  }
DEFINE_Q4K_WEIGHT(weight0, w0)
DEFINE_Q4K_WEIGHT(weight1, w1)
DEFINE_Q4K_WEIGHT(weight2, w2)
