// Hand tier on the CPU: Goto/BLIS-style blocked GEMM driver (ISA-neutral).
//
//   C = alpha * op(A) * op(B) + beta * C
//
// for jc in 0..n step NC:                 B panel KC x NC  -> packed (per worker, L3)
//   for pc in 0..k step KC:               beta applies on the first pc only (then beta = 1)
//     for ic in 0..m step MC:             A block MC x KC: packed (L2), or read in place
//       for jr in 0..NC step NR:          B sliver KC x NR (L2, cpu_gemm_blocking.hpp)
//         for ir in 0..MC step MR:        micro-kernel: MR x NR register tile, edges masked
//
// Every operand is addressed as X(r, c) = x[r*rs + c*cs], so layout and op
// are absorbed by packing. Column-major C is computed as the row-major
// problem C^T = op(B)^T op(A)^T over the same memory. When op(A) rows are
// k-contiguous (cs == 1) and C's rows are short (kDirectMaxRowBytes), full
// MR-row tiles read A in place ("direct"), which saves the A copy that
// dominates thin products (n = 256). A single row of A (m = 1) with
// n-contiguous op(B) skips the nest: the row kernel streams B in place
// (run_row).
//
// Threads (common/parallel.hpp, one persistent OpenMP team): C is split into
// contiguous row ranges (column ranges when they balance the work better), each worker runs
// the serial loop nest on its part with its own packing buffers (thread-local,
// reused across calls: no allocation per call). The k order of every element
// is fixed by KC alone (cpu_gemm_blocking.hpp), so the result does not depend
// on the thread count; the thread count itself is chosen from the problem
// size, so that a product too small to amortize a team wake-up runs on one.
#include "impl/gemm/cpu_gemm.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "impl/common/parallel.hpp"
#include "impl/gemm/cpu_gemm_blocking.hpp"
#include "impl/gemm/cpu_gemm_kernels.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::gemm::cpu {

namespace detail {
// Mutation points of the ISA kernels (cpu_gemm_kernels.hpp): asked once, cached.
bool mutant_avx2_tail_mask() {
  static const bool on = POPPER_MUTANT("gemm-avx2-tail-mask");
  return on;
}
bool mutant_avx512_tail_mask() {
  static const bool on = POPPER_MUTANT("gemm-avx512-tail-mask");
  return on;
}
bool mutant_row_k_remainder() {
  static const bool on = POPPER_MUTANT("gemm-row-k-remainder");
  return on;
}
bool mutant_avx2_pack_b_trans_tail() {
  static const bool on = POPPER_MUTANT("gemm-avx2-pack-b-trans-tail");
  return on;
}
bool mutant_avx512_pack_b_trans_tail() {
  static const bool on = POPPER_MUTANT("gemm-avx512-pack-b-trans-tail");
  return on;
}
bool mutant_stream_c_unscaled() {
  static const bool on = POPPER_MUTANT("gemm-stream-c-unscaled");
  return on;
}
bool mutant_pack_a_partial_group() {
  static const bool on = POPPER_MUTANT("gemm-pack-a-partial-group");
  return on;
}
bool mutant_probe_skips_edge_tiles() {
  static const bool on = POPPER_MUTANT("gemm-probe-skips-edge-tiles");
  return on;
}
}  // namespace detail

namespace {

using detail::KernelSpec;

bool mutant_short_tile_row() {
  static const bool on = POPPER_MUTANT("gemm-short-tile-row");
  return on;
}
bool mutant_b_in_place_stride() {
  static const bool on = POPPER_MUTANT("gemm-b-in-place-stride");
  return on;
}
bool mutant_scalar_edge_row() {
  static const bool on = POPPER_MUTANT("gemm-scalar-edge-row");
  return on;
}
bool mutant_probe_first_k_block() {
  static const bool on = POPPER_MUTANT("gemm-probe-first-k-block");
  return on;
}

// Portable fallback: 4 x 4 register tile in plain C++, packed A only.
template <class T>
void scalar_kernel(std::int64_t kc, const T* ap, std::int64_t, const T* bp, std::int64_t ldb, T* c, std::int64_t ldc,
                   T alpha, T beta, int nrows, int ncols, bool /*stream_c: plain stores here*/, T* probe) {
  constexpr int MR = 4, NR = 4;
  T acc[MR][NR] = {};
  for (std::int64_t p = 0; p < kc; ++p) {
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j) acc[i][j] += ap[i] * bp[j];
    ap += MR;
    bp += ldb;
  }
  // The mutant: an edge tile loses its last row.
  if (nrows < MR && nrows > 1 && mutant_scalar_edge_row()) nrows -= 1;
  const bool edge = nrows < MR || ncols < NR;
  T folded = T(0);
  for (int i = 0; i < nrows; ++i)
    for (int j = 0; j < ncols; ++j) {
      T& cij = c[i * ldc + j];
      cij = beta == T(0) ? alpha * acc[i][j] : alpha * acc[i][j] + beta * cij;
      folded += cij * T(0);
    }
  if (probe && !(edge && detail::mutant_probe_skips_edge_tiles())) probe[0] += folded;
}

template <class T>
KernelSpec<T> scalar_spec() {
  return {4, 4, &scalar_kernel<T>, nullptr, 0, nullptr, nullptr, "scalar", 1};
}

template <class T>
KernelSpec<T> spec_for(Isa isa);
template <>
KernelSpec<float> spec_for<float>(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return detail::avx512_f32();
    case Isa::Avx2: return detail::avx2_f32();
    default: return scalar_spec<float>();
  }
}
template <>
KernelSpec<double> spec_for<double>(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return detail::avx512_f64();
    case Isa::Avx2: return detail::avx2_f64();
    default: return scalar_spec<double>();
  }
}

// Matrix view X(r, c) = p[r*rs + c*cs].
template <class T>
struct View {
  const T* p;
  std::int64_t rs, cs;
  const T& operator()(std::int64_t r, std::int64_t c) const { return p[r * rs + c * cs]; }
};

// A 64-byte aligned scratch buffer that only grows: one per worker thread and
// element type, kept for the life of the thread (the OpenMP team persists).
template <class T>
T* scratch(int slot, std::size_t n) {
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<T, Free> buf[2];
  thread_local std::size_t cap[2] = {0, 0};
  if (cap[slot] < n) {
    const std::size_t bytes = ((n * sizeof(T) + 63) / 64) * 64;
    void* p = std::aligned_alloc(64, bytes);
    if (p == nullptr) throw std::bad_alloc();
    buf[slot].reset(static_cast<T*>(p));
    cap[slot] = n;
  }
  return buf[slot].get();
}

constexpr int kMaxMr = 16;  // the tallest micro-kernel tile pack_a copies column by column

// Width-wide slivers of short runs: source element (p, x) is src[p*ld + x],
// p < kcur, x < extent; sliver s takes x in [s*width, (s+1)*width) of every p
// into dst[s*width*kcur + p*width + xx], zero-padded past extent (a
// transposed op(A): runs of MR along its columns; an n-contiguous op(B): runs
// of NR along its rows). In blocks of kRunRows values of p across all
// slivers, each source row is read once, in order, and stays in the L1 while
// the slivers take their runs, and each sliver's part of a block is one
// contiguous write. A sliver at a time over all of p read every run from a
// row a page or more away, each a demand miss; one p at a time wrote a short
// run to every sliver, the slivers a multiple of 4 KiB apart and so in one L1
// set. Training step, small preset, 1 thread: its weight-gradient products
// (op(A) = dY^T) 243-250 -> 233 ms, its backward products 487-489 -> 474-477
// ms; blocks of 16 and 32 were equally fast, 1 and 64 slower.
constexpr std::int64_t kRunRows = 16;

template <class T>
void pack_runs(const T* src, std::int64_t ld, std::int64_t kcur, std::int64_t extent, int width, T* dst) {
  for (std::int64_t pb = 0; pb < kcur; pb += kRunRows) {
    const std::int64_t pe = std::min(kcur, pb + kRunRows);
    for (std::int64_t s = 0; s < extent; s += width) {
      const std::int64_t n = std::min<std::int64_t>(width, extent - s);
      for (std::int64_t p = pb; p < pe; ++p) {
        const T* run = src + p * ld + s;
        T* d = dst + s * kcur + p * width;
        for (std::int64_t x = 0; x < n; ++x) d[x] = run[x];
        for (std::int64_t x = n; x < width; ++x) d[x] = T(0);
      }
    }
  }
}

// Pack op(A)[i0 : i0+mcur, p0 : p0+kcur] into MR-row slivers: dst[s][p][ii].
// Full slivers of k-contiguous rows go to the ISA's transposed pack where it
// has one.
template <class T>
void pack_a(View<T> a, std::int64_t i0, std::int64_t mcur, std::int64_t p0, std::int64_t kcur, int mr,
            detail::PackKernel<T> rows_kernel, T* dst) {
  if (a.rs == 1) {  // op(A)'s columns contiguous (A stored transposed)
    pack_runs(&a(i0, p0), a.cs, kcur, mcur, mr, dst);
    return;
  }
  // Otherwise op(A)'s rows are k-contiguous (a.cs == 1: one of the strides is 1).
  for (std::int64_t is = 0; is < mcur; is += mr) {
    const std::int64_t rows = std::min<std::int64_t>(mr, mcur - is);
    T* d = dst + is * kcur;
    if (rows == mr && rows_kernel != nullptr) {
      rows_kernel(kcur, &a(i0 + is, p0), a.rs, d);
    } else if (rows == mr && mr <= kMaxMr) {
      // mr read streams, one sequential write stream. Row by row, with
      // stores mr elements apart, this copy took ~10% of square_1k f32's
      // time; column by column ~4-5%.
      const T* src[kMaxMr];
      for (int ii = 0; ii < mr; ++ii) src[ii] = &a(i0 + is + ii, p0);
      for (std::int64_t p = 0; p < kcur; ++p, d += mr)
        for (int ii = 0; ii < mr; ++ii) d[ii] = src[ii][p];
    } else {  // an edge sliver: read rows, write with stride mr
      for (std::int64_t ii = 0; ii < rows; ++ii) {
        const T* src = &a(i0 + is + ii, p0);
        for (std::int64_t p = 0; p < kcur; ++p) d[p * mr + ii] = src[p];
      }
      for (std::int64_t ii = rows; ii < mr; ++ii)
        for (std::int64_t p = 0; p < kcur; ++p) d[p * mr + ii] = T(0);
    }
  }
}

// Pack op(B)[p0 : p0+kcur, j0 : j0+ncur] into NR-wide slivers dst[s][p][jj], zero-padded.
// Full slivers of a transposed op(B) (B^T's rows k-contiguous) go to the ISA's
// transposed pack where it has one.
template <class T>
void pack_b(View<T> b, std::int64_t p0, std::int64_t kcur, std::int64_t j0, std::int64_t ncur, int nr,
            detail::PackKernel<T> trans, T* dst) {
  if (b.cs == 1) {
    pack_runs(&b(p0, j0), b.rs, kcur, ncur, nr, dst);
    return;
  }
  for (std::int64_t js = 0; js < ncur; js += nr) {
    const std::int64_t cols = std::min<std::int64_t>(nr, ncur - js);
    T* d = dst + js * kcur;
    if (b.rs == 1 && cols == nr && trans != nullptr) {
      trans(kcur, &b(p0, j0 + js), b.cs, d);
    } else {
      // k in blocks of one source cache line, so that the block's
      // destination (kb x NR) stays in the L1 while every column fills it:
      // column by column over all of k, nearly every store misses once
      // kc x NR exceeds the L1.
      constexpr std::int64_t kb = 64 / static_cast<std::int64_t>(sizeof(T));
      for (std::int64_t pb = 0; pb < kcur; pb += kb) {
        const std::int64_t pe = std::min(kcur, pb + kb);
        for (std::int64_t jj = 0; jj < cols; ++jj) {
          const T* src = &b(p0, j0 + js + jj);
          for (std::int64_t p = pb; p < pe; ++p) d[p * nr + jj] = src[p * b.rs];
        }
        for (std::int64_t jj = cols; jj < nr; ++jj)
          for (std::int64_t p = pb; p < pe; ++p) d[p * nr + jj] = T(0);
      }
    }
  }
}

template <class T>
struct Problem {
  std::int64_t m, n, k;
  T alpha, beta;
  View<T> a, b;
  T* c;
  std::int64_t ldc;       // C(i, j) = c[i*ldc + j] (row-major after the ColMajor flip)
  bool stream_c = false;  // full tiles stored non-temporally (wants_stream_c)
  // Set when a stored value of C's final k block is not finite; nullptr: no probe.
  std::atomic<bool>* nonfinite = nullptr;
};

template <class T>
void scale_c(const Problem<T>& pr) {
  for (std::int64_t i = 0; i < pr.m; ++i)
    for (std::int64_t j = 0; j < pr.n; ++j) {
      T& cij = pr.c[i * pr.ldc + j];
      cij = pr.beta == T(0) ? T(0) : pr.beta * cij;
    }
}

void store_fence() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_sfence();
#endif
}

// Whether the caller's stream_c hint applies: C is overwritten (beta = 0) in
// one k block (a second would read it back), and every full tile's rows start
// on a cache line (C and its row stride 64-byte aligned, NR a whole number of
// lines), as non-temporal stores need.
template <class T>
bool wants_stream_c(const Problem<T>& pr, const KernelSpec<T>& ks, const Blocking& bl, bool hint) {
  constexpr auto elem = static_cast<std::int64_t>(sizeof(T));
  return hint && pr.beta == T(0) && bl.kc >= pr.k && reinterpret_cast<std::uintptr_t>(pr.c) % 64 == 0 &&
         pr.ldc * elem % 64 == 0 && ks.nr * elem % 64 == 0;
}

// A is read in place only when C's rows are short (n * sizeof(T) <= 2 KiB):
// there the copy is amortized over few columns and costs more than it saves
// (small_256 f32, 2 threads: 0.16 ms in place, 0.19 ms packed). For wider C the
// packed copy wins: contiguous slivers instead of MR rows a power-of-two
// stride apart, which conflict in L1/L2 and stall a second thread reading
// its own rows (ffn_gate_up, n = 4096: 2 threads 1.58x one when read in
// place, 1.89x packed; f64 1.61x against 1.92x). The same conflict rules
// out short rows of A whose MR rows share one L1 set (rows_conflict_in_l1:
// attn_kv, k = 1024, rows 4 or 8 KiB apart, is 15-25% faster packed).
constexpr std::int64_t kDirectMaxRowBytes = 2048;

template <class T>
bool reads_a_in_place(const Problem<T>& pr, const KernelSpec<T>& ks) {
  constexpr auto elem = static_cast<std::int64_t>(sizeof(T));
  return ks.direct != nullptr && pr.a.cs == 1 && pr.n * elem <= kDirectMaxRowBytes &&
         !rows_conflict_in_l1(ks.mr, pr.a.rs * elem, blocking_caches());
}

// How a block of m rows read in place splits into tiles: `full` rows in MR
// tiles, then `short_tiles` tiles of MS rows, the rest (< MR rows) packed.
// The short tiles are taken where they leave fewer rows to pack (m = 64, MR
// = 12, MS = 8: 48 + 2 x 8, none packed). A C element's bits do not depend on
// its tile (cpu_gemm_kernels.hpp).
struct DirectRows {
  std::int64_t full = 0, short_tiles = 0, packed = 0;  // full + short_tiles * MS + packed = m
};
DirectRows direct_rows(std::int64_t m, std::int64_t mr, std::int64_t ms) {
  DirectRows best{m / mr * mr, 0, m % mr};
  for (std::int64_t s = 1; ms > 0 && s < mr && s * ms <= m; ++s)
    if ((m - s * ms) % mr < best.packed) best = {(m - s * ms) / mr * mr, s, (m - s * ms) % mr};
  return best;
}

// Whether the full NR-wide slivers of a B block are read in place, unpacked:
// when op(B)'s rows are n-contiguous and the block fits the L1, where a row
// stride costs the micro-kernel nothing and the copy is pure overhead
// (small_64 f32: packing B was 13% of the product's time). The edge sliver
// is packed, zero-padded, as before.
template <class T>
bool b_in_place(const Problem<T>& pr, const KernelSpec<T>& ks, std::int64_t kcur, std::int64_t ncur) {
  return pr.b.cs == 1 && ncur >= ks.nr && static_cast<std::size_t>(kcur * ncur) * sizeof(T) <= blocking_caches().l1d;
}

// beta for the k block starting at pc: the caller's on the first, then 1
// (C already holds the earlier blocks' sum).
template <class T>
T block_beta(T beta, std::int64_t pc) {
  return pc == 0 || POPPER_MUTANT("gemm-beta-every-k-block") ? beta : T(1);
}

// The loops below the B packing: C[0:m, jc:jc+ncur] of `pr` gets
// op(A)[0:m, pc:pc+kcur] times the block of op(B), A packed (or read in place)
// by the calling worker. B's slivers are in `bpack`, packed, except full ones
// read in place when `in_place` (b_in_place).
template <class T>
void multiply_packed_b(const Problem<T>& pr, const KernelSpec<T>& ks, const Blocking& bl, std::int64_t jc,
                       std::int64_t ncur, std::int64_t pc, std::int64_t kcur, const T* bpack, bool in_place) {
  const std::int64_t mr = ks.mr, nr = ks.nr;
  const std::int64_t mc = std::min<std::int64_t>(bl.mc, (pr.m + mr - 1) / mr * mr);
  const bool direct = reads_a_in_place(pr, ks);
  T* apack = scratch<T>(1, static_cast<std::size_t>((direct ? mr : mc) * bl.kc));
  const T beta = block_beta(pr.beta, pc);
  const std::int64_t ms = ks.mr_short;
  // The probe's lanes (cpu_gemm_kernels.hpp), on the k block that stores C's final values.
  T lanes[16] = {};
  const bool probed_block = pr.nonfinite != nullptr && (mutant_probe_first_k_block() ? pc == 0 : pc + kcur == pr.k);
  T* probe = probed_block ? lanes : nullptr;
  for (std::int64_t ic = 0; ic < pr.m; ic += mc) {
    const std::int64_t mcur = std::min(mc, pr.m - ic);
    const DirectRows rows = direct ? direct_rows(mcur, mr, ks.direct_short ? ms : 0) : DirectRows{0, 0, mcur};
    const std::int64_t m_direct = mcur - rows.packed;  // rows read in place
    if (rows.packed > 0) pack_a(pr.a, ic + m_direct, rows.packed, pc, kcur, ks.mr, ks.pack_a, apack);
    for (std::int64_t jr = 0; jr < ncur; jr += nr) {
      const int ncols = static_cast<int>(std::min(nr, ncur - jr));
      const bool unpacked = in_place && ncols == nr;
      const T* bs = unpacked ? &pr.b(pc, jc + jr) : bpack + jr * kcur;
      // The mutant: an in-place sliver read with the packed stride.
      const std::int64_t ldb = unpacked && !mutant_b_in_place_stride() ? pr.b.rs : nr;
      auto c_at = [&](std::int64_t ir) { return pr.c + (ic + ir) * pr.ldc + (jc + jr); };
      std::int64_t ir = 0;
      for (; ir < rows.full; ir += mr)
        ks.direct(kcur, &pr.a(ic + ir, pc), pr.a.rs, bs, ldb, c_at(ir), pr.ldc, pr.alpha, beta, static_cast<int>(mr),
                  ncols, pr.stream_c, probe);
      for (; ir < m_direct; ir += ms)
        ks.direct_short(kcur, &pr.a(ic + ir, pc), pr.a.rs, bs, ldb, c_at(ir), pr.ldc, pr.alpha, beta,
                        static_cast<int>(ms) - (mutant_short_tile_row() ? 1 : 0), ncols, pr.stream_c, probe);
      for (; ir < mcur; ir += mr)
        ks.packed(kcur, apack + (ir - m_direct) * kcur, 0, bs, ldb, c_at(ir), pr.ldc, pr.alpha, beta,
                  static_cast<int>(std::min(mr, mcur - ir)), ncols, pr.stream_c, probe);
    }
  }
  // Non-temporal stores are weakly ordered: fenced before the worker's
  // barrier, so whoever reads C next sees them.
  if (pr.stream_c) store_fence();
  if (probe && std::any_of(lanes, lanes + ks.lanes, [](T x) { return x != T(0); }))
    pr.nonfinite->store(true, std::memory_order_relaxed);
}

// Worker w's share [begin, end) of `extent` when `threads` workers split it in
// whole units of `unit` (may be empty).
std::pair<std::int64_t, std::int64_t> share(std::int64_t extent, std::int64_t unit, std::size_t w, int threads) {
  const std::int64_t units = (extent + unit - 1) / unit;
  const std::int64_t begin = std::min(extent, units * static_cast<std::int64_t>(w) / threads * unit);
  return {begin, std::max(begin, std::min(extent, units * static_cast<std::int64_t>(w + 1) / threads * unit))};
}

// Worker w's part of the problem: its share of C's rows in whole MR tiles, or
// of C's columns in whole NR slivers.
template <class T>
Problem<T> row_part(const Problem<T>& pr, std::int64_t mr, std::size_t w, int threads) {
  const auto [r0, r1] = share(pr.m, mr, w, threads);
  Problem<T> part = pr;
  part.m = r1 - r0;
  part.a.p = &pr.a(r0, 0);
  part.c = pr.c + r0 * pr.ldc;
  return part;
}
template <class T>
Problem<T> col_part(const Problem<T>& pr, std::int64_t nr, std::size_t w, int threads) {
  const auto [c0, c1] = share(pr.n, nr, w, threads);
  Problem<T> part = pr;
  part.n = c1 - c0;
  part.b.p = &pr.b(0, c0);
  part.c = pr.c + c0;
  return part;
}

// The B blocks of the loop nest: kc x nc, NR-wide slivers.
struct BBlocks {
  std::int64_t kc, nc;
  template <class T>
  BBlocks(const Problem<T>& pr, const KernelSpec<T>& ks, const Blocking& bl)
      : kc(bl.kc), nc(std::min<std::int64_t>(bl.nc, (pr.n + ks.nr - 1) / ks.nr * ks.nr)) {}
};

// The outer loops: for each KC x NC block of op(B), pack(jc, ncur, pc, kcur,
// bpack) then multiply(jc, ncur, pc, kcur, bpack), bpack the calling
// thread's B buffer.
template <class T, class Pack, class Multiply>
void for_each_b_block(const Problem<T>& pr, const KernelSpec<T>& ks, const Blocking& bl, Pack&& pack,
                      Multiply&& multiply) {
  const BBlocks bb(pr, ks, bl);
  T* bpack = scratch<T>(0, static_cast<std::size_t>(bb.nc * bb.kc));
  for (std::int64_t jc = 0; jc < pr.n; jc += bb.nc) {
    const std::int64_t ncur = std::min(bb.nc, pr.n - jc);
    for (std::int64_t pc = 0; pc < pr.k; pc += bb.kc) {
      const std::int64_t kcur = std::min(bb.kc, pr.k - pc);
      pack(jc, ncur, pc, kcur, bpack);
      multiply(jc, ncur, pc, kcur, bpack);
    }
  }
}

// The serial loop nest over C[0:m, 0:n] of `pr`.
template <class T>
void run_serial(const Problem<T>& pr, const KernelSpec<T>& ks, const Blocking& bl) {
  for_each_b_block(
      pr, ks, bl,
      [&](std::int64_t jc, std::int64_t ncur, std::int64_t pc, std::int64_t kcur, T* bpack) {
        // In place, only the edge sliver is packed (at its packed offset).
        const std::int64_t j0 = b_in_place(pr, ks, kcur, ncur) ? ncur / ks.nr * ks.nr : 0;
        if (j0 < ncur) pack_b(pr.b, pc, kcur, jc + j0, ncur - j0, ks.nr, ks.pack_b_trans, bpack + j0 * kcur);
      },
      [&](std::int64_t jc, std::int64_t ncur, std::int64_t pc, std::int64_t kcur, const T* bpack) {
        multiply_packed_b(pr, ks, bl, jc, ncur, pc, kcur, bpack, b_in_place(pr, ks, kcur, ncur));
      });
}

// Rows split over `threads` workers, each B block packed once and shared:
// the workers pack disjoint slivers of it, then multiply their own rows by
// it. Only for B blocks larger than a core's L2 (shares_b): those are read
// from the shared L3 whoever packs them, and a copy per worker doubled the
// packing and their share of L3 (2 threads, medians of 3 alternating runs:
// square_1k f32 6.55 -> 6.23 ms, ffn_gate_up f64 225 -> 209 ms, ffn_down
// f64 211 -> 202 ms, the other full shapes within 2%). A smaller block stays
// in the L2 of the worker that packs it, so each worker packs its own
// (shared, attn_kv was 7-10% slower and small_256 20-30%: two team
// synchronizations per block and half the block in the other core's L2).
std::atomic<BSharing>& b_sharing() {
  static std::atomic<BSharing> mode{BSharing::Auto};
  return mode;
}

template <class T>
bool shares_b(const Problem<T>& pr, const KernelSpec<T>& ks, const Blocking& bl) {
  const BSharing mode = b_sharing().load(std::memory_order_relaxed);
  if (mode != BSharing::Auto) return mode == BSharing::Shared;
  const BBlocks bb(pr, ks, bl);
  return static_cast<std::size_t>(bb.kc * bb.nc) * sizeof(T) > blocking_caches().l2;
}

template <class T>
void run_rows_shared_b(const Problem<T>& pr, const KernelSpec<T>& ks, const Blocking& bl, int threads) {
  const std::int64_t nr = ks.nr;
  // Mutation point (gemm-shared-b-block-stride): a part placed by the full
  // KC instead of this block's k extent (wrong only when kcur < KC).
  const bool full_kc_stride = POPPER_MUTANT("gemm-shared-b-block-stride");
  for_each_b_block(
      pr, ks, bl,
      [&](std::int64_t jc, std::int64_t ncur, std::int64_t pc, std::int64_t kcur, T* bpack) {
        const std::int64_t stride = full_kc_stride ? bl.kc : kcur;
        const auto slivers = static_cast<std::size_t>((ncur + nr - 1) / nr);
        popper::parallel::run(slivers, threads, [&](std::size_t s0, std::size_t s1, int) {
          const std::int64_t j0 = static_cast<std::int64_t>(s0) * nr;
          const std::int64_t j1 = std::min(ncur, static_cast<std::int64_t>(s1) * nr);
          pack_b(pr.b, pc, kcur, jc + j0, j1 - j0, ks.nr, ks.pack_b_trans, bpack + j0 * stride);
        });
      },
      [&](std::int64_t jc, std::int64_t ncur, std::int64_t pc, std::int64_t kcur, const T* bpack) {
        popper::parallel::run(static_cast<std::size_t>(threads), threads, [&](std::size_t w0, std::size_t w1, int) {
          for (std::size_t w = w0; w < w1; ++w) {
            const Problem<T> part = row_part(pr, ks.mr, w, threads);
            if (part.m > 0) multiply_packed_b(part, ks, bl, jc, ncur, pc, kcur, bpack, false);
          }
        });
      });
}

// Work below which another thread costs more than it saves, in cycles of the
// core's nominal rate (two FMA pipes: 4 x lanes flop a cycle), so the size
// rule follows the ISA and precision: a 64^3 f64 product takes four times
// longer on AVX2 than f32 on AVX-512. A split costs the team's fork-join
// (~0.2 us) plus moving the second worker's operands and C to its core, which
// a warm loop pays on every call: ~2-3 us on a 2-vCPU Zen 5 guest, where
// 64^3 f32 on AVX-512 ran 0.57-0.75x as fast on 2 threads as on 1 and 64^3
// f64 0.71-1.12x. 10000 cycles a thread keeps those on one thread and still
// splits what a Zen 3 gained most from (64^3 f64 on AVX2, 1.7x). After idle
// the team sleeps and waking it costs ~10 us, which only larger products
// repay.
constexpr double kMinCyclesPerThread = 10000.0;

template <class T>
double min_flop_per_thread(const KernelSpec<T>& ks) {
  return kMinCyclesPerThread * 4.0 * ks.lanes;
}

// The largest share of C one of `threads` workers computes when `extent` is
// split in whole units of `unit`: ceil(units / threads) units, as a fraction.
double largest_share(std::int64_t extent, std::int64_t unit, int threads) {
  const std::int64_t units = (extent + unit - 1) / unit, per = (units + threads - 1) / threads;
  return static_cast<double>(std::min(extent, per * unit)) / static_cast<double>(extent);
}

// Rows are split (each worker packs all of op(B), or shares it: shares_b)
// unless columns balance the work clearly better: small_128 f32 has 11
// twelve-row tiles, 6 + 5 on 2 threads (72 of 128 rows on one), but 4
// 32-column slivers, 2 + 2; wide_640 11 tiles against 20 slivers. "Clearly":
// more than 2% less work on the busiest worker, so a shape the row split
// already balances (4096 rows: 171 + 171 tiles) keeps its tuned row path.
bool split_rows(std::int64_t m, std::int64_t n, std::int64_t mr, std::int64_t nr, int threads) {
  return largest_share(m, mr, threads) <= 1.02 * largest_share(n, nr, threads);
}

// The accumulators of one column chunk of the row path: 1/16 of the L2, in
// [4 KiB, 64 KiB], so B's rows are read in runs that long (whole rows up to
// 16K f32 columns) and the hardware prefetchers can follow a B streamed from
// DRAM. Runs of 8 KiB kept the accumulators in the L1 but needed software
// prefetch within each row; on a Zen 4, 64 KiB runs without it read gemv_4k
// 1.6x (f32) and 1.9x (f64) faster at 1 thread, 1.3x and 1.5x at 2, an
// LLC-resident B 1.0-1.3x.
std::int64_t row_chunk_bytes(const CacheSizes& caches) {
  const auto l2 = static_cast<std::int64_t>(caches.l2);
  return std::clamp<std::int64_t>(l2 / 16, 4096, 65536) / 64 * 64;
}

// The threads a product of `flop` may use, at most `requested` and `units`.
template <class T>
int threads_for(const KernelSpec<T>& ks, double flop, int requested, std::int64_t units) {
  const int by_size = popper::parallel::exact_threads()
                          ? requested
                          : static_cast<int>(std::max(1.0, std::floor(flop / min_flop_per_thread(ks))));
  return static_cast<int>(std::min<std::int64_t>({requested, by_size, units}));
}

// m = 1 with n-contiguous op(B), a GEMV such as one token through a
// projection: the blocked path would copy all of B into slivers (a second
// pass over the operand that dominates the traffic) and run 12-row tiles of
// which 11 rows are padding. The row kernel reads B once, in place. Each
// worker takes whole NR-wide column slivers; the KC blocks are the blocked
// path's, so the row's bits are too.
template <class T>
void run_row(const Problem<T>& pr, const KernelSpec<T>& ks, int requested) {
  const CacheSizes caches = blocking_caches();
  const Blocking bl = blocking_for(ks.mr, ks.nr, sizeof(T), caches, pr.k);
  const std::int64_t chunk = row_chunk_bytes(caches) / static_cast<std::int64_t>(sizeof(T));
  const std::int64_t slivers = (pr.n + ks.nr - 1) / ks.nr;
  const int threads = threads_for(ks, 2.0 * static_cast<double>(pr.n) * static_cast<double>(pr.k), requested, slivers);
  auto columns = [&](std::int64_t j0, std::int64_t j1) {
    T* acc = scratch<T>(1, static_cast<std::size_t>(chunk));
    for (std::int64_t jc = j0; jc < j1; jc += chunk) {
      const std::int64_t ncur = std::min(chunk, j1 - jc);
      for (std::int64_t pc = 0; pc < pr.k; pc += bl.kc) {
        const T beta = block_beta(pr.beta, pc);
        ks.row(std::min(bl.kc, pr.k - pc), &pr.a(0, pc), pr.a.cs, &pr.b(pc, jc), pr.b.rs, pr.c + jc, pr.alpha, beta,
               ncur, acc);
      }
    }
  };
  if (threads <= 1) {
    columns(0, pr.n);
    return;
  }
  popper::parallel::run(static_cast<std::size_t>(threads), threads, [&](std::size_t w0, std::size_t w1, int) {
    for (std::size_t w = w0; w < w1; ++w) {
      const auto [j0, j1] = share(pr.n, ks.nr, w, threads);
      if (j0 < j1) columns(j0, j1);
    }
  });
}

template <class T>
void run_blocked(Problem<T> pr, const KernelSpec<T>& ks, int requested, bool stream_c) {
  const Blocking bl = blocking_for(ks.mr, ks.nr, sizeof(T), blocking_caches(), pr.k);
  pr.stream_c = wants_stream_c(pr, ks, bl, stream_c);
  const double flop = 2.0 * static_cast<double>(pr.m) * static_cast<double>(pr.n) * static_cast<double>(pr.k);
  const std::int64_t row_units = (pr.m + ks.mr - 1) / ks.mr, col_units = (pr.n + ks.nr - 1) / ks.nr;
  const int wanted = threads_for(ks, flop, requested, std::max(row_units, col_units));
  const bool by_rows = wanted <= 1 || split_rows(pr.m, pr.n, ks.mr, ks.nr, wanted);
  const int threads = static_cast<int>(std::min<std::int64_t>(wanted, by_rows ? row_units : col_units));
  if (threads <= 1) {
    run_serial(pr, ks, bl);
    return;
  }
  if (by_rows && shares_b(pr, ks, bl)) {
    run_rows_shared_b(pr, ks, bl, threads);
    return;
  }
  popper::parallel::run(static_cast<std::size_t>(threads), threads, [&](std::size_t w0, std::size_t w1, int) {
    for (std::size_t w = w0; w < w1; ++w) {
      const Problem<T> part = by_rows ? row_part(pr, ks.mr, w, threads) : col_part(pr, ks.nr, w, threads);
      if (part.m > 0 && part.n > 0) run_serial(part, ks, bl);
    }
  });
}

template <class T>
bool gemm_impl(const GemmShape& s0, T alpha, std::span<const T> a, std::span<const T> b, T beta, std::span<T> c,
               const CpuGemmOptions& opts) {
  check_gemm_args(s0, a.size(), b.size(), c.size());
  if (opts.threads < 1) throw InvalidArgument("cpu::gemm: threads must be >= 1, got " + std::to_string(opts.threads));
  const KernelSpec<T> ks = spec_for<T>(popper::cpu::resolve(opts.isa, "cpu::gemm"));
  const GemmShape s = with_tight_ld(s0);
  if (s.m == 0 || s.n == 0) return opts.probe_finite;  // nothing stored

  // op(A)(i, p) and op(B)(p, j) as strided views of the stored matrices.
  const bool row = s.layout == Layout::RowMajor;
  const View<T> va = (s.op_a == Op::NoTrans) == row ? View<T>{a.data(), s.lda, 1} : View<T>{a.data(), 1, s.lda};
  const View<T> vb = (s.op_b == Op::NoTrans) == row ? View<T>{b.data(), s.ldb, 1} : View<T>{b.data(), 1, s.ldb};
  Problem<T> pr =
      row ? Problem<T>{s.m, s.n, s.k, alpha, beta, va, vb, c.data(), s.ldc}
          // C^T = op(B)^T op(A)^T: transposed views swap their strides.
          : Problem<T>{s.n,      s.m,  s.k, alpha, beta, View<T>{vb.p, vb.cs, vb.rs}, View<T>{va.p, va.cs, va.rs},
                       c.data(), s.ldc};
  if (pr.k == 0 || alpha == T(0)) {
    scale_c(pr);
    return false;
  }
  if (pr.m == 1 && pr.b.cs == 1 && ks.row != nullptr) {
    run_row(pr, ks, opts.threads);
    return false;
  }
  std::atomic<bool> nonfinite{false};
  if (opts.probe_finite) pr.nonfinite = &nonfinite;
  run_blocked(pr, ks, opts.threads, opts.stream_c);
  return opts.probe_finite && !nonfinite.load(std::memory_order_relaxed);
}

}  // namespace

void set_b_sharing(BSharing mode) { b_sharing().store(mode); }

bool gemm(const GemmShape& s, float alpha, std::span<const float> a, std::span<const float> b, float beta,
          std::span<float> c, const CpuGemmOptions& opts) {
  return gemm_impl<float>(s, alpha, a, b, beta, c, opts);
}

bool gemm(const GemmShape& s, double alpha, std::span<const double> a, std::span<const double> b, double beta,
          std::span<double> c, const CpuGemmOptions& opts) {
  return gemm_impl<double>(s, alpha, a, b, beta, c, opts);
}

}  // namespace popper::gemm::cpu
