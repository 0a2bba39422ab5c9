// The Q4_K oracle (contracts/q4k/q4k-gemv-v1.yaml): plain loops straight from the
// format definition in q4k.hpp.
//
//   dequantize_row:  w_i = (d * sc_j) * q_i - (dmin * m_j)      FP32, no FMA (bit-exact target)
//   gemv:            y_r = sum_i w_{r,i} x_i                    FP64 accumulation, sequential in i
//   quantize_row:    per super-block, choose d, dmin (FP16), sc_j, m_j (6 bit) and q_i (4 bit)
//                    minimizing sum_i (x_i - w_i)^2 by the search described in reference.cpp
#pragma once
#include <cstdint>
#include <span>

#include "impl/q4k/q4k.hpp"

namespace popper::q4k::reference {

// x.size() % 256 == 0; out holds x.size() / 256 blocks. Throws InvalidArgument
// naming the index of the first non-finite input.
void quantize_row(std::span<const float> x, std::span<Block> out);
// out.size() % 256 == 0; blocks holds out.size() / 256 blocks.
void dequantize_row(std::span<const Block> blocks, std::span<float> out);

// rows x cols matrix from row-major floats (x.size() >= rows * cols).
Matrix quantize_matrix(std::int64_t rows, std::int64_t cols, std::span<const float> x);

// y = W x with every product and sum in FP64 over the dequantized FP32 weights.
void gemv(std::span<const Block> w, std::int64_t rows, std::int64_t cols, std::span<const float> x,
          std::span<double> y);
// sum_i |w_{r,i}| |x_i| per row, in FP64: the scale of every error bound.
void gemv_abs(std::span<const Block> w, std::int64_t rows, std::int64_t cols, std::span<const float> x,
              std::span<double> y);

}  // namespace popper::q4k::reference
