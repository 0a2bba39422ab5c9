// Device tiers of the Q4_K GEMV (contracts/q4k/q4k-gemv-v1.yaml), declared
// whether or not Vulkan / CUDA are compiled in.
//
//   y_r = sum_i fl(w_{r,i} * x_i)  in FP32, summed in the 32-lane strided
//         order (accum::Order::Warp32; contracts/accum/accumulation-order-v1.yaml),
//   w = (d*sc_j)*q_i - dmin*m_j as in reference::dequantize_row, no FMA.
//
// Decline contract: without a usable device (not compiled, no loader/driver,
// no device, a kernel the device cannot build) the entry serves the call with
// the hand CPU kernel (cpu::gemv with `fallback`) and says so in the returned
// Execution; it never throws for that. Sizes are checked first on every path.
#pragma once
#include <cstdint>
#include <memory>
#include <span>

#include "impl/common/execution.hpp"
#include "impl/q4k/cpu_q4k.hpp"
#include "impl/q4k/q4k.hpp"

namespace popper::q4k {

// Weights resident on the Vulkan device (uploaded once). Holds a view of the
// host blocks for the CPU fallback: the caller keeps them alive.
class VulkanMatrix {
 public:
  VulkanMatrix(std::span<const Block> w, std::int64_t rows, std::int64_t cols);
  ~VulkanMatrix();
  VulkanMatrix(const VulkanMatrix&) = delete;
  VulkanMatrix& operator=(const VulkanMatrix&) = delete;

  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  // Non-empty when construction declined (then every gemv runs on the CPU).
  const std::string& decline_reason() const { return decline_; }

  // y = W x. `device_seconds`, when given, receives the dispatch's device time
  // (0 on the CPU fallback).
  device::Execution gemv(std::span<const float> x, std::span<float> y, const cpu::CpuOptions& fallback = {},
                         double* device_seconds = nullptr);

  struct State;

 private:
  std::span<const Block> w_;
  std::int64_t rows_, cols_;
  std::string decline_;
  std::unique_ptr<State> state_;
};

// One-shot: uploads W, runs, downloads y.
device::Execution gemv_vulkan(std::span<const Block> w, std::int64_t rows, std::int64_t cols, std::span<const float> x,
                              std::span<float> y, const cpu::CpuOptions& fallback = {});

// CUDA: one warp per row, the same order (compiled where nvcc exists).
device::Execution gemv_cuda(std::span<const Block> w, std::int64_t rows, std::int64_t cols, std::span<const float> x,
                            std::span<float> y, const cpu::CpuOptions& fallback = {});

}  // namespace popper::q4k
