// Internal to the CPU GEMM: the micro-kernel interface shared by the
// per-ISA translation units (cpu_gemm_avx2.cpp, cpu_gemm_avx512.cpp), the
// scalar kernel and the ISA-neutral driver (cpu_gemm.cpp).
//
// A micro-kernel computes one MR x NR register tile of C and stores its
// top-left nrows x ncols part (1 <= nrows <= MR, 1 <= ncols <= NR):
//
//   C[i*ldc + j] = alpha * sum_{p<kc} A(i, p) * B[p*ldb + j] + beta * C[i*ldc + j]
//
// with beta == 0 meaning "C is not read". B is packed (ldb = NR: NR-wide
// slivers, zero-padded) or, for a full NR-wide sliver, the caller's rows read
// in place (ldb their stride); it is read with unaligned loads. A comes in
// one of two forms:
//   packed: A(i, p) = a[p*MR + i]   (MR-tall slivers, zero-padded rows)
//   direct: A(i, p) = a[i*lda + p]  (the caller's k-contiguous rows, no copy;
//                                    only for full MR-row tiles, or full
//                                    mr_short-row tiles with direct_short)
// Edge columns are masked in the ISA (a tail mask over the last vector), edge
// rows are simply not stored, so C outside the nrows x ncols window is never
// touched. The reduction over p is in order, one FMA per term, whatever the
// tile position: a C element's bits do not depend on how C was partitioned.
//
// The row kernel serves a single row of A (m = 1) with n-contiguous op(B):
//
//   c[j] = alpha * sum_{p<kc} a[p*as] * b[p*ldb + j] + beta * c[j],  j < ncols
//
// It sweeps B's rows in order into `acc`, a caller's scratch row of
// accumulators (ncols rounded up to the vector width), so a B that is
// streamed once is read sequentially and never copied. Its sum over p is the
// micro-kernels' (in order, one FMA per term from zero), so a row of C has
// the same bits whichever kernel computed it.
//
// The transposed packs copy one full sliver of ROWS k-contiguous source rows:
//
//   dst[p*ROWS + i] = src[i*ld + p],  p < kc, i < ROWS
//
// a block of vector-width rows at a time, transposed in registers: an
// NR-wide sliver of op(B) = B^T stored row-major (ROWS = NR), or an MR-tall
// sliver of op(A) with k-contiguous rows (ROWS = MR).
//
// The ISA translation units must not instantiate std:: templates or other
// inline functions: the linker could keep their AVX-512 copy for every caller
// and fault on a CPU without AVX-512.
#pragma once
#include <cstdint>

namespace popper::gemm::cpu::detail {

// stream_c: a full tile with beta = 0 is stored past the caches (non-temporal
// stores, for a C not read again soon); the caller has checked that the tile's
// rows are 64-byte aligned and fences its stores before anyone reads them.
// Edge tiles, beta != 0 and the scalar kernel store as usual.
// probe (nullptr: none): `lanes` elements, 0 on entry to the first tile, that
// the kernel leaves 0 if every value it stored was finite and NaN otherwise
// (each stored vector s folded in as s * 0 + probe, in registers).
template <class T>
using MicroKernel = void (*)(std::int64_t kc, const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T* c,
                             std::int64_t ldc, T alpha, T beta, int nrows, int ncols, bool stream_c, T* probe);

template <class T>
using RowKernel = void (*)(std::int64_t kc, const T* a, std::int64_t as, const T* b, std::int64_t ldb, T* c, T alpha,
                           T beta, std::int64_t ncols, T* acc);

template <class T>
using PackKernel = void (*)(std::int64_t kc, const T* src, std::int64_t ld, T* dst);

template <class T>
struct KernelSpec {
  int mr, nr;                            // register tile
  MicroKernel<T> packed;                 // A packed (always valid)
  MicroKernel<T> direct;                 // A direct (nullptr: this ISA always packs A)
  int mr_short;                          // a shorter direct tile (same NR), so that a block's rows
  MicroKernel<T> direct_short;           // split into full tiles more often (nullptr: none)
  RowKernel<T> row;                      // m = 1 (nullptr: the blocked path serves it)
  const char* isa;                       // "scalar" | "avx2" | "avx512"
  int lanes;                             // elements of T in one vector register
  PackKernel<T> pack_b_trans = nullptr;  // full slivers of a transposed op(B) (nullptr: the driver's copy)
  PackKernel<T> pack_a = nullptr;        // full slivers of a k-contiguous op(A) (nullptr: the driver's copy)
};

// Mutation points of the ISA kernels (popper/mutant.hpp), defined in
// cpu_gemm.cpp so the ISA translation units inline nothing of the std library;
// each is asked only on its path's edge branch, so it is reached only when
// that path runs.
bool mutant_avx2_tail_mask();            // "gemm-avx2-tail-mask": the AVX2 tail mask is one lane short
bool mutant_avx512_tail_mask();          // "gemm-avx512-tail-mask": the AVX-512 tail mask is one lane short
bool mutant_row_k_remainder();           // "gemm-row-k-remainder": the row kernel drops the kc % 4 rows after its sweep
bool mutant_avx2_pack_b_trans_tail();    // "gemm-avx2-pack-b-trans-tail": a transposed pack's k remainder one row short
bool mutant_avx512_pack_b_trans_tail();  // "gemm-avx512-pack-b-trans-tail": the same on AVX-512
bool mutant_stream_c_unscaled();         // "gemm-stream-c-unscaled": a streamed tile is stored without alpha
bool mutant_pack_a_partial_group();      // "gemm-pack-a-partial-group": a partial row group's last row packed as zeros
bool mutant_probe_skips_edge_tiles();    // "gemm-probe-skips-edge-tiles": an edge tile's stores are not probed

KernelSpec<float> avx2_f32();
KernelSpec<double> avx2_f64();
KernelSpec<float> avx512_f32();
KernelSpec<double> avx512_f64();

}  // namespace popper::gemm::cpu::detail
