// dotkit::dot — a pairwise-summed FP32 dot product (contract: contracts/dot-v1.yaml).
//   dot(x, y) = P(t[0:n]), t_i = fl(x_i y_i), P(t[a:a+m]) = fl(P(t[a:a+h]) + P(t[a+h:a+m])), h = floor(m/2)
//   |dot(x, y) - x.y| <= gamma_{ceil(log2 n)+1} sum |x_i y_i|
// Throws std::invalid_argument when |x| != |y|, before reading either.
#pragma once
#include <span>

namespace dotkit {

float dot(std::span<const float> x, std::span<const float> y);

}  // namespace dotkit
