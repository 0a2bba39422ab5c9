// AVX-512F micro-kernels (compiled with AVX-512 flags; dispatched only when
// the CPU reports AVX-512 F/BW/DQ/VL). 24 zmm accumulators, two vectors of
// B per k step and one broadcast per row, so each k step issues 24 FMAs
// against 2 loads + 12 broadcasts (the FMA pipes, not the load ports, bound it):
//   FP32: 12 x 32 tile,  FP64: 12 x 16 tile.
// Edge columns through a mask register, edge rows not stored.
// GCC 12 warns falsely about the undefined pass-through operand inside the
// AVX-512 shuffles of the transposed pack (_mm512_undefined_pd).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "impl/gemm/cpu_gemm_kernels.hpp"

namespace popper::gemm::cpu::detail {
namespace {

bool edge_tail_mutant() { return mutant_avx512_tail_mask(); }
bool row_remainder_mutant() { return mutant_row_k_remainder(); }
bool stream_mutant() { return mutant_stream_c_unscaled(); }
bool probe_edge_mutant() { return mutant_probe_skips_edge_tiles(); }
bool partial_group_mutant() { return mutant_pack_a_partial_group(); }
bool pack_tail_mutant() { return mutant_avx512_pack_b_trans_tail(); }

// Four registers' 128-bit lanes as a 4 x 4 block, transposed in place:
// afterwards x[L] holds lane L of every input, in input order. The last step
// of both transposes below (a lane shuffle moves any element type).
void transpose_lanes(__m512& x0, __m512& x1, __m512& x2, __m512& x3) {
  const __m512 v0 = _mm512_shuffle_f32x4(x0, x1, 0x44), v1 = _mm512_shuffle_f32x4(x0, x1, 0xEE);
  const __m512 w0 = _mm512_shuffle_f32x4(x2, x3, 0x44), w1 = _mm512_shuffle_f32x4(x2, x3, 0xEE);
  x0 = _mm512_shuffle_f32x4(v0, w0, 0x88), x1 = _mm512_shuffle_f32x4(v0, w0, 0xDD);
  x2 = _mm512_shuffle_f32x4(v1, w1, 0x88), x3 = _mm512_shuffle_f32x4(v1, w1, 0xDD);
}

struct VecF32 {
  using reg = __m512;
  using mask = __mmask16;
  static constexpr int width = 16;
  static constexpr int prefetch_b_steps = 32;
  static reg zero() { return _mm512_setzero_ps(); }
  static reg loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, reg v) { _mm512_storeu_ps(p, v); }
  static void stream(float* p, reg v) { _mm512_stream_ps(p, v); }
  static reg bcast(const float* p) { return _mm512_set1_ps(*p); }
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static reg set1(float x) { return _mm512_set1_ps(x); }
  static mask tail(int n) { return static_cast<mask>((1u << n) - 1u); }
  static reg maskload(const float* p, mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void maskstore(float* p, mask m, reg v) { _mm512_mask_storeu_ps(p, m, v); }
  // 16 x 16 in place: 4 x 4 blocks within each 128-bit lane, then the lanes.
  static void transpose(reg (&r)[16]) {
    reg t[16];
    for (int i = 0; i < 16; i += 2)
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]), t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    for (int g = 0; g < 16; g += 4) {
      const __m512d a = _mm512_castps_pd(t[g]), b = _mm512_castps_pd(t[g + 1]);
      const __m512d c = _mm512_castps_pd(t[g + 2]), d = _mm512_castps_pd(t[g + 3]);
      r[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c)), r[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
      r[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d)), r[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    // r[4g + c], lane L: column 4L + c of rows 4g .. 4g+3.
    for (int c = 0; c < 4; ++c) transpose_lanes(r[c], r[4 + c], r[8 + c], r[12 + c]);
  }
};

struct VecF64 {
  using reg = __m512d;
  using mask = __mmask8;
  static constexpr int width = 8;
  static constexpr int prefetch_b_steps = 32;
  static reg zero() { return _mm512_setzero_pd(); }
  static reg loadu(const double* p) { return _mm512_loadu_pd(p); }
  static void storeu(double* p, reg v) { _mm512_storeu_pd(p, v); }
  static void stream(double* p, reg v) { _mm512_stream_pd(p, v); }
  static reg bcast(const double* p) { return _mm512_set1_pd(*p); }
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_pd(a, b, c); }
  static reg mul(reg a, reg b) { return _mm512_mul_pd(a, b); }
  static reg set1(double x) { return _mm512_set1_pd(x); }
  static mask tail(int n) { return static_cast<mask>((1u << n) - 1u); }
  static reg maskload(const double* p, mask m) { return _mm512_maskz_loadu_pd(m, p); }
  static void maskstore(double* p, mask m, reg v) { _mm512_mask_storeu_pd(p, m, v); }
  // 8 x 8 in place: 2 x 2 blocks within each 128-bit lane, then the lanes.
  static void transpose(reg (&r)[8]) {
    reg t[8];
    for (int i = 0; i < 8; i += 2)
      t[i] = _mm512_unpacklo_pd(r[i], r[i + 1]), t[i + 1] = _mm512_unpackhi_pd(r[i], r[i + 1]);
    // t[2g + c], lane L: column 2L + c of rows 2g, 2g+1.
    for (int c = 0; c < 2; ++c) {
      __m512 x[4] = {_mm512_castpd_ps(t[c]), _mm512_castpd_ps(t[2 + c]), _mm512_castpd_ps(t[4 + c]),
                     _mm512_castpd_ps(t[6 + c])};
      transpose_lanes(x[0], x[1], x[2], x[3]);
      for (int L = 0; L < 4; ++L) r[2 * L + c] = _mm512_castps_pd(x[L]);
    }
  }
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
          16,
          &pack_transposed<float, VecF32, 32>,
          &pack_transposed<float, VecF32, 12>};
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
          8,
          &pack_transposed<double, VecF64, 16>,
          &pack_transposed<double, VecF64, 12>};
}

}  // namespace popper::gemm::cpu::detail
