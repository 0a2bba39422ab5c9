// One lane group of the Hand kernel: up to 4 atoms with equal (d, k),
// interleaved in a compact workspace (element e of lane l at [e * 4 + l]).
// Rows beyond a lane's n_a and unused lanes are padded *in the workspace only*
// with D = I, B = 0, g = 0 (C = I for an unused lane); the body masks their
// pivots out of log det and failure detection, and their zero Y, u leave S and
// r bit-unchanged, so a lane's numbers never depend on its neighbours.
#pragma once
#include <cstddef>

namespace popper::arrow {

struct HandGroupArgs {
  std::size_t rows, d, k;  // rows = max n_a over the lanes
  const double* D;         // rows*d*d*4
  const double* B;         // rows*d*k*4
  const double* g;         // rows*d*4
  const double* C;         // k*k*4
  const double* gb;        // k*4
  const double* lane_rows; // 4
  double* L;               // scratch rows*d*d*4
  double* S;               // scratch k*k*4
  double* r;               // scratch k*4
  double* dt;              // out rows*d*4
  double* dbeta;           // out k*4
  double rho_t, rho_beta;
  double* status;          // out 20: det_mant[4], det_exp[4], fail_row[4], schur_failed[4],
                           //        first non-finite input field per lane (ArrowField index, -1 none)[4]
};

// Defined in cpu_hand_avx2.cpp (compiled with -mavx2); call only when the CPU has AVX2.
void hand_group_avx2(const HandGroupArgs& a);

}  // namespace popper::arrow
