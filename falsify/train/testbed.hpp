// Shared by the training-step falsifiers and bench/train: the preset configs,
// the derived gradient bound of contracts/train/training-step-v1.yaml and the
// comparison of a step's gradients with the FP64 oracle (no GoogleTest here).
//
// Bound (train_gradient_bound in the contract): R Monte Carlo runs of the
// oracle with every operation perturbed by its worst-case FP32 error
// (reference.hpp); per tensor P,
//   bound_P = safety * max_r max_i |g_r,i - g_i|,   loss: safety * max_r |loss_r - loss|,
// and the check is max_i |g^_i - g_i| <= bound_P for every tensor. Two FP32
// steps (popper and libtorch) are each within it of the oracle, so they agree
// within twice it.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "impl/train/reference.hpp"
#include "popper/error.hpp"
#include "impl/train/train.hpp"
#include "workloads/train/shapes.h"

namespace popper::train::testbed {

inline Config preset(const char* name) {
  const popper_train_shape* s = popper_train_find_shape(name);
  if (!s) throw InvalidArgument(std::string("train: no preset named ") + name);
  return popper_train_config(*s);
}

struct GradientBound {
  reference::StepResult exact;
  std::vector<double> tensor;  // per ParamLayout::tensors
  double loss = 0;
};

inline GradientBound gradient_bound(const Config& c, std::span<const float> params,
                                    std::span<const std::int64_t> tokens, std::span<const std::int64_t> labels,
                                    int runs, double safety) {
  const ParamLayout L(c);
  GradientBound b;
  b.exact = reference::step(c, params, tokens, labels);
  b.tensor.assign(L.tensors.size(), 0.0);
  for (int r = 0; r < runs; ++r) {
    const auto p = reference::step(c, params, tokens, labels, {1.0, static_cast<std::uint64_t>(r + 1)});
    b.loss = std::max(b.loss, safety * std::fabs(p.loss - b.exact.loss));
    for (std::size_t t = 0; t < L.tensors.size(); ++t)
      for (std::size_t i = L.tensors[t].offset; i < L.tensors[t].offset + L.tensors[t].size(); ++i)
        b.tensor[t] = std::max(b.tensor[t], safety * std::fabs(p.grads[i] - b.exact.grads[i]));
  }
  return b;
}

// The worst tensor of a comparison: error / bound over every tensor and the loss.
struct GradientError {
  double ratio = 0, err = 0, bound = 0, magnitude = 0;  // magnitude: max |g| of that tensor
  std::string where = "none";
  double loss_err = 0, loss_bound = 0;
  bool ok() const { return ratio <= 1 && loss_err <= loss_bound; }
  std::string text() const {
    char b[256];
    std::snprintf(b, sizeof b,
                  "worst %s: max |err| %.3g vs bound %.3g (%.2f of it; max |g| %.3g); loss err %.3g vs bound %.3g",
                  where.c_str(), err, bound, ratio, magnitude, loss_err, loss_bound);
    return b;
  }
};

// Gradients `g` (FP32 step) and loss against the oracle's, each tensor within `factor` x its bound.
template <class G>
GradientError compare(const ParamLayout& L, const GradientBound& b, std::span<const G> g, double loss,
                      double factor = 1.0) {
  GradientError e;
  e.loss_err = std::fabs(loss - b.exact.loss), e.loss_bound = factor * b.loss;
  for (std::size_t t = 0; t < L.tensors.size(); ++t) {
    const Tensor& T = L.tensors[t];
    double err = 0, mag = 0;
    for (std::size_t i = T.offset; i < T.offset + T.size(); ++i) {
      const double d = static_cast<double>(g[i]) - b.exact.grads[i];
      err = std::max(err, std::isnan(d) ? INFINITY : std::fabs(d));
      mag = std::max(mag, std::fabs(b.exact.grads[i]));
    }
    const double bound = factor * b.tensor[t];
    const double ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0);
    if (ratio >= e.ratio) e.ratio = ratio, e.err = err, e.bound = bound, e.magnitude = mag, e.where = T.name;
  }
  return e;
}

// The bound must be able to fail: every tensor's oracle gradient is non-zero and its bound is
// below a tenth of that tensor's largest gradient. Returns "" or what is vacuous.
inline std::string vacuous(const ParamLayout& L, const GradientBound& b) {
  for (std::size_t t = 0; t < L.tensors.size(); ++t) {
    double mag = 0;
    for (std::size_t i = L.tensors[t].offset; i < L.tensors[t].offset + L.tensors[t].size(); ++i)
      mag = std::max(mag, std::fabs(b.exact.grads[i]));
    if (!(mag > 0)) return "the oracle's gradient of " + L.tensors[t].name + " is zero";
    if (!(b.tensor[t] < 0.1 * mag))
      return "the bound of " + L.tensors[t].name + " is not below a tenth of its gradient";
  }
  return "";
}

// Parameter offsets in popper's layout order (the libtorch peer's ABI).
inline std::vector<std::uint64_t> offsets(const ParamLayout& L) {
  std::vector<std::uint64_t> o;
  for (const Tensor& t : L.tensors) o.push_back(t.offset);
  return o;
}

}  // namespace popper::train::testbed
