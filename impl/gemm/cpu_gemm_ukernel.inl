// Register-blocked micro-kernel body, included by each ISA translation unit
// inside its own anonymous namespace (so each ISA gets its own copy).
// Requires: a struct Vec with  using reg; static constexpr int width;
//   zero(), load(const T*), loadu(const T*), storeu(T*, reg), bcast(const T*),
//   fma(a, b, c) = a*b + c, mul(a, b), set1(T), and tail_mutant: the id of the
//   mutant that drops the last lane of the tile's last vector (this ISA only).
// MR rows x NV vectors: MR*NV accumulators stay in registers.

template <class T, class Vec, int MR, int NV>
void micro_kernel(std::int64_t kc, const T* ap, const T* bp, T* c, std::int64_t ldc, T alpha, T beta) {
  constexpr int NR = NV * Vec::width;
  typename Vec::reg acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) acc[i][j] = Vec::zero();

  // The C tile is touched only after the k loop: start fetching it now.
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + NR - 1), _MM_HINT_T0);
  }
#pragma GCC unroll 4
  for (std::int64_t p = 0; p < kc; ++p) {
    _mm_prefetch(reinterpret_cast<const char*>(ap + 8 * MR), _MM_HINT_T0);
    typename Vec::reg bv[NV];
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) bv[j] = Vec::load(bp + j * Vec::width);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const typename Vec::reg av = Vec::bcast(ap + i);
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) acc[i][j] = Vec::fma(av, bv[j], acc[i][j]);
    }
    ap += MR;
    bp += NR;
  }

  if (POPPER_MUTANT(Vec::tail_mutant)) {  // a tail mask one lane short, on this ISA's path only
    alignas(64) T lanes[Vec::width];
    Vec::storeu(lanes, acc[MR - 1][NV - 1]);
    lanes[Vec::width - 1] = T(0);
    acc[MR - 1][NV - 1] = Vec::loadu(lanes);
  }
  const typename Vec::reg va = Vec::set1(alpha);
  if (beta == T(0)) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) Vec::storeu(c + i * ldc + j * Vec::width, Vec::mul(va, acc[i][j]));
  } else {
    const typename Vec::reg vb = Vec::set1(beta);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) {
        T* cij = c + i * ldc + j * Vec::width;
        Vec::storeu(cij, Vec::fma(vb, Vec::loadu(cij), Vec::mul(va, acc[i][j])));
      }
  }
}
