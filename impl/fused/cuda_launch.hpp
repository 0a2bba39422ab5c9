// Internal: the device launchers of the fused kernels (cuda/fused_kernels.cu
// when CUDA is compiled, cuda_decline.cpp otherwise). Host pointers in and
// out; each copies to the device, runs, copies back, and returns false on
// any CUDA error (the caller then declines to the CPU).
#pragma once
#include <cstdint>

namespace popper::fused::cuda_launch {

bool cross_entropy(const float* logits, const std::int64_t* labels, float* loss, float* lse, float* grad,
                   std::int64_t rows, std::int64_t vocab, std::int64_t ignore_index, float scale, bool no_max);
bool rmsnorm_forward(const float* x, const float* w, float* y, float* inv_rms, std::int64_t rows, std::int64_t hidden,
                     float eps);
bool swiglu_forward(const float* g, const float* u, float* h, std::int64_t n);
bool swiglu_backward(const float* dh, float* g, float* u, std::int64_t n);
bool rope_forward(const float* cos_table, const float* sin_table, std::int64_t positions, float* q, float* k,
                  std::int64_t batch, std::int64_t seq, std::int64_t q_heads, std::int64_t kv_heads,
                  std::int64_t head_dim, std::int64_t pos_offset);
bool attention_forward(const float* q, const float* k, const float* v, float* o, float* lse, std::int64_t batch,
                       std::int64_t q_len, std::int64_t kv_len, std::int64_t q_heads, std::int64_t kv_heads,
                       std::int64_t head_dim, bool causal, float scale);

}  // namespace popper::fused::cuda_launch
