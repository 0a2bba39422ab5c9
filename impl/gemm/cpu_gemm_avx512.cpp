// AVX-512F micro-kernels (compiled with AVX-512 flags; dispatched only when
// the CPU reports avx512f). FP32: 8 x 32 tile (16 zmm accumulators of 32),
// FP64: 8 x 16. This machine (Zen 3) cannot execute them: they are built and
// linked, never run here.
#include <immintrin.h>

#include <cstdint>

#include "gemm/cpu_gemm_kernels.hpp"
#include "popper/mutant.hpp"

namespace popper::gemm::cpu::detail {
namespace {

struct VecF32 {
  using reg = __m512;
  static constexpr const char* tail_mutant = "gemm-avx512-tail-mask";
  static constexpr int width = 16;
  static reg zero() { return _mm512_setzero_ps(); }
  static reg load(const float* p) { return _mm512_load_ps(p); }
  static reg loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, reg v) { _mm512_storeu_ps(p, v); }
  static reg bcast(const float* p) { return _mm512_set1_ps(*p); }
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static reg set1(float x) { return _mm512_set1_ps(x); }
};

struct VecF64 {
  using reg = __m512d;
  static constexpr const char* tail_mutant = "gemm-avx512-tail-mask";
  static constexpr int width = 8;
  static reg zero() { return _mm512_setzero_pd(); }
  static reg load(const double* p) { return _mm512_load_pd(p); }
  static reg loadu(const double* p) { return _mm512_loadu_pd(p); }
  static void storeu(double* p, reg v) { _mm512_storeu_pd(p, v); }
  static reg bcast(const double* p) { return _mm512_set1_pd(*p); }
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_pd(a, b, c); }
  static reg mul(reg a, reg b) { return _mm512_mul_pd(a, b); }
  static reg set1(double x) { return _mm512_set1_pd(x); }
};

#include "gemm/cpu_gemm_ukernel.inl"

}  // namespace

KernelSpec<float> avx512_f32() { return {8, 32, 128, 384, 4096, &micro_kernel<float, VecF32, 8, 2>}; }
KernelSpec<double> avx512_f64() { return {8, 16, 64, 384, 4096, &micro_kernel<double, VecF64, 8, 2>}; }

}  // namespace popper::gemm::cpu::detail
