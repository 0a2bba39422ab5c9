// The Hand kernel's lane group on AVX-512: arrow_atom_solve with V = __m512d,
// i.e. 8 atoms advance through the same arrow-Schur sequence, one per lane,
// with __mmask8 lane masks. As on AVX2 (cpu_hand_avx2.cpp) the body's
// operation order is the scalar one lane by lane, sqrt and div are IEEE
// correctly rounded and contraction is off (impl.cmake); frexp is
// getmant/getexp, exact for the positive normal pivots it sees. Hence bit
// parity with the Structured path, the AVX2 group and the device. The group
// around the body (its dispatch on d and its status) is hand_group_simd.inl.
#include <immintrin.h>

#include <cfloat>

// __m512d as a template argument drops its vector attributes from the type's
// spelling (-Wignored-attributes); the lane type is only ever used in this TU.
#pragma GCC diagnostic ignored "-Wignored-attributes"

#include "impl/arrow/atom_body.hpp"
#include "impl/arrow/hand_group.hpp"

namespace popper::arrow {

namespace {
struct Avx512Lane {
  using V = __m512d;
  using M = __mmask8;
  static constexpr int width = 8;
  static V loadu(const double* p) { return _mm512_loadu_pd(p); }
  static void storeu(double* p, V v) { _mm512_storeu_pd(p, v); }
  static V splat(double x) { return _mm512_set1_pd(x); }
  // The zero-masked forms (all lanes on) compute the same values; GCC 12's
  // unmasked intrinsics start from an undefined register (-Wmaybe-uninitialized).
  static V sqrt(V x) { return _mm512_maskz_sqrt_pd(0xFF, x); }
  static M pivot_ok(V a) {
    return static_cast<M>(_mm512_cmp_pd_mask(a, splat(DBL_MIN), _CMP_GE_OQ) &
                          _mm512_cmp_pd_mask(a, splat(DBL_MAX), _CMP_LE_OQ));
  }
  static V blend(M m, V t, V f) { return _mm512_mask_blend_pd(m, f, t); }
  static M land(M a, M b) { return static_cast<M>(a & b); }
  static M lnot(M a) { return static_cast<M>(~a); }
  static M lt(V a, V b) { return _mm512_cmp_pd_mask(a, b, _CMP_LT_OQ); }
  static M all_true() { return static_cast<M>(0xFF); }
  // frexp for positive normal lanes: a = m * 2^e, m in [0.5, 1) (std::frexp's values).
  static V frexp(V a, V& expo) {
    expo = _mm512_add_pd(_mm512_maskz_getexp_pd(0xFF, a), splat(1.0));
    return _mm512_maskz_getmant_pd(0xFF, a, _MM_MANT_NORM_p5_1, _MM_MANT_SIGN_src);
  }
};

#include "impl/arrow/hand_group_simd.inl"

// out[j] lane i = r[i] lane j. Masked forms with every lane on, as in
// Avx512Lane (GCC 12, -Wmaybe-uninitialized).
[[gnu::always_inline]] inline void transpose8(const __m512d r[8], __m512d out[8]) {
  __m512d t[8], u[8];
  for (int l = 0; l < 8; l += 2) {  // t: pairs of rows, even and odd columns
    t[l] = _mm512_maskz_unpacklo_pd(0xFF, r[l], r[l + 1]);
    t[l + 1] = _mm512_maskz_unpackhi_pd(0xFF, r[l], r[l + 1]);
  }
  for (int h = 0; h < 8; h += 4) {  // u: four rows, columns {j, j + 4} for j = 0..3
    u[h + 0] = _mm512_maskz_shuffle_f64x2(0xFF, t[h + 0], t[h + 2], 0x88);
    u[h + 1] = _mm512_maskz_shuffle_f64x2(0xFF, t[h + 1], t[h + 3], 0x88);
    u[h + 2] = _mm512_maskz_shuffle_f64x2(0xFF, t[h + 0], t[h + 2], 0xDD);
    u[h + 3] = _mm512_maskz_shuffle_f64x2(0xFF, t[h + 1], t[h + 3], 0xDD);
  }
  for (int j = 0; j < 4; ++j) {  // all eight rows of columns j and j + 4
    out[j] = _mm512_maskz_shuffle_f64x2(0xFF, u[j], u[j + 4], 0x88);
    out[j + 4] = _mm512_maskz_shuffle_f64x2(0xFF, u[j], u[j + 4], 0xDD);
  }
}
}  // namespace

// Lane rows are loaded as two 256-bit halves: they start anywhere, and a
// 512-bit load split across two lines reads memory slower on Zen 4 (as in the
// Q4_K kernel). fpclass 0x99: QNaN, +Inf, -Inf, SNaN.
unsigned interleave_avx512(const double* const* from, std::size_t n, double* dst) {
  __mmask8 bad = 0;
  for (std::size_t e = 0; e < n; e += 8) {
    __m512d r[8], out[8];
    for (int l = 0; l < 8; ++l)
      r[l] = _mm512_maskz_insertf64x4(0xFF, _mm512_castpd256_pd512(_mm256_loadu_pd(from[l] + e)),
                                      _mm256_loadu_pd(from[l] + e + 4), 1);
    transpose8(r, out);
    for (int j = 0; j < 8; ++j) {
      bad = static_cast<__mmask8>(bad | _mm512_fpclass_pd_mask(out[j], 0x99));
      _mm512_store_pd(dst + (e + j) * 8, out[j]);
    }
  }
  return bad;
}

unsigned deinterleave_avx512(const double* src, std::size_t n, double* const* to) {
  __mmask8 bad = 0;
  for (std::size_t e = 0; e < n; e += 8) {
    __m512d r[8], out[8];
    for (int j = 0; j < 8; ++j) {
      r[j] = _mm512_load_pd(src + (e + j) * 8);
      bad = static_cast<__mmask8>(bad | _mm512_fpclass_pd_mask(r[j], 0x99));
    }
    transpose8(r, out);
    for (int l = 0; l < 8; ++l) _mm512_storeu_pd(to[l] + e, out[l]);
  }
  return bad;
}

void hand_group_avx512(const HandGroupArgs& a) { simd_hand_group<Avx512Lane>(a); }

}  // namespace popper::arrow
