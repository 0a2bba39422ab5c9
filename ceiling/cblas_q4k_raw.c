/* The FP32 comparison row of the q4k family: OpenBLAS SGEMV on the same shape
 * (the hand Q4_K GEMV must be >= 3x faster: it reads 0.5625 bytes per weight
 * against 4).
 *
 *   y = A x,  A rows x cols FP32 row-major (cblas_sgemv, NoTrans)
 *
 * Rows: family q4k, tier ceiling, backend openblas:<core>, precision f32.
 * Verification: sampled rows against an FP64 product; the label carries
 * max |y - y_ref| / sum |a x|. Timings below the read bound are invalid
 * (ceiling/read_bound.h). Shapes: workloads/q4k/shapes.h. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "popper/ceiling_cli.h"
#include "read_bound.h"
#include "workloads/q4k/shapes.h"

char* openblas_get_corename(void);
void openblas_set_num_threads(int);

static const char* shape_name(int i) { return POPPER_Q4K_SHAPES[i].name; }

struct sgemv_call {
  const float *A, *x;
  float* y;
  int rows, cols;
};
static void run_sgemv(void* ctx) {
  const struct sgemv_call* c = (const struct sgemv_call*)ctx;
  cblas_sgemv(CblasRowMajor, CblasNoTrans, c->rows, c->cols, 1.0f, c->A, c->cols, c->x, 1, 0.0f, c->y, 1);
}

int main(int argc, char** argv) {
  struct ceiling_args a;
  ceiling_cold_supported = 1;
  const int rc = ceiling_open(argc, argv, "ceiling_cblas_q4k_raw", POPPER_Q4K_SHAPE_COUNT, shape_name, NULL, &a);
  if (rc >= 0) return rc;
  if (a.probe) { /* the OpenBLAS core this environment loads (vendors.hpp) */
    printf("# config: %s\n", openblas_get_corename());
    return 0;
  }
  if (!ceiling_precision_selected(&a, "f32")) return 0;
  openblas_set_num_threads(a.threads);
  char backend[96];
  snprintf(backend, sizeof backend, "openblas:%s", openblas_get_corename());
  ceiling_print_header();
  for (int s = 0; s < POPPER_Q4K_SHAPE_COUNT; ++s) {
    const struct popper_q4k_shape* sh = &POPPER_Q4K_SHAPES[s];
    if (!ceiling_shape_selected(&a, sh->name)) continue;
    const size_t n = (size_t)sh->rows * (size_t)sh->cols;
    float* A = (float*)malloc(n * sizeof *A);
    float* x = (float*)malloc((size_t)sh->cols * sizeof *x);
    float* y = (float*)malloc((size_t)sh->rows * sizeof *y);
    double* seconds = (double*)malloc((size_t)a.reps * sizeof *seconds);
    double* sorted = (double*)malloc((size_t)a.reps * sizeof *sorted);
    double* paces = (double*)malloc((size_t)a.reps * sizeof *paces);
    if (!A || !x || !y || !seconds || !sorted || !paces) {
      printf("# skipped: cannot allocate %zu floats\n", n);
      return 0;
    }
    ceiling_fill(A, n, 0, POPPER_Q4K_SEED);
    ceiling_fill(x, (size_t)sh->cols, 0, POPPER_Q4K_SEED + 1);
    fprintf(stderr, "ceiling_cblas_q4k_raw: %s, %d thread(s), %s\n", sh->name, a.threads, backend);
    /* The bound first, before OpenBLAS's worker threads run (they spin for a while after a call). */
    const double bytes = 4.0 * (double)n + 4.0 * sh->cols + 4.0 * sh->rows;
    const double bound = ceiling_read_bound(bytes, a.threads, 5);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, sh->rows, sh->cols, 1.0f, A, sh->cols, x, 1, 0.0f, y, 1);
    double worst = 0;
    const int step = sh->rows / 256 > 1 ? sh->rows / 256 : 1;
    for (int r = 0; r < sh->rows; r += step) {
      double ref = 0, mag = 0;
      for (int i = 0; i < sh->cols; ++i) {
        const double p = (double)A[(size_t)r * (size_t)sh->cols + (size_t)i] * x[i];
        ref += p, mag += fabs(p);
      }
      const double e = mag > 0 ? fabs((double)y[r] - ref) / mag : 0;
      if (e > worst || e != e) worst = e;
    }
    char verdict[160];
    snprintf(verdict, sizeof verdict, "verified(err %.2e%s)", worst, sh->rows > 256 ? " sampled 256 rows" : "");
    struct sgemv_call call = {A, x, y, sh->rows, sh->cols};
    const long iters = ceiling_repetition_iterations(&a, run_sgemv, &call);
    for (int rep = 0; rep < a.reps; ++rep) {
      sorted[rep] = seconds[rep] = ceiling_time_calls(&a, iters, run_sgemv, &call);
      paces[rep] = ceiling_pace_seconds;
    }
    ceiling_bound_check(bytes, sorted, a.reps, ceiling_read_bound_again(bound, bytes, a.threads, 5), a.threads, verdict,
                        sizeof verdict);
    for (int rep = 0; rep < a.reps; ++rep)
      ceiling_print_paced_row("q4k", backend, sh->name, "f32", a.threads, rep, iters, seconds[rep],
                              2.0 * (double)sh->rows * sh->cols, bytes, verdict, paces[rep]);
    free(paces), free(sorted), free(seconds), free(y), free(x), free(A);
  }
  return 0;
}
