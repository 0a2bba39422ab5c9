// AVX2 + FMA micro-kernels (compiled with -mavx2 -mfma; dispatched only after
// a run-time CPU check). FP32: 6 x 16 tile (12 ymm accumulators), FP64: 6 x 8.
// Block sizes follow the Zen 2/3 values used by BLIS (MC, KC, NC).
#include <immintrin.h>

#include <cstdint>

#include "gemm/cpu_gemm_kernels.hpp"
#include "popper/mutant.hpp"

namespace popper::gemm::cpu::detail {
namespace {

struct VecF32 {
  using reg = __m256;
  static constexpr const char* tail_mutant = "gemm-avx2-tail-mask";
  static constexpr int width = 8;
  static reg zero() { return _mm256_setzero_ps(); }
  static reg load(const float* p) { return _mm256_load_ps(p); }
  static reg loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, reg v) { _mm256_storeu_ps(p, v); }
  static reg bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  static reg set1(float x) { return _mm256_set1_ps(x); }
};

struct VecF64 {
  using reg = __m256d;
  static constexpr const char* tail_mutant = "gemm-avx2-tail-mask";
  static constexpr int width = 4;
  static reg zero() { return _mm256_setzero_pd(); }
  static reg load(const double* p) { return _mm256_load_pd(p); }
  static reg loadu(const double* p) { return _mm256_loadu_pd(p); }
  static void storeu(double* p, reg v) { _mm256_storeu_pd(p, v); }
  static reg bcast(const double* p) { return _mm256_broadcast_sd(p); }
  static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_pd(a, b, c); }
  static reg mul(reg a, reg b) { return _mm256_mul_pd(a, b); }
  static reg set1(double x) { return _mm256_set1_pd(x); }
};

#include "gemm/cpu_gemm_ukernel.inl"

}  // namespace

KernelSpec<float> avx2_f32() { return {6, 16, 144, 256, 4080, &micro_kernel<float, VecF32, 6, 2>}; }
KernelSpec<double> avx2_f64() { return {6, 8, 72, 256, 4080, &micro_kernel<double, VecF64, 6, 2>}; }

}  // namespace popper::gemm::cpu::detail
