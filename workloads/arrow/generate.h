/* Deterministic inputs for an arrow shape (shapes.h), identical in the C
 * ceiling and the C++ bench: splitmix64 drives every draw, in one fixed order.
 * Valid C11 and C++20.
 *
 * Atom a: n_a ~ U{rows_min..rows_max}; per row D_i = M M^T/d + I (M ~ U(-1,1)),
 * B_i ~ s U(-1,1) with s = 1/sqrt(max(1,n_a) d k), g_i ~ U(-1,1); C = 2I + E with
 * |E_jl| <= 1/(4k), g_b ~ U(-1,1) — SPD with kappa(H) <= ~40 (see the falsify testbed).
 * Layout: the BatchedK1Pack CSR arrays (column-major blocks, no padding). */
#ifndef POPPER_WORKLOADS_ARROW_GENERATE_H
#define POPPER_WORKLOADS_ARROW_GENERATE_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "workloads/arrow/shapes.h"

typedef struct arrow_inputs {
  int atoms;
  int64_t* atom_offsets; /* atoms + 1 */
  int32_t* row_dims;
  int32_t* border_dims;
  double *D, *B, *g_t, *hbb, *g_b;
  size_t nD, nB, ng, nC, nb;
} arrow_inputs;

static inline uint64_t arrow_splitmix64(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
/* Uniform in [-1, 1) from the top 53 bits. */
static inline double arrow_unit(uint64_t* s) {
  return (double)(arrow_splitmix64(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* Row work of one row in flop (the counter `flop` is rows x this):
 * Cholesky d^3/3, forward solves for k+1 columns d^2 (k+1), Schur update
 * d k (k+1), r update 2 d k, back-substitution 2 d k + 2 d^2. */
static inline double arrow_row_flops(int d, int k) {
  const double dd = (double)d, kk = (double)k;
  return dd * dd * dd / 3.0 + dd * dd * (kk + 1.0) + dd * kk * (kk + 1.0) + 4.0 * dd * kk + 2.0 * dd * dd;
}

/* Allocates and fills; returns 0 on success. Free with arrow_inputs_free. */
static inline int arrow_inputs_make(const arrow_shape* sh, arrow_inputs* in) {
  uint64_t s = sh->seed;
  const int B = sh->atoms, d = sh->d, k = sh->k;
  int a, i, r, c, p;
  int64_t rows = 0;
  in->atoms = B;
  in->atom_offsets = (int64_t*)malloc(sizeof(int64_t) * (size_t)(B + 1));
  in->row_dims = (int32_t*)malloc(sizeof(int32_t) * (size_t)B);
  in->border_dims = (int32_t*)malloc(sizeof(int32_t) * (size_t)B);
  if (!in->atom_offsets || !in->row_dims || !in->border_dims) return 1;
  in->atom_offsets[0] = 0;
  for (a = 0; a < B; ++a) {
    const int span = sh->rows_max - sh->rows_min + 1;
    rows += sh->rows_min + (int)(arrow_splitmix64(&s) % (uint64_t)span);
    in->atom_offsets[a + 1] = rows;
    in->row_dims[a] = d;
    in->border_dims[a] = k;
  }
  in->nD = (size_t)rows * (size_t)(d * d);
  in->nB = (size_t)rows * (size_t)(d * k);
  in->ng = (size_t)rows * (size_t)d;
  in->nC = (size_t)B * (size_t)(k * k);
  in->nb = (size_t)B * (size_t)k;
  in->D = (double*)malloc(sizeof(double) * (in->nD ? in->nD : 1));
  in->B = (double*)malloc(sizeof(double) * (in->nB ? in->nB : 1));
  in->g_t = (double*)malloc(sizeof(double) * (in->ng ? in->ng : 1));
  in->hbb = (double*)malloc(sizeof(double) * in->nC);
  in->g_b = (double*)malloc(sizeof(double) * in->nb);
  if (!in->D || !in->B || !in->g_t || !in->hbb || !in->g_b) return 1;
  {
    double M[64];
    for (a = 0; a < B; ++a) {
      const int64_t r0 = in->atom_offsets[a], n = in->atom_offsets[a + 1] - r0;
      const double scale = 1.0 / sqrt((double)((n > 1 ? n : 1) * d * k));
      for (i = 0; i < n; ++i) {
        double* Di = in->D + (size_t)(r0 + i) * (size_t)(d * d);
        double* Bi = in->B + (size_t)(r0 + i) * (size_t)(d * k);
        double* gi = in->g_t + (size_t)(r0 + i) * (size_t)d;
        for (p = 0; p < d * d; ++p) M[p] = arrow_unit(&s);
        for (c = 0; c < d; ++c)
          for (r = 0; r < d; ++r) {
            double acc = 0.0;
            for (p = 0; p < d; ++p) acc += M[r + p * d] * M[c + p * d];
            Di[r + c * d] = acc / (double)d + (r == c ? 1.0 : 0.0);
          }
        for (p = 0; p < d * k; ++p) Bi[p] = scale * arrow_unit(&s);
        for (p = 0; p < d; ++p) gi[p] = arrow_unit(&s);
      }
      {
        double* C = in->hbb + (size_t)a * (size_t)(k * k);
        for (c = 0; c < k; ++c)
          for (r = c; r < k; ++r) {
            const double e = r == c ? 2.0 + 0.25 * arrow_unit(&s) : arrow_unit(&s) / (4.0 * (double)k);
            C[r + c * k] = e;
            C[c + r * k] = e;
          }
        for (p = 0; p < k; ++p) in->g_b[(size_t)a * (size_t)k + (size_t)p] = arrow_unit(&s);
      }
    }
  }
  return 0;
}

static inline double arrow_inputs_rows(const arrow_inputs* in) { return (double)in->atom_offsets[in->atoms]; }

/* Bytes moved per solve: every input once, every output once. */
static inline double arrow_inputs_bytes(const arrow_inputs* in) {
  return 8.0 * (double)(in->nD + in->nB + in->ng + in->nC + in->nb) + 8.0 * (double)(in->atoms + 1) +
         8.0 * (double)in->atoms + 8.0 * (double)(in->ng + in->nb + (size_t)in->atoms);
}

static inline void arrow_inputs_free(arrow_inputs* in) {
  free(in->atom_offsets);
  free(in->row_dims);
  free(in->border_dims);
  free(in->D);
  free(in->B);
  free(in->g_t);
  free(in->hbb);
  free(in->g_b);
}

#endif
