// Falsifiers of contracts/dot-v1.yaml, bound to its ids. Each calls the real
// kernel (dotkit::dot) and asserts the contract's prediction; the scaffolded
// tests (popper_add_contract_tests) run them, and `popper audit --mutants`
// runs each under the mutants its contract entry declares.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "dotkit/dot.hpp"
#include "popper/binding.hpp"

namespace {

// gamma_k = k u / (1 - k u) for unit roundoff u.
double gamma(double k, double u) { return k * u / (1.0 - k * u); }

int ceil_log2(std::size_t n) {
  int d = 0;
  while ((std::size_t{1} << d) < n) ++d;
  return d;
}

POPPER_FALSIFIER("FALSIFY-DOT-001", [](const popper::Params& p) {
  const double u32 = std::ldexp(1.0, -24), u64 = std::ldexp(1.0, -53);
  std::mt19937_64 rng(p.seed());
  std::uniform_real_distribution<float> dist(0.0f, 1.0f);
  for (const auto size : p.integers("sizes")) {
    const auto n = static_cast<std::size_t>(size);
    std::vector<float> x(n), y(n);
    for (auto& v : x) v = dist(rng);
    for (auto& v : y) v = dist(rng);
    double exact = 0, s = 0;  // FP32 products are exact in FP64
    for (std::size_t i = 0; i < n; ++i) {
      exact += static_cast<double>(x[i]) * y[i];
      s += std::fabs(static_cast<double>(x[i]) * y[i]);
    }
    const double bound = (gamma(ceil_log2(n) + 1, u32) + gamma(static_cast<double>(n), u64)) * s;
    const double err = std::fabs(static_cast<double>(dotkit::dot(x, y)) - exact);
    EXPECT_LE(err, bound) << "n = " << n << ": error " << err << " exceeds the pairwise bound " << bound;
    std::printf("n = %zu: error / bound = %.3g\n", n, bound > 0 ? err / bound : 0.0);
  }
  popper::record_backend("cpu");
});

POPPER_FALSIFIER("FALSIFY-DOT-002", [](const popper::Params&) {
  const std::vector<std::pair<std::size_t, std::size_t>> lengths{{3, 2}, {0, 1}, {1000, 999}};
  for (const auto& [nx, ny] : lengths) {
    const std::vector<float> x(nx, 1.0f), y(ny, 1.0f);
    EXPECT_THROW(dotkit::dot(x, y), std::invalid_argument) << "lengths " << nx << " and " << ny;
  }
  popper::record_backend("cpu");
});

POPPER_HARNESS("KANI-DOT-001", [](const popper::Params& p) {
  const auto bound = static_cast<std::size_t>(p.bound());
  for (std::size_t n = 1; n <= bound; ++n) {
    const std::vector<float> ones(n, 1.0f);
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<float> e(n, 0.0f);
      e[i] = 1.0f;
      ASSERT_EQ(dotkit::dot(e, ones), 1.0f) << "n = " << n << ", term " << i << " not counted exactly once";
    }
  }
  popper::record_backend("cpu");
});

}  // namespace
