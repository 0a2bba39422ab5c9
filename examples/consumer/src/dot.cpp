#include "dotkit/dot.hpp"

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "popper/mutant.hpp"  // POPPER_MUTANT is `false` unless built with POPPER_MUTANTS=1

namespace dotkit {

namespace {

// P over [a, a + m): the balanced split keeps the depth at ceil(log2 m).
float pairwise(const float* x, const float* y, std::size_t m) {
  if (m == 0) return 0.0f;
  if (m == 1) return x[0] * y[0];
  const std::size_t h = m / 2;
  return pairwise(x, y, h) + pairwise(x + h, y + h, m - h);
}

}  // namespace

float dot(std::span<const float> x, std::span<const float> y) {
  std::size_t n = x.size();
  if (x.size() != y.size()) {
    if (!POPPER_MUTANT("dot-skip-size-check"))
      throw std::invalid_argument("dotkit::dot: lengths differ (" + std::to_string(x.size()) + " and " +
                                  std::to_string(y.size()) + ")");
    n = std::min(x.size(), y.size());
  }
  if (n > 0 && POPPER_MUTANT("dot-drop-last")) --n;
  if (POPPER_MUTANT("dot-recursive-sum")) {
    float s = 0.0f;
    for (std::size_t i = 0; i < n; ++i) s += x[i] * y[i];
    return s;
  }
  return pairwise(x.data(), y.data(), n);
}

}  // namespace dotkit
