#version 450
// Q4_K GEMV y = W x on a Vulkan device, FP32, in the 32-lane strided order of
// contracts/accum/accumulation-order-v1.yaml (Order::Warp32):
//   lane l (0..31) of the row's workgroup accumulates, in increasing i,
//     acc_l = (((p_l + p_{l+32}) + p_{l+64}) + ...),   p_i = fl(w_i * x_i)
//   then a tree: for off = 16, 8, 4, 2, 1: acc_l = acc_l + acc_{l+off} (l < off); y = acc_0.
// w_i = (d*sc_j)*q_i - dmin*m_j exactly as q4k::reference::dequantize_row.
// Every operation is `precise` (SPIR-V NoContraction): no fused multiply-add,
// so the CPU emulation of the order reproduces the result bit for bit.
// One workgroup per row; rows beyond 65535 use the y dimension of the grid.
layout(local_size_x = 32) in;

layout(std430, set = 0, binding = 0) readonly buffer Weights { uint w[]; };  // 36 words per block
layout(std430, set = 0, binding = 1) readonly buffer Activations { float x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Output { float y[]; };
layout(push_constant) uniform Shape { uint rows; uint cols; } shape;

shared float partial[32];

uint block_byte(uint base, uint byte_index) {
  return (w[base + byte_index / 4u] >> (8u * (byte_index % 4u))) & 0xFFu;
}

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= shape.rows) return;  // whole workgroup leaves together
  const uint lane = gl_LocalInvocationID.x;
  const uint nb = shape.cols / 256u;
  precise float acc = 0.0;
  for (uint b = 0u; b < nb; ++b) {
    const uint base = (row * nb + b) * 36u;
    const vec2 dm = unpackHalf2x16(w[base]);  // d in the low half, dmin in the high half
    for (uint j = 0u; j < 8u; ++j) {
      uint sc, mn;
      if (j < 4u) {
        sc = block_byte(base, 4u + j) & 63u;
        mn = block_byte(base, 8u + j) & 63u;
      } else {
        sc = (block_byte(base, 8u + j) & 15u) | ((block_byte(base, j) >> 6u) << 4u);
        mn = (block_byte(base, 8u + j) >> 4u) | ((block_byte(base, 4u + j) >> 6u) << 4u);
      }
      const uint byte = block_byte(base, 16u + 32u * (j / 2u) + lane);
      const uint q = (j % 2u == 0u) ? (byte & 15u) : (byte >> 4u);
      precise float scale = dm.x * float(sc);
      precise float offset = dm.y * float(mn);
      precise float wv = scale * float(q) - offset;
      precise float p = wv * x[256u * b + 32u * j + lane];
      acc = acc + p;
    }
  }
  partial[lane] = acc;
  barrier();
  for (uint off = 16u; off > 0u; off >>= 1u) {
    if (lane < off) {
      precise float s = partial[lane] + partial[lane + off];
      partial[lane] = s;
    }
    barrier();
  }
  if (lane == 0u) y[row] = partial[0];
}
