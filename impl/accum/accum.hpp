// Accumulation orders under contract (contracts/accum/accumulation-order-v1.yaml):
// the same FP32 terms t_0..t_{n-1} summed in five orders, u = 2^-24.
//
//   Sequential  s = (((t_0 + t_1) + t_2) + ... + t_{n-1})              |E| <= gamma_{n-1} sum|t|
//   Pairwise    S(t[0:n]) = S(t[0:h]) + S(t[h:n]), h = floor(n/2);
//               S of one term is the term                               |E| <= gamma_{ceil(log2 n)} sum|t|
//   Kahan       s, c = 0; for t: y = t - c; u = s + y; c = (u - s) - y; s = u
//                                                                       |E| <= (2u + O(n u^2)) sum|t|
//   Fp64        sum in binary64 (exact products for dot), rounded to FP32 once
//                                                                       |E| <= (u + gamma64_{n-1}(1+u)) sum|t|
//   Warp32      lane l = 0..31 sums t_l, t_{l+32}, t_{l+64}, ... sequentially, then
//               for off = 16, 8, 4, 2, 1: lane_l = lane_l + lane_{l+off} (l < off);
//               result lane_0 (the order of a 32-wide GPU warp, and of popper's
//               Vulkan and CUDA Q4_K kernels)                           |E| <= gamma_{ceil(n/32)+4} sum|t|
// gamma_k = k u / (1 - k u) (Higham 2002, ch. 3-4). For dot products the
// terms are the rounded products fl(a_i b_i), which adds one rounding:
// gamma_{k} -> gamma_{k+1}, 2u -> 3u, except Fp64 (products exact).
//
// Every order is deterministic: the same inputs give the same bits on every
// run and thread count (threads split rows of a GEMV, never a sum).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "impl/q4k/q4k.hpp"

namespace popper::accum {

enum class Order { Sequential, Pairwise, Kahan, Fp64, Warp32 };
inline constexpr Order kAllOrders[] = {Order::Sequential, Order::Pairwise, Order::Kahan, Order::Fp64, Order::Warp32};
const char* to_string(Order o);              // "sequential" "pairwise" "kahan" "fp64" "warp32"
Order parse_order(const std::string& name);  // throws InvalidArgument listing the names

float sum(std::span<const float> t, Order order);
// sum_i fl(a_i b_i) in `order` (Fp64: exact products). Sizes must match.
float dot(std::span<const float> a, std::span<const float> b, Order order);

// The factor f of |computed - exact| <= f * sum|t_i| (for dot: sum|a_i b_i|),
// for n terms; the O(n u^2) term of Kahan is majorized as 4 n u^2 (see the contract).
double sum_bound_factor(Order order, std::size_t n);
double dot_bound_factor(Order order, std::size_t n);
double gamma(double k, double u);  // k u / (1 - k u); infinity when k u >= 1

// y = W x for a Q4_K matrix, each row a dot product of the dequantized FP32
// weights (q4k::reference::dequantize_row) with x in `order`. Rows are split
// over `threads`; the order inside a row never depends on it.
void gemv_q4k(std::span<const q4k::Block> w, std::int64_t rows, std::int64_t cols, std::span<const float> x,
              std::span<float> y, Order order, int threads = 1);

}  // namespace popper::accum
