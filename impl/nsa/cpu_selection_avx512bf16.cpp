// AVX512-BF16 path of the hand kernel: VDPBF16PS on BF16 pairs (exact pair
// products, FP32 sums; the body is cpu_selection_avx512.inl). Called only
// after common/cpu_features.hpp reports AVX512-BF16.
// GCC 12 reports its own _mm512_undefined_* idiom (self-initialised __Y) inside
// the AVX-512 intrinsic headers as uninitialised once inlined; silence it here,
// before the first inclusion of immintrin.h.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "impl/nsa/cpu_selection_kernels.hpp"

#define POPPER_NSA_AVX512_NS avx512bf16_impl
namespace popper::nsa::detail::avx512bf16_impl {
constexpr bool kBf16Dot = true;
}
#include "impl/nsa/cpu_selection_avx512.inl"

namespace popper::nsa::detail {
void row_avx512bf16(const RowTask& t, const KernelParams& kp, float* scratch) { avx512bf16_impl::row(t, kp, scratch); }
}  // namespace popper::nsa::detail
