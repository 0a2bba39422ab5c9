// Device kernels of the fused family (contract FUSED-PO-021; run only where a
// device exists, declined otherwise). Same formulas as the CPU kernels:
//   CE        one block per row: max, sum exp(x - max) (FP32, block tree), loss, grad = scale (p - onehot)
//   RMSNorm   one block per row: inv_rms = rsqrt(mean x^2 + eps), y = (x inv_rms) w
//   SwiGLU    elementwise forward; backward writes d_gate over g and d_up over u from registers
//   RoPE      one thread per (token, head, pair), cos/sin from the table
//   attention one thread per query row: online softmax over the visible keys, GQA, bottom-right causal
// Launchers copy host buffers in and out (these entries are for parity tests,
// not for speed) and report any CUDA error as false, so the caller declines.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "impl/fused/cuda_launch.hpp"

namespace popper::fused::cuda_launch {
namespace {

constexpr int kThreads = 256;

template <class T>
struct Dev {
  T* p = nullptr;
  std::size_t n = 0;
  bool ok = true;
  explicit Dev(std::size_t count) : n(count) {
    if (count && cudaMalloc(&p, count * sizeof(T)) != cudaSuccess) ok = false, p = nullptr;
  }
  ~Dev() {
    if (p) cudaFree(p);
  }
  bool up(const T* h) { return !n || cudaMemcpy(p, h, n * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess; }
  bool down(T* h) const { return !n || cudaMemcpy(h, p, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess; }
};

__device__ float block_reduce(float v, float* sh, bool is_max) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w)
      sh[threadIdx.x] = is_max ? fmaxf(sh[threadIdx.x], sh[threadIdx.x + w]) : sh[threadIdx.x] + sh[threadIdx.x + w];
    __syncthreads();
  }
  const float r = sh[0];
  __syncthreads();
  return r;
}

__global__ void ce_kernel(const float* x, const std::int64_t* labels, float* loss, float* lse, float* grad,
                          std::int64_t V, std::int64_t ignore, float scale, bool no_max) {
  __shared__ float sh[kThreads];
  const std::int64_t r = blockIdx.x;
  const float* xr = x + r * V;
  float* g = grad + r * V;
  const std::int64_t y = labels[r];
  if (y == ignore) {
    for (std::int64_t i = threadIdx.x; i < V; i += blockDim.x) g[i] = 0.0f;
    if (threadIdx.x == 0) loss[r] = 0.0f, lse ? (void)(lse[r] = 0.0f) : (void)0;
    return;
  }
  float m = -INFINITY;
  for (std::int64_t i = threadIdx.x; i < V; i += blockDim.x) m = fmaxf(m, xr[i]);
  m = no_max ? 0.0f : block_reduce(m, sh, true);
  float s = 0.0f;
  for (std::int64_t i = threadIdx.x; i < V; i += blockDim.x) s += expf(xr[i] - m);
  s = block_reduce(s, sh, false);
  const float l = m + logf(s);
  for (std::int64_t i = threadIdx.x; i < V; i += blockDim.x) g[i] = scale * (expf(xr[i] - l) - (i == y ? 1.0f : 0.0f));
  if (threadIdx.x == 0) {
    loss[r] = l - xr[y];
    if (lse) lse[r] = l;
  }
}

__global__ void rmsnorm_kernel(const float* x, const float* w, float* y, float* inv, std::int64_t H, float eps) {
  __shared__ float sh[kThreads];
  const std::int64_t r = blockIdx.x;
  float ss = 0.0f;
  for (std::int64_t i = threadIdx.x; i < H; i += blockDim.x) ss += x[r * H + i] * x[r * H + i];
  ss = block_reduce(ss, sh, false);
  const float iv = static_cast<float>(1.0 / sqrt(static_cast<double>(ss) / static_cast<double>(H) + eps));
  if (threadIdx.x == 0) inv[r] = iv;
  for (std::int64_t i = threadIdx.x; i < H; i += blockDim.x) y[r * H + i] = (x[r * H + i] * iv) * w[i];
}

__device__ float sigm(float g) { return 1.0f / (1.0f + expf(-g)); }

__global__ void swiglu_fwd_kernel(const float* g, const float* u, float* h, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    h[i] = g[i] * sigm(g[i]) * u[i];
}

__global__ void swiglu_bwd_kernel(const float* dh, float* g, float* u, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float gv = g[i], uv = u[i], d = dh[i], s = sigm(gv);
    g[i] = d * uv * s * (1.0f + gv * (1.0f - s));
    u[i] = d * gv * s;
  }
}

__global__ void rope_kernel(const float* cs, const float* sn, float* x, std::int64_t tokens, std::int64_t seq,
                            std::int64_t heads, std::int64_t D, std::int64_t pos0) {
  const std::int64_t half = D / 2, total = tokens * heads * half;
  for (std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t j = t % half, th = t / half, tok = th / heads;
    const std::int64_t pos = pos0 + tok % seq;
    float* p = x + th * D;
    const float c = cs[pos * half + j], s = sn[pos * half + j], x1 = p[j], x2 = p[j + half];
    p[j] = x1 * c - x2 * s;
    p[j + half] = x2 * c + x1 * s;
  }
}

constexpr int kMaxD = 256;

__global__ void attention_kernel(const float* q, const float* k, const float* v, float* o, float* lse, std::int64_t B,
                                 std::int64_t Sq, std::int64_t Skv, std::int64_t Hq, std::int64_t Hkv, std::int64_t D,
                                 bool causal, float scale) {
  const std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (t >= B * Hq * Sq) return;
  const std::int64_t i = t % Sq, h = (t / Sq) % Hq, b = t / Sq / Hq, hk = h / (Hq / Hkv);
  const float* qr = q + ((b * Sq + i) * Hq + h) * D;
  float acc[kMaxD];
  for (int c = 0; c < D; ++c) acc[c] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  const std::int64_t last = causal ? i + Skv - Sq : Skv - 1;
  for (std::int64_t j = 0; j <= last; ++j) {
    const float* kr = k + ((b * Skv + j) * Hkv + hk) * D;
    const float* vr = v + ((b * Skv + j) * Hkv + hk) * D;
    float s = 0.0f;
    for (int c = 0; c < D; ++c) s += qr[c] * kr[c];
    s *= scale;
    const float mn = fmaxf(m, s), alpha = expf(m - mn), p = expf(s - mn);
    l = l * alpha + p;
    for (int c = 0; c < D; ++c) acc[c] = acc[c] * alpha + p * vr[c];
    m = mn;
  }
  for (int c = 0; c < D; ++c) o[((b * Sq + i) * Hq + h) * D + c] = acc[c] / l;
  lse[(b * Hq + h) * Sq + i] = m + logf(l);
}

int blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 ? (b < 1 ? 1 : b) : 65535);
}

bool finish() { return cudaDeviceSynchronize() == cudaSuccess && cudaGetLastError() == cudaSuccess; }

}  // namespace

bool cross_entropy(const float* logits, const std::int64_t* labels, float* loss, float* lse, float* grad,
                   std::int64_t rows, std::int64_t vocab, std::int64_t ignore_index, float scale, bool no_max) {
  const std::size_t n = static_cast<std::size_t>(rows * vocab);
  Dev<float> x(n), g(n), l(rows), e(rows);
  Dev<std::int64_t> y(rows);
  if (!x.ok || !g.ok || !l.ok || !e.ok || !y.ok || !x.up(logits) || !y.up(labels)) return false;
  ce_kernel<<<static_cast<unsigned>(rows), kThreads>>>(x.p, y.p, l.p, e.p, g.p, vocab, ignore_index, scale, no_max);
  if (!finish() || !g.down(grad) || !l.down(loss)) return false;
  return lse ? e.down(lse) : true;
}

bool rmsnorm_forward(const float* x, const float* w, float* y, float* inv_rms, std::int64_t rows, std::int64_t hidden,
                     float eps) {
  const std::size_t n = static_cast<std::size_t>(rows * hidden);
  Dev<float> dx(n), dw(hidden), dy(n), di(rows);
  if (!dx.ok || !dw.ok || !dy.ok || !di.ok || !dx.up(x) || !dw.up(w)) return false;
  rmsnorm_kernel<<<static_cast<unsigned>(rows), kThreads>>>(dx.p, dw.p, dy.p, di.p, hidden, eps);
  return finish() && dy.down(y) && di.down(inv_rms);
}

bool swiglu_forward(const float* g, const float* u, float* h, std::int64_t n) {
  Dev<float> dg(n), du(n), dh(n);
  if (!dg.ok || !du.ok || !dh.ok || !dg.up(g) || !du.up(u)) return false;
  swiglu_fwd_kernel<<<blocks_for(n), kThreads>>>(dg.p, du.p, dh.p, n);
  return finish() && dh.down(h);
}

bool swiglu_backward(const float* dh, float* g, float* u, std::int64_t n) {
  Dev<float> dd(n), dg(n), du(n);
  if (!dd.ok || !dg.ok || !du.ok || !dd.up(dh) || !dg.up(g) || !du.up(u)) return false;
  swiglu_bwd_kernel<<<blocks_for(n), kThreads>>>(dd.p, dg.p, du.p, n);
  return finish() && dg.down(g) && du.down(u);
}

bool rope_forward(const float* cos_table, const float* sin_table, std::int64_t positions, float* q, float* k,
                  std::int64_t batch, std::int64_t seq, std::int64_t q_heads, std::int64_t kv_heads,
                  std::int64_t head_dim, std::int64_t pos_offset) {
  const std::int64_t tokens = batch * seq, half = head_dim / 2;
  Dev<float> c(positions * half), s(positions * half), dq(tokens * q_heads * head_dim),
      dk(tokens * kv_heads * head_dim);
  if (!c.ok || !s.ok || !dq.ok || !dk.ok || !c.up(cos_table) || !s.up(sin_table) || !dq.up(q) || !dk.up(k))
    return false;
  rope_kernel<<<blocks_for(tokens * q_heads * half), kThreads>>>(c.p, s.p, dq.p, tokens, seq, q_heads, head_dim,
                                                                 pos_offset);
  rope_kernel<<<blocks_for(tokens * kv_heads * half), kThreads>>>(c.p, s.p, dk.p, tokens, seq, kv_heads, head_dim,
                                                                  pos_offset);
  return finish() && dq.down(q) && dk.down(k);
}

bool attention_forward(const float* q, const float* k, const float* v, float* o, float* lse, std::int64_t batch,
                       std::int64_t q_len, std::int64_t kv_len, std::int64_t q_heads, std::int64_t kv_heads,
                       std::int64_t head_dim, bool causal, float scale) {
  if (head_dim > kMaxD) return false;
  const std::size_t nq = static_cast<std::size_t>(batch * q_len * q_heads * head_dim);
  const std::size_t nk = static_cast<std::size_t>(batch * kv_len * kv_heads * head_dim);
  Dev<float> dq(nq), dk(nk), dv(nk), dout(nq), dl(static_cast<std::size_t>(batch * q_heads * q_len));
  if (!dq.ok || !dk.ok || !dv.ok || !dout.ok || !dl.ok || !dq.up(q) || !dk.up(k) || !dv.up(v)) return false;
  attention_kernel<<<blocks_for(batch * q_heads * q_len), kThreads>>>(
      dq.p, dk.p, dv.p, dout.p, dl.p, batch, q_len, kv_len, q_heads, kv_heads, head_dim, causal, scale);
  return finish() && dout.down(o) && dl.down(lse);
}

}  // namespace popper::fused::cuda_launch
