// AVX2 + FMA micro-kernels (compiled with -mavx2 -mfma; dispatched only after
// a run-time CPU check). FP32: 6 x 16 tile (12 ymm accumulators), FP64: 6 x 8.
// Edge columns through a tail mask (vmaskmov), edge rows not stored.
#include <immintrin.h>

#include <cstdint>

#include "impl/gemm/cpu_gemm_kernels.hpp"

namespace popper::gemm::cpu::detail {
namespace {

bool edge_tail_mutant() { return mutant_avx2_tail_mask(); }
bool row_remainder_mutant() { return mutant_row_k_remainder(); }

struct VecF32 {
  using reg = __m256;
  using mask = __m256i;
  static constexpr int width = 8;
  static constexpr int prefetch_b_steps = 0;
  static reg zero() { return _mm256_setzero_ps(); }
  static reg loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, reg v) { _mm256_storeu_ps(p, v); }
  static reg bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  static reg set1(float x) { return _mm256_set1_ps(x); }
  static mask tail(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static reg maskload(const float* p, mask m) { return _mm256_maskload_ps(p, m); }
  static void maskstore(float* p, mask m, reg v) { _mm256_maskstore_ps(p, m, v); }
};

struct VecF64 {
  using reg = __m256d;
  using mask = __m256i;
  static constexpr int width = 4;
  static constexpr int prefetch_b_steps = 0;
  static reg zero() { return _mm256_setzero_pd(); }
  static reg loadu(const double* p) { return _mm256_loadu_pd(p); }
  static void storeu(double* p, reg v) { _mm256_storeu_pd(p, v); }
  static reg bcast(const double* p) { return _mm256_broadcast_sd(p); }
  static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_pd(a, b, c); }
  static reg mul(reg a, reg b) { return _mm256_mul_pd(a, b); }
  static reg set1(double x) { return _mm256_set1_pd(x); }
  static mask tail(int n) { return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3)); }
  static reg maskload(const double* p, mask m) { return _mm256_maskload_pd(p, m); }
  static void maskstore(double* p, mask m, reg v) { _mm256_maskstore_pd(p, m, v); }
};

#include "impl/gemm/cpu_gemm_ukernel.inl"

}  // namespace

KernelSpec<float> avx2_f32() {
  return {6,
          16,
          &micro_kernel_packed<float, VecF32, 6, 2>,
          &micro_kernel_direct<float, VecF32, 6, 2>,
          4,
          &micro_kernel_direct<float, VecF32, 4, 2>,
          &row_kernel<float, VecF32>,
          "avx2",
          8};
}
KernelSpec<double> avx2_f64() {
  return {6,
          8,
          &micro_kernel_packed<double, VecF64, 6, 2>,
          &micro_kernel_direct<double, VecF64, 6, 2>,
          4,
          &micro_kernel_direct<double, VecF64, 4, 2>,
          &row_kernel<double, VecF64>,
          "avx2",
          4};
}

}  // namespace popper::gemm::cpu::detail
