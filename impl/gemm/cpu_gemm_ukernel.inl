// Register-blocked micro-kernel body (contract in cpu_gemm_kernels.hpp),
// included by each ISA translation unit inside its own anonymous namespace
// (so each ISA gets its own copy).
// Requires: a struct Vec with  using reg, mask; static constexpr int width;
//   zero(), bcast(const T*), fma(a, b, c) = a*b + c, mul(a, b),
//   set1(T), storeu(T*, reg), loadu(const T*), tail(n) (first n lanes),
//   maskload(const T*, mask), maskstore(T*, mask, reg);
// and a constexpr bool kTailMutant naming whether this TU's mutation point is
// live (POPPER_MUTANT, evaluated once per process in the edge branch).
// MR rows x NV vectors: MR*NV accumulators stay in registers.

template <class T, class Vec, int MR, int NV>
inline void tile_store(T* c, std::int64_t ldc, T alpha, T beta, typename Vec::reg (&acc)[MR][NV], int nrows,
                       int ncols) {
  constexpr int NR = NV * Vec::width;
  const typename Vec::reg va = Vec::set1(alpha);
  if (nrows == MR && ncols == NR) {
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
    return;
  }
  // Edge tile: rows past nrows are not stored; the last vector is masked.
  const typename Vec::reg vb = Vec::set1(beta);
  const int full_vecs = ncols / Vec::width;
  int tail = ncols - full_vecs * Vec::width;
  if (tail > 0 && edge_tail_mutant()) tail -= 1;  // the mutant: a tail mask one lane short
  const typename Vec::mask m = Vec::tail(tail);
  // Unrolled over all MR rows so that every acc index is a constant: a
  // runtime row index would keep the accumulators in a stack copy, written on
  // every call (24 zmm stores of 64 B in a 64^3 f32 tile's epilogue).
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    if (i >= nrows) break;
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) {
      T* cij = c + i * ldc + j * Vec::width;
      const typename Vec::reg ab = Vec::mul(va, acc[i][j]);
      if (j < full_vecs) {
        Vec::storeu(cij, beta == T(0) ? ab : Vec::fma(vb, Vec::loadu(cij), ab));
      } else if (j == full_vecs && tail > 0) {
        Vec::maskstore(cij, m, beta == T(0) ? ab : Vec::fma(vb, Vec::maskload(cij, m), ab));
      }
    }
  }
}

// A packed: A(i, p) = a[p*MR + i].
template <class T, class Vec, int MR, int NV>
void micro_kernel_packed(std::int64_t kc, const T* ap, std::int64_t /*lda*/, const T* bp, std::int64_t ldb, T* c,
                         std::int64_t ldc, T alpha, T beta, int nrows, int ncols) {
  typename Vec::reg acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) acc[i][j] = Vec::zero();
#pragma GCC unroll 4
  for (std::int64_t p = 0; p < kc; ++p) {
    typename Vec::reg bv[NV];
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) bv[j] = Vec::loadu(bp + j * Vec::width);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const typename Vec::reg av = Vec::bcast(ap + i);
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) acc[i][j] = Vec::fma(av, bv[j], acc[i][j]);
    }
    ap += MR;
    bp += ldb;
  }
  tile_store<T, Vec, MR, NV>(c, ldc, alpha, beta, acc, nrows, ncols);
}

// A direct: A(i, p) = a[i*lda + p] for the MR full rows. Rows are addressed
// from two bases with byte strides, so every broadcast is one addressing mode.
template <class T, class Vec, int MR, int NV>
void micro_kernel_direct(std::int64_t kc, const T* a, std::int64_t lda, const T* bp, std::int64_t ldb, T* c,
                         std::int64_t ldc, T alpha, T beta, int nrows, int ncols) {
  static_assert(MR % 2 == 0 && MR <= 16, "two bases of MR/2 rows");
  constexpr int H = MR / 2;
  typename Vec::reg acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) acc[i][j] = Vec::zero();
  const std::int64_t L = lda * static_cast<std::int64_t>(sizeof(T));
  const char* a0 = reinterpret_cast<const char*>(a);
  const char* a1 = a0 + H * L;
#pragma GCC unroll 4
  for (std::int64_t p = 0; p < kc; ++p) {
    typename Vec::reg bv[NV];
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) bv[j] = Vec::loadu(bp + j * Vec::width);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const char* row = (i < H ? a0 : a1) + (i % H) * L;
      const typename Vec::reg av = Vec::bcast(reinterpret_cast<const T*>(row));
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) acc[i][j] = Vec::fma(av, bv[j], acc[i][j]);
    }
    a0 += sizeof(T);
    a1 += sizeof(T);
    bp += ldb;
  }
  tile_store<T, Vec, MR, NV>(c, ldc, alpha, beta, acc, nrows, ncols);
}
