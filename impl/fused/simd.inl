// The vector primitives every fused kernel body is written in, for one ISA
// (POPPER_FUSED_ISA_LEVEL: 0 scalar, 2 AVX2+FMA, 5 AVX-512). Included inside
// an anonymous namespace of each ISA translation unit, so every function here
// has internal linkage: no AVX-512 copy can be picked by the linker for a
// caller on another path. Uses no std:: templates for the same reason.
//
//   vexp2(x) = 2^x within 3u (contract exp2_accuracy): x clamped to [-127, 127]
//   (NaN passes through: the max/min keep the second operand on NaN),
//   n = round(x), f = x - n in [-1/2, 1/2], 2^f by a degree-6 polynomial
//   (Cephes exp2f coefficients), times 2^n built in the exponent field; n = -127
//   gives exactly 0, so exp2(-inf) = 0.
//   vsum / vmaxr reduce lanes in a fixed pairwise order.

#if POPPER_FUSED_ISA_LEVEL == 5
using vf = __m512;
constexpr int W = 16;
static inline vf vload(const float* p) { return _mm512_loadu_ps(p); }
static inline void vstore(float* p, vf a) { _mm512_storeu_ps(p, a); }
static inline __mmask16 vmask(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
// First n lanes (0 <= n < W) from p, the others `fill`.
static inline vf vloadn(const float* p, int n, float fill) {
  return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), vmask(n), p);
}
static inline void vstoren(float* p, vf a, int n) { _mm512_mask_storeu_ps(p, vmask(n), a); }
// Keep the first n lanes of a, the others `fill`.
static inline vf vkeep(vf a, int n, float fill) { return _mm512_mask_blend_ps(vmask(n), _mm512_set1_ps(fill), a); }
static inline vf vset(float x) { return _mm512_set1_ps(x); }
static inline vf vadd(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf vsub(vf a, vf b) { return _mm512_sub_ps(a, b); }
static inline vf vmul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf vdiv(vf a, vf b) { return _mm512_div_ps(a, b); }
static inline vf vsqrt(vf a) { return _mm512_sqrt_ps(a); }
static inline vf vfma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }    // a*b + c
static inline vf vfnma(vf a, vf b, vf c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a*b
static inline vf vmax(vf a, vf b) { return _mm512_max_ps(a, b); }
static inline vf vmin(vf a, vf b) { return _mm512_min_ps(a, b); }
static inline vf vround(vf a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline vf vpow2i(vf n) {  // 2^n for integral n in [-127, 127]; -127 -> 0
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_castsi512_ps(e);
}
static inline vf vand_bits(vf a, unsigned m) {
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(static_cast<int>(m))));
}
static inline float vsum(vf a) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(d, _mm_shuffle_ps(d, d, 1)));
}
static inline float vmaxr(vf a) {
  const __m256 h = _mm256_max_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
  const __m128 q = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 d = _mm_max_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_max_ss(d, _mm_shuffle_ps(d, d, 1)));
}
#elif POPPER_FUSED_ISA_LEVEL == 2
using vf = __m256;
constexpr int W = 8;
static inline vf vload(const float* p) { return _mm256_loadu_ps(p); }
static inline void vstore(float* p, vf a) { _mm256_storeu_ps(p, a); }
static inline __m256i vmask(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline vf vkeep(vf a, int n, float fill) {
  return _mm256_blendv_ps(_mm256_set1_ps(fill), a, _mm256_castsi256_ps(vmask(n)));
}
static inline vf vloadn(const float* p, int n, float fill) { return vkeep(_mm256_maskload_ps(p, vmask(n)), n, fill); }
static inline void vstoren(float* p, vf a, int n) { _mm256_maskstore_ps(p, vmask(n), a); }
static inline vf vset(float x) { return _mm256_set1_ps(x); }
static inline vf vadd(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf vsub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf vmul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf vdiv(vf a, vf b) { return _mm256_div_ps(a, b); }
static inline vf vsqrt(vf a) { return _mm256_sqrt_ps(a); }
static inline vf vfma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
static inline vf vfnma(vf a, vf b, vf c) { return _mm256_fnmadd_ps(a, b, c); }
static inline vf vmax(vf a, vf b) { return _mm256_max_ps(a, b); }
static inline vf vmin(vf a, vf b) { return _mm256_min_ps(a, b); }
static inline vf vround(vf a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline vf vpow2i(vf n) {
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_castsi256_ps(e);
}
static inline vf vand_bits(vf a, unsigned m) {
  return _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(a), _mm256_set1_epi32(static_cast<int>(m))));
}
static inline float vsum(vf a) {
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(d, _mm_shuffle_ps(d, d, 1)));
}
static inline float vmaxr(vf a) {
  const __m128 q = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 d = _mm_max_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_max_ss(d, _mm_shuffle_ps(d, d, 1)));
}
#else
using vf = float;
constexpr int W = 1;
static inline vf vload(const float* p) { return *p; }
static inline void vstore(float* p, vf a) { *p = a; }
static inline vf vloadn(const float* p, int n, float fill) { return n > 0 ? *p : fill; }
static inline void vstoren(float* p, vf a, int n) {
  if (n > 0) *p = a;
}
static inline vf vkeep(vf a, int n, float fill) { return n > 0 ? a : fill; }
static inline vf vset(float x) { return x; }
static inline vf vadd(vf a, vf b) { return a + b; }
static inline vf vsub(vf a, vf b) { return a - b; }
static inline vf vmul(vf a, vf b) { return a * b; }
static inline vf vdiv(vf a, vf b) { return a / b; }
static inline vf vsqrt(vf a) { return __builtin_sqrtf(a); }
static inline vf vfma(vf a, vf b, vf c) { return a * b + c; }  // no FMA unit assumed: two roundings
static inline vf vfnma(vf a, vf b, vf c) { return c - a * b; }
// Second operand on NaN, like the vector max/min.
static inline vf vmax(vf a, vf b) { return a > b ? a : b; }
static inline vf vmin(vf a, vf b) { return a < b ? a : b; }
static inline vf vround(vf a) { return __builtin_nearbyintf(a); }
static inline vf vpow2i(vf n) {
  if (!(n == n)) return n;
  const unsigned e = static_cast<unsigned>(static_cast<int>(n) + 127) << 23;
  float f;
  __builtin_memcpy(&f, &e, sizeof f);
  return f;
}
static inline vf vand_bits(vf a, unsigned m) {
  unsigned b;
  __builtin_memcpy(&b, &a, sizeof b);
  b &= m;
  __builtin_memcpy(&a, &b, sizeof a);
  return a;
}
static inline float vsum(vf a) { return a; }
static inline float vmaxr(vf a) { return a; }
#endif

static inline vf vzero() { return vset(0.0f); }

static inline vf vexp2_poly(vf f, bool truncated) {
  vf p = vset(1.535336188319500e-4f);
  if (truncated) p = vset(0.0f);  // mutant exp2-poly-truncated: the x^6 term dropped
  p = vfma(p, f, vset(1.339887440266574e-3f));
  p = vfma(p, f, vset(9.618437357674640e-3f));
  p = vfma(p, f, vset(5.550332471162809e-2f));
  p = vfma(p, f, vset(2.402264791363012e-1f));
  p = vfma(p, f, vset(6.931472028550421e-1f));
  return vfma(p, f, vset(1.0f));
}

static inline vf vexp2_impl(vf x, bool truncated) {
  x = vmax(vset(-127.0f), x);
  x = vmin(vset(127.0f), x);
  const vf n = vround(x);
  const vf f = vsub(x, n);
  return vmul(vexp2_poly(f, truncated), vpow2i(n));
}
static inline vf vexp2(vf x) { return vexp2_impl(x, false); }

constexpr float kLog2e = 1.44269504088896340736f;
constexpr float kLn2 = 0.693147180559945309417f;
constexpr float kNegInf = -__builtin_inff();
