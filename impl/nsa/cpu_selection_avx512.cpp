// AVX-512 F/BW/DQ/VL path of the hand kernel without BF16 dot products: BF16
// widened to FP32 and FMA (the body is cpu_selection_avx512.inl). Called only
// after common/cpu_features.hpp reports AVX-512.
// GCC 12 reports its own _mm512_undefined_* idiom (self-initialised __Y) inside
// the AVX-512 intrinsic headers as uninitialised once inlined; silence it here,
// before the first inclusion of immintrin.h.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "impl/nsa/cpu_selection_kernels.hpp"

#define POPPER_NSA_AVX512_NS avx512_impl
namespace popper::nsa::detail::avx512_impl {
constexpr bool kBf16Dot = false;
}
#include "impl/nsa/cpu_selection_avx512.inl"

namespace popper::nsa::detail {
void row_avx512(const RowTask& t, const KernelParams& kp, float* scratch) { avx512_impl::row(t, kp, scratch); }
void softmax_rows_avx512(float* s, int rows, std::int64_t len, std::int64_t ld, float* lse) {
  avx512_impl::softmax(s, rows, len, ld, lse);
}
}  // namespace popper::nsa::detail
