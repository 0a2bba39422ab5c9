// Device path of NSA selection attention: the CPU hand kernel's schedule on a
// GPU. One thread block per (row t, group g) covering every head of the group:
//
//   pass 1: thread x takes selected keys i = x, x + blockDim, ...; it reads
//           key row j_i once and computes s = scale * q_h . k for all h_g
//           heads (FP32 accumulation), stores S[h][i], keeps its maxima;
//           block reductions give m_h, then lse_h = m_h + log sum exp(S - m_h)
//   pass 2: P = exp(S - lse_h) with pass 1's lse; thread e of Dv walks the
//           keys in order: o_h[e] = sum_i P[h][i] v_{j_i}[e] (V rows read
//           once for all heads), stored once.
//
// BF16 inputs are widened exactly; the host entry (cuda_selection.cpp)
// declines to the CPU when no device is usable or any CUDA call fails.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "impl/nsa/cuda_selection.hpp"

namespace popper::nsa::detail {

namespace {

constexpr int kThreads = 128;
constexpr int kMaxHeads = 8;

struct DeviceArgs {
  int heads, groups, hg, dim, dim_v;
  float scale;
  const int* row_seq;             // [T_q]
  const int* cu_k;                // [B + 1]
  const long long* span_offsets;  // [T_q G + 1]
  const int2* spans;              // {begin, end}
  const long long* lens;          // [T_q G] selected keys per item
  const long long* score_base;    // [T_q G] offset of the item's h_g x L scores
  const unsigned short *q, *k, *v;
  float *o, *lse, *scores;
};

__device__ float widen(unsigned short b) { return __uint_as_float(static_cast<unsigned>(b) << 16); }

// Position in a span list: span index and key.
struct Cursor {
  long long s, e;
  int j;
  __device__ void settle(const int2* spans) {
    while (s < e && j >= spans[s].y) {
      ++s;
      if (s < e) j = spans[s].x;
    }
  }
  __device__ void advance(const int2* spans, long long n) {
    while (n > 0 && s < e) {
      const long long rest = spans[s].y - j;
      if (n < rest) {
        j += static_cast<int>(n);
        return;
      }
      n -= rest;
      ++s;
      if (s < e) j = spans[s].x;
      settle(spans);
    }
  }
};

__device__ float block_reduce(float v, bool is_max, float* red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      const float other = red[threadIdx.x + w];
      red[threadIdx.x] = is_max ? fmaxf(red[threadIdx.x], other) : red[threadIdx.x] + other;
    }
    __syncthreads();
  }
  const float out = red[0];
  __syncthreads();
  return out;
}

__global__ void selection_kernel(DeviceArgs a) {
  __shared__ float red[kThreads];
  __shared__ float lse_sh[kMaxHeads];
  const long long item = blockIdx.x;
  const long long t = item / a.groups;
  const int g = static_cast<int>(item % a.groups);
  const long long len = a.lens[item];
  const long long key0 = a.cu_k[a.row_seq[t]];
  const int hg = a.hg;
  float* out_o = a.o + (t * a.heads + static_cast<long long>(g) * hg) * a.dim_v;
  float* out_lse = a.lse + t * a.heads + static_cast<long long>(g) * hg;
  if (len == 0) {
    for (int e = threadIdx.x; e < hg * a.dim_v; e += blockDim.x) out_o[e] = 0.0f;
    if (threadIdx.x < hg) out_lse[threadIdx.x] = -INFINITY;
    return;
  }
  float* S = a.scores + a.score_base[item];
  const unsigned short* q = a.q + (t * a.heads + static_cast<long long>(g) * hg) * a.dim;
  const long long kstride = static_cast<long long>(a.groups) * a.dim;
  const long long vstride = static_cast<long long>(a.groups) * a.dim_v;

  // pass 1: scores and maxima
  float mx[kMaxHeads];
  for (int h = 0; h < kMaxHeads; ++h) mx[h] = -INFINITY;
  Cursor c{a.span_offsets[item], a.span_offsets[item + 1], 0};
  if (c.s < c.e) c.j = a.spans[c.s].x;
  c.settle(a.spans);
  c.advance(a.spans, threadIdx.x);
  for (long long i = threadIdx.x; i < len; i += blockDim.x) {
    const unsigned short* krow = a.k + (key0 + c.j) * kstride + static_cast<long long>(g) * a.dim;
    for (int h = 0; h < hg; ++h) {
      float dot = 0.0f;
      for (int d = 0; d < a.dim; ++d) dot = fmaf(widen(q[h * a.dim + d]), widen(krow[d]), dot);
      const float s = dot * a.scale;
      S[h * len + i] = s;
      mx[h] = fmaxf(mx[h], s);
    }
    c.advance(a.spans, blockDim.x);
  }
  for (int h = 0; h < hg; ++h) {
    const float m = block_reduce(mx[h], true, red);
    float sum = 0.0f;
    for (long long i = threadIdx.x; i < len; i += blockDim.x) sum += expf(S[h * len + i] - m);
    sum = block_reduce(sum, false, red);
    if (threadIdx.x == 0) lse_sh[h] = m + logf(sum);
  }
  __syncthreads();
  // pass 2: probabilities from pass 1's lse
  for (int h = 0; h < hg; ++h)
    for (long long i = threadIdx.x; i < len; i += blockDim.x) S[h * len + i] = expf(S[h * len + i] - lse_sh[h]);
  __syncthreads();
  for (int e = threadIdx.x; e < a.dim_v; e += blockDim.x) {
    float acc[kMaxHeads];
    for (int h = 0; h < kMaxHeads; ++h) acc[h] = 0.0f;
    Cursor w{a.span_offsets[item], a.span_offsets[item + 1], 0};
    if (w.s < w.e) w.j = a.spans[w.s].x;
    w.settle(a.spans);
    for (long long i = 0; i < len; ++i) {
      const float v = widen(a.v[(key0 + w.j) * vstride + static_cast<long long>(g) * a.dim_v + e]);
      for (int h = 0; h < hg; ++h) acc[h] = fmaf(S[h * len + i], v, acc[h]);
      w.advance(a.spans, 1);
    }
    for (int h = 0; h < hg; ++h) out_o[h * a.dim_v + e] = acc[h];
  }
  if (threadIdx.x < hg) out_lse[threadIdx.x] = lse_sh[threadIdx.x];
}

// Owning device buffer.
template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  ~DeviceBuffer() {
    if (ptr) cudaFree(ptr);
  }
  cudaError_t upload(const T* host, std::size_t n) {
    cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&ptr), (n ? n : 1) * sizeof(T));
    if (e == cudaSuccess && n) e = cudaMemcpy(ptr, host, n * sizeof(T), cudaMemcpyHostToDevice);
    return e;
  }
  cudaError_t alloc(std::size_t n) { return cudaMalloc(reinterpret_cast<void**>(&ptr), (n ? n : 1) * sizeof(T)); }
};

}  // namespace

bool run_selection_cuda(const SelectionProblem& p, SelectionOutput out, float scale, std::string& backend,
                        std::string& why) {
  const HeadLayout& l = p.layout;
  const int hg = l.heads_per_group();
  if (hg > kMaxHeads) {
    why = "the device kernel admits at most 8 heads per group";
    return false;
  }
  const std::int64_t rows = p.batch.rows(), items = rows * l.groups;
  if (items == 0) return true;
  const SpanPack& pack = *p.spans;
  std::vector<int> row_seq(static_cast<std::size_t>(rows));
  for (int b = 0; b < p.batch.sequences(); ++b)
    for (int t = p.batch.cu_seqlens_q[b]; t < p.batch.cu_seqlens_q[b + 1]; ++t)
      row_seq[static_cast<std::size_t>(t)] = b;
  std::vector<long long> lens(static_cast<std::size_t>(items)), base(static_cast<std::size_t>(items));
  long long total = 0;
  for (std::int64_t i = 0; i < items; ++i) {
    lens[static_cast<std::size_t>(i)] = pack.selected(i / l.groups, static_cast<int>(i % l.groups));
    base[static_cast<std::size_t>(i)] = total;
    total += lens[static_cast<std::size_t>(i)] * hg;
  }
  std::vector<int2> spans(pack.spans.size());
  for (std::size_t i = 0; i < spans.size(); ++i) spans[i] = make_int2(pack.spans[i].begin, pack.spans[i].end);
  std::vector<long long> offsets(pack.offsets.begin(), pack.offsets.end());
  std::vector<int> cu_k(p.batch.cu_seqlens_k.begin(), p.batch.cu_seqlens_k.end());

  DeviceBuffer<int> d_seq, d_cuk;
  DeviceBuffer<long long> d_off, d_lens, d_base;
  DeviceBuffer<int2> d_spans;
  DeviceBuffer<unsigned short> d_q, d_k, d_v;
  DeviceBuffer<float> d_o, d_lse, d_s;
  const std::size_t nq = static_cast<std::size_t>(rows) * l.heads * l.dim;
  const std::size_t nk = static_cast<std::size_t>(p.batch.keys()) * l.groups * l.dim;
  const std::size_t nv = static_cast<std::size_t>(p.batch.keys()) * l.groups * l.dim_v;
  const std::size_t no = static_cast<std::size_t>(rows) * l.heads * l.dim_v,
                    nl = static_cast<std::size_t>(rows) * l.heads;
  cudaError_t e = cudaSuccess;
  auto step = [&](cudaError_t r) {
    if (e == cudaSuccess) e = r;
  };
  step(d_seq.upload(row_seq.data(), row_seq.size()));
  step(d_cuk.upload(cu_k.data(), cu_k.size()));
  step(d_off.upload(offsets.data(), offsets.size()));
  step(d_lens.upload(lens.data(), lens.size()));
  step(d_base.upload(base.data(), base.size()));
  step(d_spans.upload(spans.data(), spans.size()));
  step(d_q.upload(p.q.data(), nq));
  step(d_k.upload(p.k.data(), nk));
  step(d_v.upload(p.v.data(), nv));
  step(d_o.alloc(no));
  step(d_lse.alloc(nl));
  step(d_s.alloc(static_cast<std::size_t>(total)));
  if (e == cudaSuccess) {
    DeviceArgs a{l.heads,     l.groups,   hg,         l.dim,   l.dim_v, scale,   d_seq.ptr, d_cuk.ptr, d_off.ptr,
                 d_spans.ptr, d_lens.ptr, d_base.ptr, d_q.ptr, d_k.ptr, d_v.ptr, d_o.ptr,   d_lse.ptr, d_s.ptr};
    selection_kernel<<<static_cast<unsigned>(items), kThreads>>>(a);
    step(cudaGetLastError());
    step(cudaDeviceSynchronize());
  }
  std::vector<float> o(no), lse(nl);
  if (e == cudaSuccess) step(cudaMemcpy(o.data(), d_o.ptr, no * sizeof(float), cudaMemcpyDeviceToHost));
  if (e == cudaSuccess) step(cudaMemcpy(lse.data(), d_lse.ptr, nl * sizeof(float), cudaMemcpyDeviceToHost));
  if (e != cudaSuccess) {
    why = std::string("CUDA error: ") + cudaGetErrorString(e);
    return false;
  }
  std::copy(o.begin(), o.end(), out.o.begin());
  if (!out.lse.empty()) std::copy(lse.begin(), lse.end(), out.lse.begin());
  int dev = 0;
  cudaDeviceProp prop{};
  cudaGetDevice(&dev);
  cudaGetDeviceProperties(&prop, dev);
  backend = "cuda:sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
  return true;
}

}  // namespace popper::nsa::detail
