/* The product check behind every "verified" GEMM bench row: the suites'
 * tiers (falsify/gemm/testbed.hpp check_product_entries) and the ceiling
 * programs (ceiling/gemm_ceiling.h) alike, so a claim judged against the
 * ceiling (BENCH-GEMM-001/002) rests on a row checked as the tiers are.
 *
 *   C = A B (row-major NoTrans, alpha = 1, beta = 0); exact_ij = the dot
 *   product evaluated in FP64; entry (i, j) passes iff
 *   |c_ij - exact_ij| <= (gamma_{k+2}(s u) + gamma_k(2^-53)) (|A||B|)_ij
 *   gamma_j(u) = j u / (1 - j u), u = 2^-24 (f32) or 2^-53 (f64), s the
 *   roundoff scale (2 for the tensor cores' truncating alignment)
 *
 * Every entry when `samples` is 0, else `samples` entries drawn by a fixed
 * LCG and both corners: a large product's full FP64 reference would cost
 * more than the benchmark. The first term is the kernel's error
 * (gemm_correctness at f = 1), the second that of the FP64 evaluation.
 * FALSIFY-GEMM-018. Header-only, C11 and C++. */
#ifndef POPPER_WORKLOADS_GEMM_PRODUCT_CHECK_H
#define POPPER_WORKLOADS_GEMM_PRODUCT_CHECK_H

#include <math.h>
#include <stdio.h>

/* Mutation point of FALSIFY-GEMM-018 (POPPER_MUTANT: live only in the contract
 * tests; the bench suites compile it false and the C ceilings 0). */
#ifdef __cplusplus
#include "popper/mutant.hpp"
#else
#define POPPER_MUTANT(name) 0
#endif

struct popper_gemm_check {
  int ok;                        /* every checked entry within its bound (NaN fails) */
  double worst_err, worst_bound; /* the entry with the largest err / bound */
};

static inline double popper_gemm_check_gamma(double j, double u) { return j * u / (1.0 - j * u); }

static inline double popper_gemm_check_at(const void* p, int is_f64, long idx) {
  return is_f64 ? ((const double*)p)[idx] : (double)((const float*)p)[idx];
}

/* a (m x k), b (k x n), c (m x n): float, or double when is_f64. */
static inline struct popper_gemm_check popper_gemm_check_product(int is_f64, long m, long n, long k, const void* a,
                                                                 const void* b, const void* c, int samples,
                                                                 double roundoff_scale) {
  const double u = is_f64 ? ldexp(1.0, -53) : ldexp(1.0, -24);
  const double g = popper_gemm_check_gamma((double)k + 2.0, roundoff_scale * u) +
                   popper_gemm_check_gamma((double)k, ldexp(1.0, -53));
  struct popper_gemm_check r = {1, 0.0, 0.0};
  double worst_ratio = -1.0;
  int corners = samples > 0 && !POPPER_MUTANT("gemm-product-check-skips-corners");
  const long entries = samples > 0 ? (long)samples + 2 * corners : m * n;
  unsigned long long x = 12345;
  for (long e = 0; e < entries; ++e) {
    long i, j;
    if (samples == 0) {
      i = e / n, j = e % n;
    } else if (e < samples) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      i = (long)((x >> 33) % (unsigned long long)m);
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      j = (long)((x >> 33) % (unsigned long long)n);
    } else {
      i = e == samples ? 0 : m - 1, j = e == samples ? 0 : n - 1;
    }
    double exact = 0.0, mag = 0.0;
    for (long p = 0; p < k; ++p) {
      const double v = popper_gemm_check_at(a, is_f64, i * k + p) * popper_gemm_check_at(b, is_f64, p * n + j);
      exact += v;
      mag += fabs(v);
    }
    const double bound = g * mag, err = fabs(popper_gemm_check_at(c, is_f64, i * n + j) - exact);
    if (!(err <= bound)) r.ok = 0; /* also catches NaN */
    const double ratio = bound > 0.0 ? err / bound : (err == 0.0 ? 0.0 : INFINITY);
    if (!(ratio <= worst_ratio)) worst_ratio = ratio, r.worst_err = err, r.worst_bound = bound;
  }
  return r;
}

/* How many entries the bench checks: 0 (every one) up to 256^3 multiply-adds, else 256. */
static inline int popper_gemm_check_samples(long m, long n, long k) {
  return (double)m * (double)n * (double)k <= 256.0 * 256.0 * 256.0 ? 0 : 256;
}

/* The bench row's verdict: "verified", "verified(sampled 256)" or
 * "incorrect: max err E > bound B". */
static inline void popper_gemm_check_label(struct popper_gemm_check r, int samples, char* out, size_t cap) {
  if (!r.ok) snprintf(out, cap, "incorrect: max err %.3e > bound %.3e", r.worst_err, r.worst_bound);
  else snprintf(out, cap, "%s", samples > 0 ? "verified(sampled 256)" : "verified");
}

#endif
