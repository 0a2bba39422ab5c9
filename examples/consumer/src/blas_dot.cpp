#include "dotkit/blas_dot.hpp"

#include <cblas.h>

#include <stdexcept>
#include <string>

namespace dotkit {

float blas_dot(std::span<const float> x, std::span<const float> y) {
  if (x.size() != y.size())
    throw std::invalid_argument("dotkit::blas_dot: lengths differ (" + std::to_string(x.size()) + " and " +
                                std::to_string(y.size()) + ")");
  return cblas_sdot(static_cast<blasint>(x.size()), x.data(), 1, y.data(), 1);
}

}  // namespace dotkit
