/* Deterministic inputs of an sae shape, shared by bench_sae and the ceiling
 * program so both time the same problem. Valid C11 and C++20.
 *   blocks[i m + s] in [0, K) (drawn with replacement: repeats occur)
 *   weights[i m + s] in [-1, 1)
 *   l[i q p + c p + j] in sqrt(3/p) [-1, 1)  (rows of L_i have norm ~ 1)
 *   x, b in [-1, 1)^(K p) */
#ifndef POPPER_WORKLOADS_SAE_GENERATE_H
#define POPPER_WORKLOADS_SAE_GENERATE_H
#include <math.h>
#include <stddef.h>

#include "workloads/sae/shapes.h"

static inline unsigned long long sae_lcg_next(unsigned long long* s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return *s;
}
static inline double sae_lcg_uniform(unsigned long long* s) {
  return (double)(sae_lcg_next(s) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static inline void sae_generate(const sae_shape* sh, size_t* blocks, double* weights, double* l, double* x, double* b) {
  unsigned long long s = sh->seed;
  const size_t n = (size_t)sh->rows, m = (size_t)sh->m, q = (size_t)sh->q, p = (size_t)sh->p, K = (size_t)sh->K;
  const double scale = sqrt(3.0 / (double)sh->p);
  for (size_t e = 0; e < n * m; ++e) {
    blocks[e] = (size_t)((sae_lcg_next(&s) >> 33) % K);
    weights[e] = sae_lcg_uniform(&s);
  }
  for (size_t e = 0; e < n * q * p; ++e) l[e] = scale * sae_lcg_uniform(&s);
  for (size_t e = 0; e < K * p; ++e) x[e] = sae_lcg_uniform(&s);
  for (size_t e = 0; e < K * p; ++e) b[e] = sae_lcg_uniform(&s);
}

/* Ridge of the Gauss-Newton local blocks A_i = L_i L_i^T + lambda I and the Schur shift rho. */
#define SAE_LAMBDA 0.1
#define SAE_RHO 1e-2

#endif
