// AVX-512F micro-kernels (compiled with AVX-512 flags; dispatched only when
// the CPU reports AVX-512 F/BW/DQ/VL). 24 zmm accumulators, two vectors of
// B per k step and one broadcast per row, so each k step issues 24 FMAs
// against 2 loads + 12 broadcasts (the FMA pipes, not the load ports, bound it):
//   FP32: 12 x 32 tile,  FP64: 12 x 16 tile.
// Edge columns through a mask register, edge rows not stored.
#include <immintrin.h>

#include <cstdint>

#include "impl/gemm/cpu_gemm_kernels.hpp"

namespace popper::gemm::cpu::detail {
namespace {

bool edge_tail_mutant() { return mutant_avx512_tail_mask(); }
bool row_remainder_mutant() { return mutant_row_k_remainder(); }

struct VecF32 {
  using reg = __m512;
  using mask = __mmask16;
  static constexpr int width = 16;
  static constexpr int prefetch_b_steps = 32;
  static reg zero() { return _mm512_setzero_ps(); }
  static reg loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, reg v) { _mm512_storeu_ps(p, v); }
  static reg bcast(const float* p) { return _mm512_set1_ps(*p); }
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static reg set1(float x) { return _mm512_set1_ps(x); }
  static mask tail(int n) { return static_cast<mask>((1u << n) - 1u); }
  static reg maskload(const float* p, mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void maskstore(float* p, mask m, reg v) { _mm512_mask_storeu_ps(p, m, v); }
};

struct VecF64 {
  using reg = __m512d;
  using mask = __mmask8;
  static constexpr int width = 8;
  static constexpr int prefetch_b_steps = 32;
  static reg zero() { return _mm512_setzero_pd(); }
  static reg loadu(const double* p) { return _mm512_loadu_pd(p); }
  static void storeu(double* p, reg v) { _mm512_storeu_pd(p, v); }
  static reg bcast(const double* p) { return _mm512_set1_pd(*p); }
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_pd(a, b, c); }
  static reg mul(reg a, reg b) { return _mm512_mul_pd(a, b); }
  static reg set1(double x) { return _mm512_set1_pd(x); }
  static mask tail(int n) { return static_cast<mask>((1u << n) - 1u); }
  static reg maskload(const double* p, mask m) { return _mm512_maskz_loadu_pd(m, p); }
  static void maskstore(double* p, mask m, reg v) { _mm512_mask_storeu_pd(p, m, v); }
};

#include "impl/gemm/cpu_gemm_ukernel.inl"

}  // namespace

KernelSpec<float> avx512_f32() {
  return {12,
          32,
          &micro_kernel_packed<float, VecF32, 12, 2>,
          &micro_kernel_direct<float, VecF32, 12, 2>,
          8,
          &micro_kernel_direct<float, VecF32, 8, 2>,
          &row_kernel<float, VecF32>,
          "avx512",
          16};
}
KernelSpec<double> avx512_f64() {
  return {12,
          16,
          &micro_kernel_packed<double, VecF64, 12, 2>,
          &micro_kernel_direct<double, VecF64, 12, 2>,
          8,
          &micro_kernel_direct<double, VecF64, 8, 2>,
          &row_kernel<double, VecF64>,
          "avx512",
          8};
}

}  // namespace popper::gemm::cpu::detail
