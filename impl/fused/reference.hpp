// The oracle of the fused kernels (contracts/fused/fused-kernels-v1.yaml): the
// separate computation, step by step, in plain loops with FP64 arithmetic on
// the FP32 inputs. Outputs are FP64 so a test sees the kernels' own error.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "impl/fused/fused.hpp"

namespace popper::fused::reference {

// loss, lse [rows]; grad [rows, V]. Ignored rows: zeros.
void cross_entropy(const CrossEntropyShape& s, std::span<const float> logits, std::span<const std::int64_t> labels,
                   std::span<double> loss, std::span<double> lse, std::span<double> grad);

void rmsnorm_forward(const RmsNormShape& s, std::span<const float> x, std::span<const float> w, std::span<double> y,
                     std::span<double> inv_rms, std::span<double> normed);
void rmsnorm_backward(const RmsNormShape& s, std::span<const float> x, std::span<const float> w,
                      std::span<const float> dy, std::span<double> d_input, std::span<double> d_weight);

void swiglu_forward(std::span<const float> g, std::span<const float> u, std::span<double> h);
void swiglu_backward(std::span<const float> dh, std::span<const float> g, std::span<const float> u,
                     std::span<double> d_gate, std::span<double> d_up);

// Rotation of x [B, S, heads, D] by the exact FP64 angle (pos_offset + s) base^(-2j/D).
void rope(std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t head_dim, std::int64_t pos_offset,
          double base, bool inverse, std::span<const float> x, std::span<double> y);

// O, lse; probs [B, Hq, Sq, Skv] optional (empty = not returned).
void attention_forward(const AttentionShape& s, std::span<const float> q, std::span<const float> k,
                       std::span<const float> v, std::span<double> o, std::span<double> lse, std::span<double> probs);
void attention_backward(const AttentionShape& s, std::span<const float> q, std::span<const float> k,
                        std::span<const float> v, std::span<const float> d_o, std::span<double> dq,
                        std::span<double> dk, std::span<double> dv);

}  // namespace popper::fused::reference
