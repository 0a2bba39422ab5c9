// The per-atom arrow-Schur sequence as POPPER_HD pieces, one source for every
// path: the Structured CPU path (Ops = ScalarLane), the Hand kernel (Ops = an
// AVX2 lane type, 4 atoms per register) and the CUDA kernel (ScalarLane, built
// with --fmad=false). Each piece fixes its floating-point operation order and
// no path contracts mul+add into FMA, so the three are bit-identical; only
// the reduction over rows is split across device threads, per S entry, in the
// same row order (arrow_schur_entry / arrow_rhs_entry).
//
//   row i:   D_i + rho_t I = L_i L_i^T,  u_i = L_i^-1 g_i,  Y_i = L_i^-1 B_i
//   border:  S = C + rho_beta I - sum_i Y_i^T Y_i,  r = -g_b + sum_i Y_i^T u_i
//            S = L_S L_S^T,  delta_beta = S^-1 r
//   back:    delta_t_i = -L_i^-T L_i^-1 (g_i + B_i delta_beta)
//   log det: product of every Cholesky pivot a (= L_jj^2), kept as m * 2^e
//            with exact frexp steps; log det = log(m) + e ln 2 on the host.
//
// Storage per atom (V = one lane value): D row block i at D + i*d*d, B at
// B + i*d*k, g at g + i*d, all column-major; L keeps 1/L_jj on its diagonal.
// Only lower triangles of D_i, C and S are read.
#pragma once
#include <cfloat>
#include <cmath>
#include <cstddef>

#include "impl/arrow/host_device.hpp"
#include "popper/mutant.hpp"

namespace popper::arrow {

// One atom per "lane": plain doubles (host scalar path and device).
struct ScalarLane {
  using V = double;
  using M = bool;
  static POPPER_HD V splat(double x) { return x; }
  static POPPER_HD V sqrt(V x) { return ::sqrt(x); }
  // A pivot is usable when it is a positive normal finite number (NaN fails).
  static POPPER_HD M pivot_ok(V a) { return a >= DBL_MIN && a <= DBL_MAX; }
  static POPPER_HD V blend(M m, V t, V f) { return m ? t : f; }
  static POPPER_HD M land(M a, M b) { return a && b; }
  static POPPER_HD M lnot(M a) { return !a; }
  static POPPER_HD M lt(V a, V b) { return a < b; }
  static POPPER_HD M all_true() { return true; }
  // frexp for positive normal a: a = mant * 2^exp, mant in [0.5, 1).
  static POPPER_HD V frexp(V a, V& exp) {
    int e = 0;
    const double m = ::frexp(a, &e);
    exp = static_cast<double>(e);
    return m;
  }
};

// log det accumulator step: m <- m * a with the exponent kept apart (exact).
template <class Ops>
POPPER_HD inline void arrow_fold_pivot(typename Ops::V a, typename Ops::V& mant, typename Ops::V& expo) {
  using V = typename Ops::V;
  V ea, em;
  const V ma = Ops::frexp(a, ea);
  const V prod = mant * ma;
  mant = Ops::frexp(prod, em);
  expo = POPPER_MUTANT("arrow-logdet-drops-exponent") ? expo + ea : expo + ea + em;
}

// Row pass, first half: factor D_i + rho_t I. `ok` is cleared where an
// active lane's pivot fails; a failed pivot is replaced by 1 so the lane keeps
// computing harmless numbers. pivots[j] is the pivot to fold into log det (1
// for inactive lanes, i.e. padding rows in the compact workspace).
template <class Ops, int DF>
POPPER_HD inline void arrow_row_cholesky(std::size_t d_rt, const typename Ops::V* Drow, typename Ops::V rho_t,
                                         typename Ops::M active, typename Ops::V* L, typename Ops::V* pivots,
                                         typename Ops::M& ok) {
  using V = typename Ops::V;
  using M = typename Ops::M;
  const std::size_t d = DF > 0 ? static_cast<std::size_t>(DF) : d_rt;
  const V one = Ops::splat(1.0);
  for (std::size_t j = 0; j < d; ++j) {
    V a = Drow[j + j * d] + rho_t;
    for (std::size_t p = 0; p < j; ++p) a = a - L[j + p * d] * L[j + p * d];
    const M good = Ops::pivot_ok(a);
    ok = Ops::land(ok, Ops::lnot(Ops::land(active, Ops::lnot(good))));
    const V a_use = Ops::blend(good, a, one);
    pivots[j] = Ops::blend(active, a_use, one);
    const V inv = one / Ops::sqrt(a_use);
    L[j + j * d] = inv;
    for (std::size_t i = j + 1; i < d; ++i) {
      V s = Drow[i + j * d];
      for (std::size_t p = 0; p < j; ++p) s = s - L[i + p * d] * L[j + p * d];
      L[i + j * d] = s * inv;
    }
  }
}

// Row pass, second half: forward substitution L x = b, column by column: u
// from g, Y from B.
template <class Ops, int DF>
POPPER_HD inline void arrow_row_forward(std::size_t d_rt, std::size_t k, const typename Ops::V* Brow,
                                        const typename Ops::V* grow, const typename Ops::V* L, typename Ops::V* Y,
                                        typename Ops::V* u) {
  using V = typename Ops::V;
  const std::size_t d = DF > 0 ? static_cast<std::size_t>(DF) : d_rt;
  for (std::size_t c = 0; c <= k; ++c) {
    const V* b = c < k ? Brow + c * d : grow;
    V* x = c < k ? Y + c * d : u;
    for (std::size_t j = 0; j < d; ++j) {
      V s = b[j];
      for (std::size_t p = 0; p < j; ++p) s = s - L[j + p * d] * x[p];
      x[j] = s * L[j + j * d];
    }
  }
}

// Row pass: factor D_i + rho_t I, solve for u_i and Y_i.
template <class Ops, int DF>
POPPER_HD inline void arrow_row_factor(std::size_t d_rt, std::size_t k, const typename Ops::V* Drow,
                                       const typename Ops::V* Brow, const typename Ops::V* grow, typename Ops::V rho_t,
                                       typename Ops::M active, typename Ops::V* L, typename Ops::V* Y,
                                       typename Ops::V* u, typename Ops::V* pivots, typename Ops::M& ok) {
  arrow_row_cholesky<Ops, DF>(d_rt, Drow, rho_t, active, L, pivots, ok);
  arrow_row_forward<Ops, DF>(d_rt, k, Brow, grow, L, Y, u);
}

// (Y_i^T Y_i)_{jl} and (Y_i^T u_i)_j, summed over m in ascending order.
template <class Ops, int DF>
POPPER_HD inline typename Ops::V arrow_yty(std::size_t d_rt, const typename Ops::V* Y, std::size_t j, std::size_t l) {
  const std::size_t d = DF > 0 ? static_cast<std::size_t>(DF) : d_rt;
  const typename Ops::V* yj = Y + j * d;
  const typename Ops::V* yl = Y + l * d;
  typename Ops::V t = yj[0] * yl[0];
  for (std::size_t m = 1; m < d; ++m) t = t + yj[m] * yl[m];
  return t;
}
template <class Ops, int DF>
POPPER_HD inline typename Ops::V arrow_ytu(std::size_t d_rt, const typename Ops::V* Y, const typename Ops::V* u,
                                           std::size_t j) {
  const std::size_t d = DF > 0 ? static_cast<std::size_t>(DF) : d_rt;
  const typename Ops::V* yj = Y + j * d;
  typename Ops::V t = yj[0] * u[0];
  for (std::size_t m = 1; m < d; ++m) t = t + yj[m] * u[m];
  return t;
}

// S <- C + rho_beta I (lower triangle), r <- -g_b.
template <class Ops>
POPPER_HD inline void arrow_border_init(std::size_t k, const typename Ops::V* C, const typename Ops::V* gb,
                                        typename Ops::V rho_beta, typename Ops::V* S, typename Ops::V* r) {
  const typename Ops::V zero = Ops::splat(0.0);
  for (std::size_t l = 0; l < k; ++l) {
    S[l + l * k] = C[l + l * k] + rho_beta;
    for (std::size_t j = l + 1; j < k; ++j) S[j + l * k] = C[j + l * k];
    r[l] = POPPER_MUTANT("arrow-border-r-sign") ? gb[l] - zero : zero - gb[l];
  }
}

// One row's contribution: S_jl <- S_jl - (Y^T Y)_jl, r_j <- r_j + (Y^T u)_j.
template <class Ops, int DF>
POPPER_HD inline void arrow_schur_update(std::size_t d, std::size_t k, const typename Ops::V* Y,
                                         const typename Ops::V* u, typename Ops::V* S, typename Ops::V* r) {
  for (std::size_t l = 0; l < k; ++l) {
    for (std::size_t j = l; j < k; ++j) S[j + l * k] = S[j + l * k] - arrow_yty<Ops, DF>(d, Y, j, l);
    r[l] = r[l] + arrow_ytu<Ops, DF>(d, Y, u, l);
  }
}

// In-place lower Cholesky of S (diagonal keeps 1/L_jj); pivots folded into
// (mant, expo); `ok` cleared where a pivot fails.
template <class Ops>
POPPER_HD inline void arrow_border_factor(std::size_t k, typename Ops::V* S, typename Ops::V& mant,
                                          typename Ops::V& expo, typename Ops::M& ok) {
  using V = typename Ops::V;
  const V one = Ops::splat(1.0);
  for (std::size_t j = 0; j < k; ++j) {
    V a = S[j + j * k];
    for (std::size_t p = 0; p < j; ++p) a = a - S[j + p * k] * S[j + p * k];
    const typename Ops::M good = Ops::pivot_ok(a);
    ok = Ops::land(ok, good);
    const V a_use = Ops::blend(good, a, one);
    arrow_fold_pivot<Ops>(a_use, mant, expo);
    const V inv = one / Ops::sqrt(a_use);
    S[j + j * k] = inv;
    for (std::size_t i = j + 1; i < k; ++i) {
      V s = S[i + j * k];
      for (std::size_t p = 0; p < j; ++p) s = s - S[i + p * k] * S[j + p * k];
      S[i + j * k] = s * inv;
    }
  }
}

// delta_beta = L_S^-T L_S^-1 r.
template <class Ops>
POPPER_HD inline void arrow_border_solve(std::size_t k, const typename Ops::V* S, const typename Ops::V* r,
                                         typename Ops::V* dbeta) {
  using V = typename Ops::V;
  for (std::size_t j = 0; j < k; ++j) {
    V s = r[j];
    for (std::size_t p = 0; p < j; ++p) s = s - S[j + p * k] * dbeta[p];
    dbeta[j] = s * S[j + j * k];
  }
  for (std::size_t jj = k; jj-- > 0;) {
    V s = dbeta[jj];
    for (std::size_t p = jj + 1; p < k; ++p) s = s - S[p + jj * k] * dbeta[p];
    dbeta[jj] = s * S[jj + jj * k];
  }
}

// delta_t_i = -L_i^-T L_i^-1 (g_i + B_i delta_beta).
template <class Ops, int DF>
POPPER_HD inline void arrow_row_backsub(std::size_t d_rt, std::size_t k, const typename Ops::V* L,
                                        const typename Ops::V* Brow, const typename Ops::V* grow,
                                        const typename Ops::V* dbeta, typename Ops::V* dt) {
  using V = typename Ops::V;
  const std::size_t d = DF > 0 ? static_cast<std::size_t>(DF) : d_rt;
  V w[DF > 0 ? DF : 8];
  for (std::size_t m = 0; m < d; ++m) {
    V s = grow[m];
    for (std::size_t c = 0; c < k; ++c) s = s + Brow[m + c * d] * dbeta[c];
    w[m] = s;
  }
  for (std::size_t j = 0; j < d; ++j) {
    V s = w[j];
    for (std::size_t p = 0; p < j; ++p) s = s - L[j + p * d] * w[p];
    w[j] = s * L[j + j * d];
  }
  const V zero = Ops::splat(0.0);
  for (std::size_t jj = d; jj-- > 0;) {
    V s = w[jj];
    for (std::size_t p = jj + 1; p < d; ++p) s = s - L[p + jj * d] * w[p];
    w[jj] = s * L[jj + jj * d];
    dt[jj] = zero - w[jj];
  }
}

// Inputs, scratch and outputs of one atom (or one lane group of atoms).
template <class V>
struct ArrowAtomArgs {
  std::size_t rows, d, k;  // rows: the group's row count (max over lanes)
  const V* D;
  const V* B;
  const V* g;
  const V* C;
  const V* gb;
  V lane_rows;  // rows of each lane (== rows for ScalarLane)
  V* L;         // scratch rows * d * d
  V* S;         // scratch k * k
  V* r;         // scratch k
  V* dt;        // out rows * d
  V* dbeta;     // out k
};
template <class V>
struct ArrowAtomStatus {
  V det_mant, det_exp;  // log det H = log(det_mant) + det_exp * ln 2
  V fail_row;           // first row whose pivot failed, -1 if none
  V schur_failed;       // 1 when the border factor failed, else 0
};

// The whole sequence for one atom (one lane group), serial over rows.
template <class Ops, int DF>
POPPER_HD inline ArrowAtomStatus<typename Ops::V> arrow_atom_solve(const ArrowAtomArgs<typename Ops::V>& a,
                                                                   double rho_t, double rho_beta) {
  using V = typename Ops::V;
  using M = typename Ops::M;
  constexpr std::size_t kY = (DF > 0 ? DF : 8) * 32;
  V Y[kY];
  V u[DF > 0 ? DF : 8];
  const std::size_t d = DF > 0 ? static_cast<std::size_t>(DF) : a.d;
  const V minus_one = Ops::splat(-1.0);
  ArrowAtomStatus<V> st{Ops::splat(1.0), Ops::splat(0.0), minus_one, Ops::splat(0.0)};
  arrow_border_init<Ops>(a.k, a.C, a.gb, Ops::splat(rho_beta), a.S, a.r);
  const V vrho_t = Ops::splat(rho_t);
  // Rows in batches of kRowBatch: the batch's factorizations first, so their
  // independent sqrt/div chains overlap, then each row's solves and updates in
  // row order. Every row's arithmetic is unchanged, and so is the order of
  // everything that accumulates across rows.
  constexpr std::size_t kRowBatch = 4;
  V piv[kRowBatch][DF > 0 ? DF : 8];
  M ok[kRowBatch];
  for (std::size_t i0 = 0; i0 < a.rows; i0 += kRowBatch) {
    const std::size_t n = a.rows - i0 < kRowBatch ? a.rows - i0 : kRowBatch;
    for (std::size_t r = 0; r < n; ++r) {
      const std::size_t i = i0 + r;
      const M active = POPPER_MUTANT("arrow-lane-padding-counted")
                           ? Ops::all_true()
                           : Ops::lt(Ops::splat(static_cast<double>(i)), a.lane_rows);
      ok[r] = Ops::all_true();
      arrow_row_cholesky<Ops, DF>(d, a.D + i * d * d, vrho_t, active, a.L + i * d * d, piv[r], ok[r]);
    }
    for (std::size_t r = 0; r < n; ++r) {
      const std::size_t i = i0 + r;
      arrow_row_forward<Ops, DF>(d, a.k, a.B + i * d * a.k, a.g + i * d, a.L + i * d * d, Y, u);
      const M first = Ops::land(Ops::lnot(ok[r]), Ops::lt(st.fail_row, Ops::splat(0.0)));
      st.fail_row = Ops::blend(first, Ops::splat(static_cast<double>(i)), st.fail_row);
      for (std::size_t j = 0; j < d; ++j) arrow_fold_pivot<Ops>(piv[r][j], st.det_mant, st.det_exp);
      arrow_schur_update<Ops, DF>(d, a.k, Y, u, a.S, a.r);
    }
  }
  M sok = Ops::all_true();
  arrow_border_factor<Ops>(a.k, a.S, st.det_mant, st.det_exp, sok);
  st.schur_failed = Ops::blend(sok, Ops::splat(0.0), Ops::splat(1.0));
  arrow_border_solve<Ops>(a.k, a.S, a.r, a.dbeta);
  for (std::size_t i = 0; i < a.rows; ++i)
    arrow_row_backsub<Ops, DF>(d, a.k, a.L + i * d * d, a.B + i * d * a.k, a.g + i * d, a.dbeta, a.dt + i * d);
  return st;
}

}  // namespace popper::arrow
