// dotkit::blas_dot — the same product through the system BLAS (cblas_sdot):
// dotkit's C++ entry to the vendor library, timed as the bench's wrapped tier.
// Throws std::invalid_argument when |x| != |y|.
#pragma once
#include <span>

namespace dotkit {

float blas_dot(std::span<const float> x, std::span<const float> y);

}  // namespace dotkit
