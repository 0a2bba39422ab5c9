// Host <-> device seam of the CUDA selection kernel (built only with CUDA).
#pragma once
#include <string>

#include "impl/nsa/nsa.hpp"

namespace popper::nsa::detail {

// Runs the device kernel; false (with `why`) when the shape is not admitted or
// any CUDA call fails, in which case nothing in `out` is kept.
bool run_selection_cuda(const SelectionProblem& p, SelectionOutput out, float scale, std::string& backend,
                        std::string& why);

}  // namespace popper::nsa::detail
