// The Hand kernel's lane group on AVX2: arrow_atom_solve with V = __m256d,
// i.e. 4 atoms advance through the same arrow-Schur sequence, one per lane.
// GCC's vector extensions give __m256d the +,-,*,/ operators, so the body's
// operation order is the scalar one lane by lane; sqrt and div are IEEE
// correctly rounded and contraction is off (impl.cmake), hence bit parity
// with the Structured path and the device. The group around the body (its
// dispatch on d and its status) is hand_group_simd.inl, shared with AVX-512.
#include <immintrin.h>

#include <cfloat>

// __m256d as a template argument drops its vector attributes from the type's
// spelling (-Wignored-attributes); the lane type is only ever used in this TU.
#pragma GCC diagnostic ignored "-Wignored-attributes"

#include "impl/arrow/atom_body.hpp"
#include "impl/arrow/hand_group.hpp"

namespace popper::arrow {

namespace {
struct Avx2Lane {
  using V = __m256d;
  using M = __m256d;  // all-ones / all-zeros per lane
  static constexpr int width = 4;
  static V loadu(const double* p) { return _mm256_loadu_pd(p); }
  static void storeu(double* p, V v) { _mm256_storeu_pd(p, v); }
  static V splat(double x) { return _mm256_set1_pd(x); }
  static V sqrt(V x) { return _mm256_sqrt_pd(x); }
  static M pivot_ok(V a) {
    return _mm256_and_pd(_mm256_cmp_pd(a, splat(DBL_MIN), _CMP_GE_OQ), _mm256_cmp_pd(a, splat(DBL_MAX), _CMP_LE_OQ));
  }
  static V blend(M m, V t, V f) { return _mm256_blendv_pd(f, t, m); }
  static M land(M a, M b) { return _mm256_and_pd(a, b); }
  static M lnot(M a) { return _mm256_xor_pd(a, all_true()); }
  static M lt(V a, V b) { return _mm256_cmp_pd(a, b, _CMP_LT_OQ); }
  static M all_true() { return _mm256_castsi256_pd(_mm256_set1_epi64x(-1)); }
  // frexp for positive normal lanes by exponent-field surgery (same values as std::frexp).
  static V frexp(V a, V& expo) {
    const __m256i bits = _mm256_castpd_si256(a);
    const __m256i field = _mm256_and_si256(_mm256_srli_epi64(bits, 52), _mm256_set1_epi64x(0x7ff));
    // int64 -> double for 0..2047: or into the mantissa of 2^52, subtract 2^52 (exact).
    const __m256d two52 = _mm256_castsi256_pd(_mm256_set1_epi64x(0x4330000000000000LL));
    const __m256d f = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(field, _mm256_castpd_si256(two52))), two52);
    expo = _mm256_sub_pd(f, splat(1022.0));
    const __m256i mant =
        _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi64x(static_cast<long long>(0x800FFFFFFFFFFFFFULL))),
                        _mm256_set1_epi64x(0x3FE0000000000000LL));
    return _mm256_castsi256_pd(mant);
  }
};

#include "impl/arrow/hand_group_simd.inl"

// out[j] lane i = r[i] lane j.
[[gnu::always_inline]] inline void transpose4(const __m256d r[4], __m256d out[4]) {
  __m256d t[4];
  for (int l = 0; l < 4; l += 2) {  // t: pairs of rows, even and odd columns
    t[l] = _mm256_unpacklo_pd(r[l], r[l + 1]);
    t[l + 1] = _mm256_unpackhi_pd(r[l], r[l + 1]);
  }
  for (int j = 0; j < 2; ++j) {  // all four rows of columns j and j + 2
    out[j] = _mm256_permute2f128_pd(t[j], t[j + 2], 0x20);
    out[j + 2] = _mm256_permute2f128_pd(t[j], t[j + 2], 0x31);
  }
}
}  // namespace

// Non-finite lanes by x * 0 (NaN exactly for Inf and NaN), summed per lane.
unsigned interleave_avx2(const double* const* from, std::size_t n, double* dst) {
  const __m256d zero = _mm256_setzero_pd();
  __m256d probe = zero;
  for (std::size_t e = 0; e < n; e += 4) {
    __m256d r[4], out[4];
    for (int l = 0; l < 4; ++l) r[l] = _mm256_loadu_pd(from[l] + e);
    transpose4(r, out);
    for (int j = 0; j < 4; ++j) {
      probe = _mm256_add_pd(probe, _mm256_mul_pd(out[j], zero));
      _mm256_store_pd(dst + (e + j) * 4, out[j]);
    }
  }
  return static_cast<unsigned>(_mm256_movemask_pd(_mm256_cmp_pd(probe, probe, _CMP_UNORD_Q)));
}

unsigned deinterleave_avx2(const double* src, std::size_t n, double* const* to) {
  const __m256d zero = _mm256_setzero_pd();
  __m256d probe = zero;
  for (std::size_t e = 0; e < n; e += 4) {
    __m256d r[4], out[4];
    for (int j = 0; j < 4; ++j) {
      r[j] = _mm256_load_pd(src + (e + j) * 4);
      probe = _mm256_add_pd(probe, _mm256_mul_pd(r[j], zero));
    }
    transpose4(r, out);
    for (int l = 0; l < 4; ++l) _mm256_storeu_pd(to[l] + e, out[l]);
  }
  return static_cast<unsigned>(_mm256_movemask_pd(_mm256_cmp_pd(probe, probe, _CMP_UNORD_Q)));
}

void hand_group_avx2(const HandGroupArgs& a) { simd_hand_group<Avx2Lane>(a); }

}  // namespace popper::arrow
