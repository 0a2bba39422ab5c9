// Register-blocked micro-kernel body (contract in cpu_gemm_kernels.hpp),
// included by each ISA translation unit inside its own anonymous namespace
// (so each ISA gets its own copy).
// Requires: a struct Vec with  using reg, mask; static constexpr int width;
//   zero(), bcast(const T*), fma(a, b, c) = a*b + c, mul(a, b),
//   set1(T), storeu(T*, reg), stream(T*, reg) (non-temporal, 64-byte
//   aligned), loadu(const T*), tail(n) (first n lanes),
//   maskload(const T*, mask), maskstore(T*, mask, reg), transpose(reg (&)[width])
//   (a width x width block of rows, in place); prefetch_b_steps (the
//   packed kernel requests B's row that many k steps ahead; 0: none);
// and edge_tail_mutant(), row_remainder_mutant(), pack_tail_mutant(),
// partial_group_mutant(), stream_mutant(), probe_edge_mutant(): whether this TU's mutation points
// are live (POPPER_MUTANT, evaluated once per process, asked only on the
// branch each guards).
// MR rows x NV vectors: MR*NV accumulators stay in registers.

// probe (nullptr: none): Vec::width lanes that every stored vector s is
// folded into as probe = s * 0 + probe, which stays 0 while every s is finite
// and turns NaN for good at the first infinity or NaN. In an edge tile the
// last vector's unstored lanes are folded too: they hold A's row times B's
// zero padding, non-finite only when that row of A is, and then so are the
// row's stored lanes.
template <bool PROBE, class T, class Vec, int MR, int NV>
inline void tile_store_as(T* c, std::int64_t ldc, T alpha, T beta, typename Vec::reg (&acc)[MR][NV], int nrows,
                          int ncols, bool stream_c, T* probe) {
  constexpr int NR = NV * Vec::width;
  const typename Vec::reg va = Vec::set1(alpha);
  typename Vec::reg pv = Vec::zero();
  if constexpr (PROBE) pv = Vec::loadu(probe);
  const auto fold = [&](typename Vec::reg s) {
    if constexpr (PROBE) pv = Vec::fma(s, Vec::zero(), pv);
  };
  if (nrows == MR && ncols == NR) {
    if (beta == T(0) && stream_c) {
      const typename Vec::reg vs = stream_mutant() ? Vec::set1(T(1)) : va;  // the mutant: alpha dropped
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
        for (int j = 0; j < NV; ++j) {
          const typename Vec::reg s = Vec::mul(vs, acc[i][j]);
          Vec::stream(c + i * ldc + j * Vec::width, s);
          fold(s);
        }
    } else if (beta == T(0)) {
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
        for (int j = 0; j < NV; ++j) {
          const typename Vec::reg s = Vec::mul(va, acc[i][j]);
          Vec::storeu(c + i * ldc + j * Vec::width, s);
          fold(s);
        }
    } else {
      const typename Vec::reg vb = Vec::set1(beta);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
        for (int j = 0; j < NV; ++j) {
          T* cij = c + i * ldc + j * Vec::width;
          const typename Vec::reg s = Vec::fma(vb, Vec::loadu(cij), Vec::mul(va, acc[i][j]));
          Vec::storeu(cij, s);
          fold(s);
        }
    }
    if constexpr (PROBE) Vec::storeu(probe, pv);
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
        const typename Vec::reg s = beta == T(0) ? ab : Vec::fma(vb, Vec::loadu(cij), ab);
        Vec::storeu(cij, s);
        fold(s);
      } else if (j == full_vecs && tail > 0) {
        const typename Vec::reg s = beta == T(0) ? ab : Vec::fma(vb, Vec::maskload(cij, m), ab);
        Vec::maskstore(cij, m, s);
        fold(s);
      }
    }
  }
  if constexpr (PROBE) {
    if (!probe_edge_mutant()) Vec::storeu(probe, pv);  // the mutant: edge tiles' stores not probed
  }
}

template <class T, class Vec, int MR, int NV>
inline void tile_store(T* c, std::int64_t ldc, T alpha, T beta, typename Vec::reg (&acc)[MR][NV], int nrows, int ncols,
                       bool stream_c, T* probe) {
  if (probe) tile_store_as<true, T, Vec, MR, NV>(c, ldc, alpha, beta, acc, nrows, ncols, stream_c, probe);
  else tile_store_as<false, T, Vec, MR, NV>(c, ldc, alpha, beta, acc, nrows, ncols, stream_c, probe);
}

// A packed: A(i, p) = a[p*MR + i]. B's sliver (kc x NR: 128 KiB at kc 1024
// on AVX-512) outgrows the L1, so each tile reads it from the L2; requested
// 32 steps (4 KiB) ahead, square_1k, attn_qkv and ffn_down f64 ran 5-8%
// faster at 1 thread on a Zen 4 and no gate shape slower. On the AVX2 tiles
// the same request moved nothing beyond the noise, so they make none. The
// address is formed as an integer: near the end it points past B.
template <class T, class Vec, int MR, int NV>
void micro_kernel_packed(std::int64_t kc, const T* ap, std::int64_t /*lda*/, const T* bp, std::int64_t ldb, T* c,
                         std::int64_t ldc, T alpha, T beta, int nrows, int ncols, bool stream_c, T* probe) {
  constexpr int kBLines = (NV * Vec::width * static_cast<int>(sizeof(T)) + 63) / 64;
  const auto b_ahead = static_cast<std::uintptr_t>(Vec::prefetch_b_steps * ldb) * sizeof(T);
  typename Vec::reg acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) acc[i][j] = Vec::zero();
#pragma GCC unroll 4
  for (std::int64_t p = 0; p < kc; ++p) {
    if constexpr (Vec::prefetch_b_steps > 0) {
      const std::uintptr_t ahead = reinterpret_cast<std::uintptr_t>(bp) + b_ahead;
#pragma GCC unroll 4
      for (int l = 0; l < kBLines; ++l) __builtin_prefetch(reinterpret_cast<const void*>(ahead + 64 * l), 0, 3);
    }
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
  tile_store<T, Vec, MR, NV>(c, ldc, alpha, beta, acc, nrows, ncols, stream_c, probe);
}

// A direct: A(i, p) = a[i*lda + p] for the MR full rows. Rows are addressed
// from two bases with byte strides, so every broadcast is one addressing mode.
template <class T, class Vec, int MR, int NV>
void micro_kernel_direct(std::int64_t kc, const T* a, std::int64_t lda, const T* bp, std::int64_t ldb, T* c,
                         std::int64_t ldc, T alpha, T beta, int nrows, int ncols, bool stream_c, T* probe) {
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
  tile_store<T, Vec, MR, NV>(c, ldc, alpha, beta, acc, nrows, ncols, stream_c, probe);
}

// R rows of B, from row p, added into the row kernel's accumulators, in row
// order per accumulator; two vectors per step, so two accumulator chains are
// in flight.
//
// Where B's rows are a page or more apart, each pass starts R new pages, and
// the hardware prefetchers, which stop at a page's end, meet every one of
// them cold. So the sweep requests the next pass's rows into the L2, one
// line per 256 bytes (the L2 fetches the line beside it), as far along as
// it is in its own. On a Zen 4, cold 1 x 1024 x 1024 took 0.81 of the time
// at 1 thread, 1 x 4096 x 4096 0.89 (f32) and 0.93 (f64), 0.68-0.88 at 2
// threads; with B in the L3 it moved within 5%. Every line requested gained
// a little more cold but cost up to 9% in the L3; one per 512 bytes, less.
template <class T, class Vec, int R>
inline void row_sweep(const T* a, std::int64_t as, const T* b, std::int64_t ldb, std::int64_t full, int tail,
                      typename Vec::mask m, T* acc) {
  constexpr int W = Vec::width;
  constexpr std::int64_t kAheadEvery = 256 / static_cast<std::int64_t>(sizeof(T));
  static_assert(kAheadEvery % (2 * W) == 0, "a request lands on a step");
  typename Vec::reg av[R];
  const T* br[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    av[r] = Vec::bcast(a + r * as);
    br[r] = b + r * ldb;
  }
  // As integers: after the last pass the rows requested lie past B.
  const auto row_bytes = static_cast<std::uintptr_t>(ldb) * sizeof(T);
  const auto next = reinterpret_cast<std::uintptr_t>(b) + R * row_bytes;
  const bool ahead = row_bytes >= 4096;
  const std::int64_t pairs = full / (2 * W) * (2 * W);
  std::int64_t j = 0;
  for (; j < pairs; j += 2 * W) {
    if (ahead && j % kAheadEvery == 0) {
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r)
        __builtin_prefetch(
            reinterpret_cast<const void*>(next + r * row_bytes + static_cast<std::uintptr_t>(j) * sizeof(T)), 0, 2);
    }
    typename Vec::reg s0 = Vec::loadu(acc + j), s1 = Vec::loadu(acc + j + W);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      s0 = Vec::fma(av[r], Vec::loadu(br[r] + j), s0);
      s1 = Vec::fma(av[r], Vec::loadu(br[r] + j + W), s1);
    }
    Vec::storeu(acc + j, s0);
    Vec::storeu(acc + j + W, s1);
  }
  if (j < full) {
    typename Vec::reg s = Vec::loadu(acc + j);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) s = Vec::fma(av[r], Vec::loadu(br[r] + j), s);
    Vec::storeu(acc + j, s);
  }
  if (tail > 0) {  // masked reads: B's row may end at its allocation
    typename Vec::reg s = Vec::loadu(acc + full);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) s = Vec::fma(av[r], Vec::maskload(br[r] + full, m), s);
    Vec::storeu(acc + full, s);
  }
}

// The row kernel (cpu_gemm_kernels.hpp): four rows of B per pass over the
// accumulators, so each accumulator load and store is shared by four FMAs.
template <class T, class Vec>
void row_kernel(std::int64_t kc, const T* a, std::int64_t as, const T* b, std::int64_t ldb, T* c, T alpha, T beta,
                std::int64_t ncols, T* acc) {
  constexpr int W = Vec::width;
  const std::int64_t full = ncols / W * W;
  const int tail = static_cast<int>(ncols - full);
  const typename Vec::mask m = Vec::tail(tail);
  const std::int64_t padded = full + (tail > 0 ? W : 0);  // acc's lanes past ncols stay unused
  for (std::int64_t j = 0; j < padded; j += W) Vec::storeu(acc + j, Vec::zero());
  const std::int64_t kc4 = kc / 4 * 4;
  std::int64_t p = 0;
  for (; p < kc4; p += 4) row_sweep<T, Vec, 4>(a + p * as, as, b + p * ldb, ldb, full, tail, m, acc);
  if (p < kc && row_remainder_mutant()) p = kc;  // the mutant: the last kc % 4 rows are lost
  for (; p < kc; ++p) row_sweep<T, Vec, 1>(a + p * as, as, b + p * ldb, ldb, full, tail, m, acc);
  const typename Vec::reg va = Vec::set1(alpha), vb = Vec::set1(beta);
  for (std::int64_t j = 0; j < full; j += W) {
    const typename Vec::reg r = Vec::mul(va, Vec::loadu(acc + j));
    Vec::storeu(c + j, beta == T(0) ? r : Vec::fma(vb, Vec::loadu(c + j), r));
  }
  if (tail > 0) {
    const typename Vec::reg r = Vec::mul(va, Vec::loadu(acc + full));
    Vec::maskstore(c + full, m, beta == T(0) ? r : Vec::fma(vb, Vec::maskload(c + full, m), r));
  }
}

// The transposed pack (cpu_gemm_kernels.hpp): ROWS source rows, k contiguous
// in each, become a sliver dst[p*ROWS + i]: width rows at a time, one vector
// of k each, transposed in registers; the rows of a last partial group are
// loaded as zeros and stored through a mask, the last kc % width columns
// loaded through one.
template <class T, class Vec, int ROWS>
void pack_transposed(std::int64_t kc, const T* src, std::int64_t ld, T* dst) {
  constexpr int W = Vec::width;
  typename Vec::reg r[W];
  // The mutant: a partial group's last row is packed as zeros.
  const int lost = ROWS % W != 0 && partial_group_mutant() ? 1 : 0;
  const auto block = [&](std::int64_t p, int ks, bool masked) {  // ks columns from p
    const typename Vec::mask km = Vec::tail(masked ? ks : W);
    for (int g = 0; g < ROWS; g += W) {
      const int rows = ROWS - g < W ? ROWS - g : W;
      const int loaded = rows < W ? rows - lost : rows;
      const T* s = src + g * ld + p;
      for (int i = 0; i < W; ++i)
        r[i] = i >= loaded ? Vec::zero() : masked ? Vec::maskload(s + i * ld, km) : Vec::loadu(s + i * ld);
      Vec::transpose(r);
      const typename Vec::mask rm = Vec::tail(rows);
      for (int i = 0; i < ks; ++i) {
        T* d = dst + (p + i) * ROWS + g;
        if (rows == W) Vec::storeu(d, r[i]);
        else Vec::maskstore(d, rm, r[i]);
      }
    }
  };
  std::int64_t p = 0;
  for (; p + W <= kc; p += W) block(p, W, false);
  if (p == kc) return;
  const int cols = static_cast<int>(kc - p);
  // The mutant: the last packed column of the remainder is left as it was.
  block(p, pack_tail_mutant() ? cols - 1 : cols, true);
}
