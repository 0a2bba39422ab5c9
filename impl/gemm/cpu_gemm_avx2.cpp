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
bool stream_mutant() { return mutant_stream_c_unscaled(); }
bool probe_edge_mutant() { return mutant_probe_skips_edge_tiles(); }
bool partial_group_mutant() { return mutant_pack_a_partial_group(); }
bool pack_tail_mutant() { return mutant_avx2_pack_b_trans_tail(); }

struct VecF32 {
  using reg = __m256;
  using mask = __m256i;
  static constexpr int width = 8;
  static constexpr int prefetch_b_steps = 0;
  static reg zero() { return _mm256_setzero_ps(); }
  static reg loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, reg v) { _mm256_storeu_ps(p, v); }
  static void stream(float* p, reg v) { _mm256_stream_ps(p, v); }
  static reg bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  static reg set1(float x) { return _mm256_set1_ps(x); }
  static mask tail(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static reg maskload(const float* p, mask m) { return _mm256_maskload_ps(p, m); }
  static void maskstore(float* p, mask m, reg v) { _mm256_maskstore_ps(p, m, v); }
  // 8 x 8 in place: 4 x 4 blocks within each 128-bit lane, then the lanes.
  static void transpose(reg (&r)[8]) {
    reg t[8];
    for (int i = 0; i < 8; i += 2)
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]), t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    for (int g = 0; g < 8; g += 4) {
      const __m256d a = _mm256_castps_pd(t[g]), b = _mm256_castps_pd(t[g + 1]);
      const __m256d c = _mm256_castps_pd(t[g + 2]), d = _mm256_castps_pd(t[g + 3]);
      r[g] = _mm256_castpd_ps(_mm256_unpacklo_pd(a, c)), r[g + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(a, c));
      r[g + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(b, d)), r[g + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(b, d));
    }
    // r[4g + c], lane L: column 4L + c of rows 4g .. 4g+3.
    for (int c = 0; c < 4; ++c) {
      const reg lo = r[c], hi = r[4 + c];
      r[c] = _mm256_permute2f128_ps(lo, hi, 0x20), r[4 + c] = _mm256_permute2f128_ps(lo, hi, 0x31);
    }
  }
};

struct VecF64 {
  using reg = __m256d;
  using mask = __m256i;
  static constexpr int width = 4;
  static constexpr int prefetch_b_steps = 0;
  static reg zero() { return _mm256_setzero_pd(); }
  static reg loadu(const double* p) { return _mm256_loadu_pd(p); }
  static void storeu(double* p, reg v) { _mm256_storeu_pd(p, v); }
  static void stream(double* p, reg v) { _mm256_stream_pd(p, v); }
  static reg bcast(const double* p) { return _mm256_broadcast_sd(p); }
  static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_pd(a, b, c); }
  static reg mul(reg a, reg b) { return _mm256_mul_pd(a, b); }
  static reg set1(double x) { return _mm256_set1_pd(x); }
  static mask tail(int n) { return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3)); }
  static reg maskload(const double* p, mask m) { return _mm256_maskload_pd(p, m); }
  static void maskstore(double* p, mask m, reg v) { _mm256_maskstore_pd(p, m, v); }
  // 4 x 4 in place: 2 x 2 blocks within each 128-bit lane, then the lanes.
  static void transpose(reg (&r)[4]) {
    const reg t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
    const reg t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
    r[0] = _mm256_permute2f128_pd(t0, t2, 0x20), r[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
    r[1] = _mm256_permute2f128_pd(t1, t3, 0x20), r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
  }
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
          8,
          &pack_transposed<float, VecF32, 16>,
          &pack_transposed<float, VecF32, 6>};
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
          4,
          &pack_transposed<double, VecF64, 8>,
          &pack_transposed<double, VecF64, 6>};
}

}  // namespace popper::gemm::cpu::detail
