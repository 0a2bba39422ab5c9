// One lane group of the Hand kernel: up to W atoms with equal (d, k)
// (W = 4 on AVX2, 8 on AVX-512), interleaved in a compact workspace (element
// e of lane l at [e * W + l]). Rows beyond a lane's n_a and unused lanes are
// padded *in the workspace only* with D = I, B = 0, g = 0 (C = I for an unused
// lane); the body masks their pivots out of log det and failure detection,
// and their zero Y, u leave S and r bit-unchanged, so a lane's numbers never
// depend on its neighbours, nor on the lane width.
#pragma once
#include <cstddef>

namespace popper::arrow {

struct HandGroupArgs {
  std::size_t rows, d, k;   // rows = max n_a over the lanes
  const double* D;          // rows*d*d*W
  const double* B;          // rows*d*k*W
  const double* g;          // rows*d*W
  const double* C;          // k*k*W
  const double* gb;         // k*W
  const double* lane_rows;  // W
  double* L;                // scratch rows*d*d*W
  double* S;                // scratch k*k*W
  double* r;                // scratch k*W
  double* dt;               // out rows*d*W
  double* dbeta;            // out k*W
  double rho_t, rho_beta;
  double* status;  // out 4*W: det_mant[W], det_exp[W], fail_row[W], schur_failed[W]
};

// cpu_hand_avx2.cpp (-mavx2, W = 4) and cpu_hand_avx512.cpp (AVX-512, W = 8):
// call only when the CPU has that ISA.
void hand_group_avx2(const HandGroupArgs& a);
void hand_group_avx512(const HandGroupArgs& a);

// The workspace gather's whole W x W blocks: element e of from[l] to
// dst[e * W + l] for e < n (n a multiple of W, every lane present, dst
// aligned to W doubles), by register transposes. Returns the lanes (bit l)
// where an element was Inf or NaN.
unsigned interleave_avx2(const double* const* from, std::size_t n, double* dst);
unsigned interleave_avx512(const double* const* from, std::size_t n, double* dst);
// Its inverse: src[e * W + l] to to[l][e] for e < n; the same lane report.
unsigned deinterleave_avx2(const double* src, std::size_t n, double* const* to);
unsigned deinterleave_avx512(const double* src, std::size_t n, double* const* to);

}  // namespace popper::arrow
