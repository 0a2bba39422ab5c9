// The oracle of contracts/train/training-step-v1.yaml: the same model, loss,
// gradient and AdamW update in plain loops with FP64 arithmetic on the FP32
// parameters, independent of every fast path (no GEMM library, no fused
// kernel). Outputs are FP64 so a test sees the FP32 step's own error.
//
// The gradient bound of the contract is derived from this oracle by Monte
// Carlo arithmetic (Parker 1997): with Perturbation::scale = 1, the output of
// every operation is perturbed by its worst-case FP32 forward error, drawn
// with a random sign per element,
//   y_i <- y_i + r_i * bound_i,   r_i uniform in [-1, 1],
//   bound_i = gamma(k) (|A||B|)_i for a k-term product (Higham 3.5),
//             gamma(k) |y_i| for a k-term sum of positives (norms, softmax sums),
//             c u |y_i| for an element-wise function of a few roundings,
// u = 2^-24, gamma(k) = k u / (1 - k u), and the network's own sensitivity
// carries these to the loss and the gradients. The spread of R perturbed runs
// around the exact one, times a safety factor, is the bound (per tensor: the
// largest absolute deviation). Perturbation::scale = 0 is the exact oracle.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "impl/train/train.hpp"

namespace popper::train::reference {

struct Perturbation {
  double scale = 0;        // 0: exact; 1: every operation's worst-case FP32 error, random signs
  std::uint64_t seed = 0;  // of the signs
};

struct StepResult {
  double loss = 0;
  std::vector<double> grads;  // ParamLayout's layout (padding zero)
};

StepResult step(const Config& c, std::span<const float> params, std::span<const std::int64_t> tokens,
                std::span<const std::int64_t> labels, const Perturbation& p = {});

// One AdamW update in FP64 (train.hpp's formula) of FP32 state, t >= 1.
void adamw(const ParamLayout& layout, const AdamWConfig& a, std::int64_t t, std::span<const float> params,
           std::span<const float> grads, std::span<const float> m, std::span<const float> v, std::vector<double>& p_out,
           std::vector<double>& m_out, std::vector<double>& v_out);

}  // namespace popper::train::reference
