// The resident decode's kernels on CUDA (impl/decode/resident.hpp: the
// launches, the buffers, the order of every sum), one warp per work item,
// the same computations as the Vulkan shaders in impl/decode/vulkan/. Sums
// run in the Warp32 order: lane l accumulates terms l, l+32, ... in
// increasing index, then __shfl_down_sync with offsets 16, 8, 4, 2, 1 adds
// lane l + off into lane l. Every multiply, add, divide and square root is an
// _rn intrinsic, so nothing is contracted into a fused multiply-add whatever
// the compiler flags; exp is expf (2 ulp).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "impl/decode/cuda/resident_launch.hpp"

namespace popper::decode::cuda::detail {
namespace {

using resident::Args;
constexpr int kWarps = 4;  // warps (items) per block
constexpr unsigned kFull = 0xFFFFFFFFu;

__device__ inline unsigned lane_id() { return threadIdx.x % 32; }
__device__ inline unsigned long long item_id() {
  return static_cast<unsigned long long>(blockIdx.x) * kWarps + threadIdx.x / 32;
}

// The Warp32 tree; every lane gets lane 0's sum.
__device__ inline float tree_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v = __fadd_rn(v, __shfl_down_sync(kFull, v, off));
  return __shfl_sync(kFull, v, 0);
}
__device__ inline float tree_max(float v) {
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_down_sync(kFull, v, off));
  return __shfl_sync(kFull, v, 0);
}

// Lane l's raw loads of one Q4_K block (144 bytes, 16-byte aligned): the
// 16-byte header and its 4 code bytes 16 + 32 c + l.
struct Q4kRaw {
  uint4 head;
  unsigned qs[4];
};

__device__ inline Q4kRaw load_block(const unsigned char* __restrict__ blk, unsigned l) {
  Q4kRaw r;
  r.head = __ldg(reinterpret_cast<const uint4*>(blk));
#pragma unroll
  for (int c = 0; c < 4; ++c) r.qs[c] = __ldg(blk + 16 + 32 * c + l);
  return r;
}

// Lane l's view of one block: the 8 sub-block scales d sc_j and offsets
// dmin m_j, and the codes of weights 64 c + l and 64 c + 32 + l. weight(j)
// is then weight 32 j + l, exactly q4k::reference::dequantize_row's
// (d sc_j) q - dmin m_j.
struct Q4kLane {
  float scale[8], offset[8];
  unsigned qs[4];

  __device__ explicit Q4kLane(const Q4kRaw& raw) {
    const uint4 head = raw.head;
    const float d = __half2float(__ushort_as_half(static_cast<unsigned short>(head.x & 0xFFFFu)));
    const float dmin = __half2float(__ushort_as_half(static_cast<unsigned short>(head.x >> 16)));
    const unsigned words[3] = {head.y, head.z, head.w};
    const auto s = [&](int i) { return (words[i / 4] >> (8 * (i % 4))) & 0xFFu; };
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const unsigned sc = j < 4 ? s(j) & 63u : (s(j + 4) & 15u) | ((s(j - 4) >> 6) << 4);
      const unsigned mn = j < 4 ? s(j + 4) & 63u : (s(j + 4) >> 4) | ((s(j) >> 6) << 4);
      scale[j] = __fmul_rn(d, static_cast<float>(sc));
      offset[j] = __fmul_rn(dmin, static_cast<float>(mn));
    }
#pragma unroll
    for (int c = 0; c < 4; ++c) qs[c] = raw.qs[c];
  }
  __device__ float weight(int j) const {
    const unsigned q = (j % 2 == 0) ? (qs[j / 2] & 15u) : (qs[j / 2] >> 4);
    return __fsub_rn(__fmul_rn(scale[j], static_cast<float>(q)), offset[j]);
  }
};

__device__ inline const unsigned char* block_of(const unsigned char* w, unsigned row, unsigned nb, unsigned b) {
  return w + (static_cast<unsigned long long>(row) * nb + b) * 144;
}

// Lane l's Warp32 partial sums of R rows' dot products with x (x(i) the
// input's element i): acc[r] += w_r(256 b + 32 j + l) x(256 b + 32 j + l) in
// increasing b, then j. The loads of `Ahead` blocks (and their inputs) are
// issued before any of their products: a warp walks its rows' blocks in
// order, and with one block at a time each step waited a whole round trip to
// device memory. The order of the additions is the one-block-at-a-time order.
template <int R, int Ahead, class X>
__device__ inline void dot_rows(const unsigned char* const (&rows)[R], unsigned nb, X x, float (&acc)[R]) {
  const unsigned l = lane_id();
  for (unsigned b0 = 0; b0 < nb; b0 += Ahead) {
    Q4kRaw raw[Ahead][R];
    float xs[Ahead][8];
#pragma unroll
    for (int u = 0; u < Ahead; ++u) {
      if (b0 + u >= nb) break;
#pragma unroll
      for (int r = 0; r < R; ++r) raw[u][r] = load_block(rows[r] + (b0 + u) * 144ull, l);
#pragma unroll
      for (int j = 0; j < 8; ++j) xs[u][j] = x(256 * (b0 + u) + 32 * j + l);
    }
#pragma unroll
    for (int u = 0; u < Ahead; ++u) {
      if (b0 + u >= nb) break;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const Q4kLane v(raw[u][r]);
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[r] = __fadd_rn(acc[r], __fmul_rn(v.weight(j), xs[u][j]));
      }
    }
  }
}

// 1 / sqrt(mean(x^2) + eps) of act[x .. x + n), as ordered_ops' rmsnorm;
// sixteen loads in flight a lane, the additions in the strided order.
__device__ inline float rms_inverse(const float* act, unsigned x, unsigned n, float eps) {
  constexpr int kAhead = 16;
  float acc = 0.0f;
  for (unsigned i0 = lane_id(); i0 < n; i0 += 32 * kAhead) {
    float v[kAhead];
#pragma unroll
    for (int u = 0; u < kAhead; ++u) v[u] = i0 + 32 * u < n ? act[x + i0 + 32 * u] : 0.0f;
#pragma unroll
    for (int u = 0; u < kAhead; ++u)
      if (i0 + 32 * u < n) acc = __fadd_rn(acc, __fmul_rn(v[u], v[u]));
  }
  const float mean = __fdiv_rn(tree_sum(acc), static_cast<float>(n));
  return __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean, eps)));
}

// a_i = (x_i inv) g_i, RMSNorm's output, computed where it is used.
__device__ inline float normed(const Buffers& b, const Args& a, float inv, unsigned i) {
  return __fmul_rn(__fmul_rn(b.act[a.in + i], inv), b.vectors[a.norm + i]);
}

__global__ void embed(Buffers b, Args a) {
  const auto blk = item_id();
  if (blk >= a.rows) return;
  const Q4kLane v(load_block(block_of(b.w[0], b.step[0], a.rows, static_cast<unsigned>(blk)), lane_id()));
#pragma unroll
  for (int j = 0; j < 8; ++j) b.act[a.out + 256 * blk + 32 * j + lane_id()] = v.weight(j);
}

__global__ void gemv_acc(Buffers b, Args a) {
  const auto row = item_id();
  if (row >= a.rows) return;  // the whole warp leaves together
  const unsigned nb = a.cols / 256, r = static_cast<unsigned>(row);
  const unsigned char* const rows[1] = {block_of(b.w[0], r, nb, 0)};
  float acc[1] = {0.0f};
  dot_rows<1, 4>(
      rows, nb, [&](unsigned i) { return b.act[a.in + i]; }, acc);
  const float y = tree_sum(acc[0]);
  if (lane_id() == 0) b.act[a.out + r] = (a.flags & resident::kAccumulate) ? __fadd_rn(b.act[a.out + r], y) : y;
}

__global__ void head(Buffers b, Args a) {
  const auto row = item_id();
  if (row >= a.rows) return;
  const unsigned nb = a.cols / 256, r = static_cast<unsigned>(row);
  const float inv = rms_inverse(b.act, a.in, a.cols, a.eps);
  const unsigned char* const rows[1] = {block_of(b.w[0], r, nb, 0)};
  float acc[1] = {0.0f};
  dot_rows<1, 4>(
      rows, nb, [&](unsigned i) { return normed(b, a, inv, i); }, acc);
  const float y = tree_sum(acc[0]);
  if (lane_id() == 0) b.act[a.out + r] = y;
}

__global__ void ffn(Buffers b, Args a) {
  const auto row = item_id();
  if (row >= a.rows) return;
  const unsigned nb = a.cols / 256, r = static_cast<unsigned>(row);
  const float inv = rms_inverse(b.act, a.in, a.cols, a.eps);
  const unsigned char* const rows[2] = {block_of(b.w[0], r, nb, 0), block_of(b.w[1], r, nb, 0)};
  float acc[2] = {0.0f, 0.0f};  // gate, up
  dot_rows<2, 4>(
      rows, nb, [&](unsigned i) { return normed(b, a, inv, i); }, acc);
  const float g = tree_sum(acc[0]), u = tree_sum(acc[1]);
  if (lane_id() == 0) b.act[a.out + r] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), u);
}

// The RoPE pair (r0, r0 + D/2) of rows y0, y1 at position pos.
__device__ inline float2 rotate(const Buffers& b, const Args& a, float y0, float y1, unsigned r0, unsigned pos) {
  const unsigned half = a.head_dim / 2, j = r0 % a.head_dim;
  const float c = b.rope[pos * half + j], s = b.rope[(a.context + pos) * half + j];
  return make_float2(__fsub_rn(__fmul_rn(y0, c), __fmul_rn(y1, s)), __fadd_rn(__fmul_rn(y1, c), __fmul_rn(y0, s)));
}

__device__ inline float biased(const Buffers& b, const Args& a, float y, unsigned at) {
  return (a.flags & resident::kBias) ? __fadd_rn(y, b.vectors[a.bias + at]) : y;
}

// Items: the Hq D/2 query pairs, the Hkv D/2 key pairs, the Hkv D value rows.
__global__ void qkv(Buffers b, Args a) {
  const auto it = item_id();
  if (it >= a.rows) return;
  const unsigned nb = a.hidden / 256, half = a.head_dim / 2, q_pairs = a.q_width / 2, k_pairs = a.kv_width / 2;
  const unsigned pos = b.step[1], i_item = static_cast<unsigned>(it);
  const float inv = rms_inverse(b.act, a.in, a.hidden, a.eps);
  if (i_item < q_pairs + k_pairs) {
    const bool is_q = i_item < q_pairs;
    const unsigned p = is_q ? i_item : i_item - q_pairs;
    const unsigned r0 = (p / half) * a.head_dim + p % half, r1 = r0 + half;
    const unsigned char* w = is_q ? b.w[0] : b.w[1];
    const unsigned char* const rows[2] = {block_of(w, r0, nb, 0), block_of(w, r1, nb, 0)};
    float acc[2] = {0.0f, 0.0f};
    dot_rows<2, 4>(
        rows, nb, [&](unsigned i) { return normed(b, a, inv, i); }, acc);
    const unsigned at = is_q ? 0 : a.q_width;
    const float2 o =
        rotate(b, a, biased(b, a, tree_sum(acc[0]), at + r0), biased(b, a, tree_sum(acc[1]), at + r1), r0, pos);
    if (lane_id() != 0) return;
    float* dst = is_q ? b.act + a.out : b.kv + a.kv_k + static_cast<unsigned long long>(pos) * a.kv_width;
    dst[r0] = o.x;
    dst[r1] = o.y;
  } else {
    const unsigned r = i_item - q_pairs - k_pairs;
    const unsigned char* const rows[1] = {block_of(b.w[2], r, nb, 0)};
    float acc[1] = {0.0f};
    dot_rows<1, 4>(
        rows, nb, [&](unsigned i) { return normed(b, a, inv, i); }, acc);
    const float y = biased(b, a, tree_sum(acc[0]), a.q_width + a.kv_width + r);
    if (lane_id() == 0) b.kv[a.kv_v + static_cast<unsigned long long>(pos) * a.kv_width + r] = y;
  }
}

// Head h over positions j <= pos: s_j = (q_h . k_{j,g}) scale, g = h / group,
// p_j = exp(s_j - max s), o_h,d = (sum_j p_j v_{j,g,d}) / sum_j p_j. Lane
// j % 32 keeps s_j and p_j in the scratch, so a lane reads back only its own.
// Several scores, and several outputs d, are summed side by side: each sum
// keeps its Warp32 order, and their loads and trees overlap instead of
// waiting on one another.
__global__ void attention(Buffers b, Args a) {
  constexpr int kScores = 4, kOutputs = 8;
  const auto hh = item_id();
  if (hh >= a.rows) return;
  const unsigned h = static_cast<unsigned>(hh), D = a.head_dim, KV = a.kv_width, len = b.step[1] + 1;
  const unsigned g = h / a.group, l = lane_id();
  float* s = b.act + a.scores + static_cast<unsigned long long>(h) * a.context;
  const float* q = b.act + a.in + h * D;
  const float* keys = b.kv + a.kv_k + g * D;
  const float* values = b.kv + a.kv_v + g * D;
  float lane_max = -INFINITY;
  for (unsigned j0 = 0; j0 < len; j0 += kScores) {
    float acc[kScores];
#pragma unroll
    for (int u = 0; u < kScores; ++u) {
      acc[u] = 0.0f;
      if (j0 + u >= len) continue;
      const float* k = keys + static_cast<unsigned long long>(j0 + u) * KV;
      for (unsigned d = l; d < D; d += 32) acc[u] = __fadd_rn(acc[u], __fmul_rn(q[d], k[d]));
    }
#pragma unroll
    for (int u = 0; u < kScores; ++u) {
      if (j0 + u >= len) break;
      const unsigned j = j0 + u;
      const float score = __fmul_rn(tree_sum(acc[u]), a.scale);
      if (l == j % 32) s[j] = score, lane_max = fmaxf(lane_max, score);
    }
  }
  const float mx = tree_max(lane_max);
  float lane_sum = 0.0f;
  for (unsigned j = l; j < len; j += 32) {
    const float e = expf(__fsub_rn(s[j], mx));
    s[j] = e;
    lane_sum = __fadd_rn(lane_sum, e);
  }
  const float sum = tree_sum(lane_sum);
  for (unsigned d0 = 0; d0 < D; d0 += kOutputs) {
    float acc[kOutputs];
#pragma unroll
    for (int u = 0; u < kOutputs; ++u) acc[u] = 0.0f;
    for (unsigned j = l; j < len; j += 32) {
      const float p = s[j];
      const float* v = values + static_cast<unsigned long long>(j) * KV + d0;
#pragma unroll
      for (int u = 0; u < kOutputs; ++u)
        if (d0 + u < D) acc[u] = __fadd_rn(acc[u], __fmul_rn(p, v[u]));
    }
#pragma unroll
    for (int u = 0; u < kOutputs; ++u) {
      if (d0 + u >= D) break;
      const float o = __fdiv_rn(tree_sum(acc[u]), sum);
      if (l == 0) b.act[a.out + h * D + d0 + u] = o;
    }
  }
}

}  // namespace

int launch_resident(resident::Kernel kernel, const Buffers& b, const Args& a, std::uint32_t items, void* stream) {
  if (items == 0) return 0;
  const unsigned blocks = (items + kWarps - 1) / kWarps;
  const auto st = static_cast<cudaStream_t>(stream);
  switch (kernel) {
    case resident::Kernel::Embed: embed<<<blocks, 32 * kWarps, 0, st>>>(b, a); break;
    case resident::Kernel::Qkv: qkv<<<blocks, 32 * kWarps, 0, st>>>(b, a); break;
    case resident::Kernel::Attention: attention<<<blocks, 32 * kWarps, 0, st>>>(b, a); break;
    case resident::Kernel::GemvAcc: gemv_acc<<<blocks, 32 * kWarps, 0, st>>>(b, a); break;
    case resident::Kernel::Ffn: ffn<<<blocks, 32 * kWarps, 0, st>>>(b, a); break;
    case resident::Kernel::Head: head<<<blocks, 32 * kWarps, 0, st>>>(b, a); break;
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace popper::decode::cuda::detail
