// Drift against depth (contracts/decode/multi-backend-parity-v1.yaml, equation
// accumulation_drift): the seed's hypothesis is that per-kernel rounding of
// about 0.1% compounds, (1.001)^(10 L) for L layers of about 10 kernels, to
// 32% divergence and cosine ~ -0.005 at 28 layers. Measured here: for each
// series (an FP32 accumulation order of the plain forward, or a backend such
// as cpu-simd, whose GEMV rounds activations to 14 bits), the logits of the
// model truncated after layer L (L = 1 .. layers) against the same
// truncation in FP64.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "impl/accum/accum.hpp"
#include "impl/decode/model.hpp"

namespace popper::decode {

struct DriftPoint {
  std::string series;  // an accum order name or a backend name
  int depth = 0;       // layers
  double cosine = 0;   // against FP64
  double rel_l2 = 0;   // |y32 - y64| / |y64|
};

// The hypothesis' relative error after `depth` layers: 1.001^(10 depth) - 1.
double hypothesis_rel(int depth);

// The series `popper parity --drift` and FALSIFY-MBP-006 measure: every
// accumulation order, then cpu-simd.
std::vector<std::string> drift_series();

// The depths a whole-model backend (llama.cpp) is measured at: 1, 2, 4, ...
// below `layers`, and `layers` (each depth is a model file of its own).
std::vector<int> drift_depths(int layers);

// Throws InvalidArgument naming the accumulation orders and backends when a
// series is neither.
void check_drift_series(const std::vector<std::string>& series);

// One FP64 forward and one per series (each giving every depth; a
// whole-model backend the drift_depths). A series is an accum::Order name
// (the plain FP32 forward in that order) or a backend name of forward.hpp;
// throws InvalidArgument for an unavailable backend.
std::vector<DriftPoint> measure_drift(const Model& m, std::span<const std::int32_t> tokens,
                                      const std::vector<std::string>& series, int threads = 1);

// Growth of rel_l2 with depth for one series: the least-squares exponent p
// of rel_l2 ~ L^p (p = 0.5 a random walk, 1 linear), and the growth from the
// first to the deepest layer beside the hypothesis' (1.001^(10 L) - 1, about
// L-fold from L = 1: compounding at 0.1% per kernel).
struct DriftFit {
  double power = 0;
  double growth = 0, hypothesis_growth = 0;  // rel(L_max) / rel(1)
  double rel = 0, hypothesis_rel = 0;        // at L_max
};
DriftFit fit_drift(std::span<const DriftPoint> points, const std::string& series);

std::string drift_csv(std::span<const DriftPoint> points);
// log-scale plot of rel_l2 against depth, one line per series, and the
// hypothesis' curve (1.001)^(10 L) - 1.
std::string drift_svg(std::span<const DriftPoint> points, const std::string& title);

}  // namespace popper::decode
