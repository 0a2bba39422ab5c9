// The Hand kernel's lane group on AVX-512: arrow_atom_solve with V = __m512d,
// i.e. 8 atoms advance through the same arrow-Schur sequence, one per lane,
// with __mmask8 lane masks. As on AVX2 (cpu_hand_avx2.cpp) the body's
// operation order is the scalar one lane by lane, sqrt and div are IEEE
// correctly rounded and contraction is off (impl.cmake); frexp is
// getmant/getexp, exact for the positive normal pivots it sees. Hence bit
// parity with the Structured path, the AVX2 group and the device.
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

template <int DF>
ArrowAtomStatus<__m512d> run(const HandGroupArgs& a) {
  auto cv = [](const double* p) { return reinterpret_cast<const __m512d*>(p); };
  auto mv = [](double* p) { return reinterpret_cast<__m512d*>(p); };
  ArrowAtomArgs<__m512d> args{a.rows, a.d, a.k, cv(a.D), cv(a.B), cv(a.g), cv(a.C), cv(a.gb),
                              _mm512_loadu_pd(a.lane_rows), mv(a.L), mv(a.S), mv(a.r), mv(a.dt), mv(a.dbeta)};
  return arrow_atom_solve<Avx512Lane, DF>(args, a.rho_t, a.rho_beta);
}
// Lanes where any of the n values is Inf/NaN (x * 0 is NaN exactly then).
__mmask8 nonfinite_probe(const double* p, std::size_t n) {
  const __m512d zero = _mm512_setzero_pd();
  __m512d acc = zero;
  for (std::size_t e = 0; e < n; ++e) acc = _mm512_add_pd(acc, _mm512_mul_pd(_mm512_load_pd(p + 8 * e), zero));
  return _mm512_cmp_pd_mask(acc, acc, _CMP_UNORD_Q);
}
}  // namespace

void hand_group_avx512(const HandGroupArgs& a) {
  // First non-finite field per lane, in ArrowField order (D, B, g_t, hbb, g_b).
  {
    const std::size_t n = a.rows, d = a.d, k = a.k;
    const double* fields[5] = {a.D, a.B, a.g, a.C, a.gb};
    const std::size_t sizes[5] = {n * d * d, n * d * k, n * d, k * k, k};
    __m512d field = _mm512_set1_pd(-1.0);
    for (int f = 4; f >= 0; --f)  // later fields first, so the earliest wins
      field = _mm512_mask_blend_pd(nonfinite_probe(fields[f], sizes[f]), field, _mm512_set1_pd(static_cast<double>(f)));
    _mm512_storeu_pd(a.status + 32, field);  // 5*W status layout, W = 8
  }
  ArrowAtomStatus<__m512d> st;
  switch (a.d) {
    case 1: st = run<1>(a); break;
    case 2: st = run<2>(a); break;
    case 3: st = run<3>(a); break;
    case 4: st = run<4>(a); break;
    default: st = run<0>(a); break;
  }
  _mm512_storeu_pd(a.status + 0, st.det_mant);
  _mm512_storeu_pd(a.status + 8, st.det_exp);
  _mm512_storeu_pd(a.status + 16, st.fail_row);
  _mm512_storeu_pd(a.status + 24, st.schur_failed);
}

}  // namespace popper::arrow
