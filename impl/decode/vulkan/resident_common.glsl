// Shared by the resident decode shaders (impl/decode/resident.hpp: the
// launches, the buffers and the order of every sum). A work item is 32
// invocations (lanes); a workgroup holds kItems of them, so that a device
// with a cap on resident workgroups still fills its cores. Sums run in the
// Warp32 order: lane l accumulates terms l, l+32, ... in increasing index,
// then tree_sum adds lane l + off into lane l for off = 16, 8, 4, 2, 1.
// Every operation is `precise` (SPIR-V NoContraction): no fused multiply-add.
//
// tree_sum and tree_max may hold barriers, so every invocation of a
// workgroup calls them the same number of times: an item past args.rows
// computes a copy of the last item (live_item) and writes nothing.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_shuffle_relative : require

const uint kItems = 4u;  // work items per workgroup (vulkan_resident.cpp dispatches items / kItems groups)
layout(local_size_x = 128) in;

layout(std430, set = 0, binding = 0) buffer Act { float act[]; };
layout(std430, set = 0, binding = 1) readonly buffer Step { uint step[]; };  // token id, position
layout(std430, set = 0, binding = 2) readonly buffer Vectors { float vec[]; };
layout(std430, set = 0, binding = 3) buffer Kv { float kv[]; };
layout(std430, set = 0, binding = 4) readonly buffer Rope { float rope[]; };  // cos [context][D/2], then sin
// Q4_K, 36 words per block; the uvec4 views of the same bindings read a block's 16-byte header at once.
layout(std430, set = 0, binding = 5) readonly buffer W0 { uint w0[]; };
layout(std430, set = 0, binding = 6) readonly buffer W1 { uint w1[]; };
layout(std430, set = 0, binding = 7) readonly buffer W2 { uint w2[]; };
layout(std430, set = 0, binding = 5) readonly buffer W0v { uvec4 w0v[]; };
layout(std430, set = 0, binding = 6) readonly buffer W1v { uvec4 w1v[]; };
layout(std430, set = 0, binding = 7) readonly buffer W2v { uvec4 w2v[]; };

// resident::Args, word for word.
layout(push_constant) uniform Args {
  uint rows, cols, in_off, out_off, norm, bias, flags, kv_k, kv_v;
  uint q_width, kv_width, head_dim, group, context, scores, hidden;
  float eps, scale;
} args;

// Loops are unrolled by hand (EIGHT, FIVE): spirv-opt's [[unroll]] drops
// the NoContraction decorations of the copies it makes.
#define EIGHT(T) T(0u) T(1u) T(2u) T(3u) T(4u) T(5u) T(6u) T(7u)
#define FIVE(T) T(16u) T(8u) T(4u) T(2u) T(1u)

const uint kAccumulate = 1u;
const uint kBias = 2u;

shared float partial[32u * kItems];
shared float reduced[kItems];

uint lane() { return gl_LocalInvocationID.x % 32u; }
uint slot() { return gl_LocalInvocationID.x / 32u; }
// The work item of this invocation (grids wider than 65535 groups use y).
uint item() { return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * kItems + slot(); }
bool live() { return item() < args.rows; }
uint live_item() { return min(item(), args.rows - 1u); }

// With 32-wide subgroups (a subgroup is then an item, lane = subgroup
// invocation) the tree is five shuffles; otherwise lane 0 of each item runs
// it over shared memory in the same order, with two barriers instead of six
// (a barrier is what costs on a CPU device such as lavapipe). Every lane
// gets the sum. gl_SubgroupSize is the same for the whole dispatch, so both
// paths are taken in uniform control flow.
float tree_sum(float v) {
  if (gl_SubgroupSize == 32u) {
#define STEP(off)                                    \
  {                                                  \
    precise float s = v + subgroupShuffleDown(v, off); \
    v = s;                                           \
  }
    FIVE(STEP)
#undef STEP
    return subgroupShuffle(v, 0u);
  }
  const uint base = 32u * slot();
  partial[gl_LocalInvocationID.x] = v;
  barrier();
  if (lane() == 0u) {
    for (uint off = 16u; off > 0u; off >>= 1u)
      for (uint l = 0u; l < off; ++l) {
        precise float s = partial[base + l] + partial[base + l + off];
        partial[base + l] = s;
      }
    reduced[slot()] = partial[base];
  }
  barrier();
  return reduced[slot()];
}

float tree_max(float v) {
  if (gl_SubgroupSize == 32u) {
#define STEP(off) v = max(v, subgroupShuffleDown(v, off));
    FIVE(STEP)
#undef STEP
    return subgroupShuffle(v, 0u);
  }
  const uint base = 32u * slot();
  partial[gl_LocalInvocationID.x] = v;
  barrier();
  if (lane() == 0u) {
    float m = partial[base];
    for (uint l = 1u; l < 32u; ++l) m = max(m, partial[base + l]);
    reduced[slot()] = m;
  }
  barrier();
  return reduced[slot()];
}

// 1 / sqrt(mean(x^2) + eps) of x = act[x .. x + n), as ordered_ops' rmsnorm.
// Eight loads are issued before their adds, which keep the lane's order.
float rms_inverse(uint x, uint n) {
  precise float acc = 0.0;
  for (uint i0 = 0u; i0 < n; i0 += 256u) {
    float v[8];
#define LOAD(k) v[k] = act[x + min(i0 + 32u * k + lane(), n - 1u)];
#define ADD(k)                                        \
  {                                                   \
    precise float p = v[k] * v[k];                    \
    precise float s = acc + p;                        \
    acc = i0 + 32u * k + lane() < n ? s : acc;        \
  }
    EIGHT(LOAD) EIGHT(ADD)
#undef LOAD
#undef ADD
  }
  precise float mean = tree_sum(acc) / float(n);
  precise float inv = 1.0 / sqrt(mean + args.eps);
  return inv;
}

// Lane l's raw words of one Q4_K block: the 16-byte header (d and dmin as
// halves, then the 12 scale bytes) and the 4 words holding its code bytes
// 16 + 32 c + l (the codes of weights 64 c + l and 64 c + 32 + l).
struct Q4kRaw {
  uvec4 head;
  uvec4 qs;
};

// Block b of a row; b past the row (the padding of its last four) reads
// the row's last block again.
#define DEFINE_Q4K_LOAD(NAME, W, WV)                                                  \
  Q4kRaw NAME(uint row, uint nb, uint b) {                                            \
    const uint blk = row * nb + min(b, nb - 1u), base = blk * 36u + 4u + lane() / 4u; \
    Q4kRaw r;                                                                         \
    r.head = WV[blk * 9u];                                                            \
    r.qs = uvec4(W[base], W[base + 8u], W[base + 16u], W[base + 24u]);                \
    return r;                                                                         \
  }
DEFINE_Q4K_LOAD(load_block0, w0, w0v)
DEFINE_Q4K_LOAD(load_block1, w1, w1v)
DEFINE_Q4K_LOAD(load_block2, w2, w2v)

uint scale_byte(uvec4 h, uint i) { return (h[1u + i / 4u] >> (8u * (i % 4u))) & 0xFFu; }

// Weight 32 j + l of the block (j a constant once unrolled), exactly
// q4k::reference::dequantize_row's (d sc_j) q - dmin m_j.
float q4k_weight(Q4kRaw r, uint j) {
  const vec2 dm = unpackHalf2x16(r.head.x);
  uint sc, mn;
  if (j < 4u) {
    sc = scale_byte(r.head, j) & 63u;
    mn = scale_byte(r.head, j + 4u) & 63u;
  } else {
    sc = (scale_byte(r.head, j + 4u) & 15u) | ((scale_byte(r.head, j - 4u) >> 6u) << 4u);
    mn = (scale_byte(r.head, j + 4u) >> 4u) | ((scale_byte(r.head, j) >> 6u) << 4u);
  }
  precise float scale = dm.x * float(sc);
  precise float offset = dm.y * float(mn);
  const uint byte = (r.qs[j / 2u] >> (8u * (lane() % 4u))) & 0xFFu;
  const uint q = (j % 2u == 0u) ? (byte & 15u) : (byte >> 4u);
  precise float w = scale * float(q) - offset;
  return w;
}

// RMSNorm's output a_i = (x_i inv) g_i, computed where it is used.
float normed(float inv, uint i) {
  precise float a = (act[args.in_off + i] * inv) * vec[args.norm + i];
  return a;
}

#ifdef RESIDENT_GEMV
// The shader's input a_i of a GEMV (inv: its RMSNorm scale, when it has one).
float activation(uint i, float inv);

// acc plus this lane's 8 terms of block b of a row, in order; a block past
// the row (b >= nb: padding of the row's last four) leaves acc unchanged.
float block_dot(Q4kRaw v, uint b, uint nb, float inv, float acc) {
  const uint bb = min(b, nb - 1u);
  precise float r = acc;
#define TERM(j)                                                                    \
  {                                                                                \
    precise float p = q4k_weight(v, j) * activation(256u * bb + 32u * j + lane(), inv); \
    precise float s = r + p;                                                       \
    r = s;                                                                         \
  }
  EIGHT(TERM)
#undef TERM
  return b < nb ? r : acc;
}

// Two rows' blocks side by side, one activation per term.
void block_dot2(Q4kRaw v0, Q4kRaw v1, uint b, uint nb, float inv, inout float acc0, inout float acc1) {
  const uint bb = min(b, nb - 1u);
  precise float r0 = acc0, r1 = acc1;
#define TERM(j)                                                 \
  {                                                             \
    const float a = activation(256u * bb + 32u * j + lane(), inv); \
    precise float p0 = q4k_weight(v0, j) * a;                   \
    precise float p1 = q4k_weight(v1, j) * a;                   \
    precise float s0 = r0 + p0;                                 \
    precise float s1 = r1 + p1;                                 \
    r0 = s0;                                                    \
    r1 = s1;                                                    \
  }
  EIGHT(TERM)
#undef TERM
  if (b < nb) {
    acc0 = r0;
    acc1 = r1;
  }
}

Q4kRaw load_block(uint m, uint row, uint nb, uint b) {
  if (m == 0u) return load_block0(row, nb, b);
  if (m == 1u) return load_block1(row, nb, b);
  return load_block2(row, nb, b);
}

// This lane's partial sum of row `row` of matrix Wm (nb blocks) against the
// activations. The blocks are read four at a time, every load of the four
// issued before the arithmetic that uses them, so that many loads are in
// flight per lane. With `norm` the activations are RMSNorm's output, whose
// scale is computed once the first blocks' loads are in flight.
float row_dot(uint m, uint row, uint nb, bool norm) {
  precise float acc = 0.0;
  float inv = 1.0;
  for (uint b = 0u; b < nb; b += 4u) {
    const Q4kRaw v0 = load_block(m, row, nb, b), v1 = load_block(m, row, nb, b + 1u),
                 v2 = load_block(m, row, nb, b + 2u), v3 = load_block(m, row, nb, b + 3u);
    if (b == 0u && norm) inv = rms_inverse(args.in_off, 256u * nb);
    acc = block_dot(v0, b, nb, inv, acc);
    acc = block_dot(v1, b + 1u, nb, inv, acc);
    acc = block_dot(v2, b + 2u, nb, inv, acc);
    acc = block_dot(v3, b + 3u, nb, inv, acc);
  }
  return acc;
}

// Row r0 of Wm0 and row r1 of Wm1 side by side, as row_dot.
void pair_dot(uint m0, uint r0, uint m1, uint r1, uint nb, bool norm, out float acc0, out float acc1) {
  acc0 = 0.0;
  acc1 = 0.0;
  float inv = 1.0;
  for (uint b = 0u; b < nb; b += 4u) {
    const Q4kRaw x0 = load_block(m0, r0, nb, b), x1 = load_block(m0, r0, nb, b + 1u),
                 x2 = load_block(m0, r0, nb, b + 2u), x3 = load_block(m0, r0, nb, b + 3u);
    const Q4kRaw y0 = load_block(m1, r1, nb, b), y1 = load_block(m1, r1, nb, b + 1u),
                 y2 = load_block(m1, r1, nb, b + 2u), y3 = load_block(m1, r1, nb, b + 3u);
    if (b == 0u && norm) inv = rms_inverse(args.in_off, 256u * nb);
    block_dot2(x0, y0, b, nb, inv, acc0, acc1);
    block_dot2(x1, y1, b + 1u, nb, inv, acc0, acc1);
    block_dot2(x2, y2, b + 2u, nb, inv, acc0, acc1);
    block_dot2(x3, y3, b + 3u, nb, inv, acc0, acc1);
  }
}
#endif
