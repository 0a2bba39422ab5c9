// Without a CUDA build every fused device launcher declines (the CPU serves).
#include "impl/fused/cuda_launch.hpp"

#if !POPPER_HAVE_CUDA
namespace popper::fused::cuda_launch {
bool cross_entropy(const float*, const std::int64_t*, float*, float*, float*, std::int64_t, std::int64_t, std::int64_t,
                   float, bool) {
  return false;
}
bool rmsnorm_forward(const float*, const float*, float*, float*, std::int64_t, std::int64_t, float) { return false; }
bool swiglu_forward(const float*, const float*, float*, std::int64_t) { return false; }
bool swiglu_backward(const float*, float*, float*, std::int64_t) { return false; }
bool rope_forward(const float*, const float*, std::int64_t, float*, float*, std::int64_t, std::int64_t, std::int64_t,
                  std::int64_t, std::int64_t, std::int64_t) {
  return false;
}
bool attention_forward(const float*, const float*, const float*, float*, float*, std::int64_t, std::int64_t,
                       std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool, float) {
  return false;
}
}  // namespace popper::fused::cuda_launch
#endif
