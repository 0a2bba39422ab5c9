/* Ceiling tier for GEMM: OpenBLAS called directly from C, no wrapper.
 *
 *   C = alpha * A * B + beta * C   (row-major, NoTrans/NoTrans, alpha=1, beta=0)
 *
 * For each shape of bench/gemm/shapes.h and each precision (f32 sgemm, f64
 * dgemm): warm up, pick an iteration count so one repetition lasts >= ~0.2 s,
 * then time --reps repetitions with clock_gettime(CLOCK_MONOTONIC). One CSV
 * row per repetition on stdout (bench producer protocol); progress and the
 * OpenBLAS core name on stderr. OPENBLAS_CORETYPE is read by OpenBLAS at load
 * time, so the caller compares core types by running this program under
 * different environments. */
#define _POSIX_C_SOURCE 199309L
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemm/shapes.h"

/* OpenBLAS extensions (declared in its cblas.h on most distributions; repeated
 * here so the program also builds against headers that omit them). */
char* openblas_get_corename(void);
void openblas_set_num_threads(int num_threads);

#define MAX_FILTERS 64
static const double kMinRepSeconds = 0.2;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Deterministic fill in [-1, 1): a 64-bit LCG, so runs are comparable. */
static void fill(void* buf, size_t count, int is_f64, unsigned long long seed) {
  unsigned long long x = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (size_t i = 0; i < count; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    double v = (double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    if (is_f64) ((double*)buf)[i] = v; else ((float*)buf)[i] = (float)v;
  }
}

static void run_gemm(int is_f64, int m, int n, int k, const void* a, const void* b, void* c) {
  if (is_f64)
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, (const double*)a, k,
                (const double*)b, n, 0.0, (double*)c, n);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, (const float*)a, k,
                (const float*)b, n, 0.0f, (float*)c, n);
}

static int selected(const char* name, const char** filters, int nfilters) {
  if (nfilters == 0) return 1;
  for (int i = 0; i < nfilters; ++i)
    if (strcmp(filters[i], name) == 0) return 1;
  return 0;
}

static void usage(FILE* to) {
  fprintf(to,
          "usage: ceiling_cblas_gemm_raw [--shape NAME]... [--reps N] [--threads T]\n"
          "                              [--precision f32|f64] [--list-shapes]\n");
}

int main(int argc, char** argv) {
  const char* filters[MAX_FILTERS];
  int nfilters = 0, reps = 5, threads = 1, list = 0;
  const char* precision = NULL; /* NULL = both */
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (strcmp(arg, "--list-shapes") == 0) {
      list = 1;
    } else if (i + 1 < argc && strcmp(arg, "--shape") == 0) {
      if (nfilters == MAX_FILTERS) { fprintf(stderr, "too many --shape\n"); return 2; }
      filters[nfilters++] = argv[++i];
    } else if (i + 1 < argc && strcmp(arg, "--reps") == 0) {
      reps = atoi(argv[++i]);
    } else if (i + 1 < argc && strcmp(arg, "--threads") == 0) {
      threads = atoi(argv[++i]);
    } else if (i + 1 < argc && strcmp(arg, "--precision") == 0) {
      precision = argv[++i];
    } else if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "unknown or incomplete argument: %s\n", arg);
      usage(stderr);
      return 2;
    }
  }
  if (reps < 1 || threads < 1) { fprintf(stderr, "--reps and --threads must be >= 1\n"); return 2; }
  if (precision && strcmp(precision, "f32") != 0 && strcmp(precision, "f64") != 0) {
    fprintf(stderr, "--precision must be f32 or f64\n");
    return 2;
  }
  for (int i = 0; i < nfilters; ++i) {
    int known = 0;
    for (int s = 0; s < POPPER_GEMM_SHAPE_COUNT; ++s) known |= strcmp(filters[i], POPPER_GEMM_SHAPES[s].name) == 0;
    if (!known) { fprintf(stderr, "unknown shape: %s (see --list-shapes)\n", filters[i]); return 2; }
  }
  if (list) {
    for (int s = 0; s < POPPER_GEMM_SHAPE_COUNT; ++s)
      printf("%s,%d,%d,%d,%s\n", POPPER_GEMM_SHAPES[s].name, POPPER_GEMM_SHAPES[s].m, POPPER_GEMM_SHAPES[s].n,
             POPPER_GEMM_SHAPES[s].k, POPPER_GEMM_SHAPES[s].set);
    return 0;
  }

  openblas_set_num_threads(threads);
  const char* core = openblas_get_corename();
  fprintf(stderr, "# blas_core: %s\n", core);
  printf("family,tier,backend,shape,precision,threads,rep,iterations,seconds_per_iter,flop_per_iter,"
         "bytes_per_iter,verdict\n");

  for (int s = 0; s < POPPER_GEMM_SHAPE_COUNT; ++s) {
    const struct popper_gemm_shape* sh = &POPPER_GEMM_SHAPES[s];
    if (!selected(sh->name, filters, nfilters)) continue;
    for (int p = 0; p < 2; ++p) {
      const int is_f64 = p == 1;
      const char* prec = is_f64 ? "f64" : "f32";
      if (precision && strcmp(precision, prec) != 0) continue;
      const size_t elem = is_f64 ? sizeof(double) : sizeof(float);
      const size_t na = (size_t)sh->m * (size_t)sh->k, nb = (size_t)sh->k * (size_t)sh->n,
                   nc = (size_t)sh->m * (size_t)sh->n;
      void* a = malloc(na * elem);
      void* b = malloc(nb * elem);
      void* c = malloc(nc * elem);
      if (!a || !b || !c) {
        fprintf(stderr, "out of memory for shape %s\n", sh->name);
        free(a); free(b); free(c);
        return 1;
      }
      fill(a, na, is_f64, 1);
      fill(b, nb, is_f64, 2);
      memset(c, 0, nc * elem);

      /* Warm-up call also sizes the repetition: iterations so that one rep >= kMinRepSeconds. */
      double t0 = now_seconds();
      run_gemm(is_f64, sh->m, sh->n, sh->k, a, b, c);
      double one = now_seconds() - t0;
      run_gemm(is_f64, sh->m, sh->n, sh->k, a, b, c);
      long iters = one > 0 ? (long)(kMinRepSeconds / one) + 1 : 1;
      if (iters < 1) iters = 1;

      const double flop = 2.0 * sh->m * sh->n * (double)sh->k;
      const double bytes = (double)(na + nb + nc) * (double)elem;
      for (int r = 0; r < reps; ++r) {
        double start = now_seconds();
        for (long it = 0; it < iters; ++it) run_gemm(is_f64, sh->m, sh->n, sh->k, a, b, c);
        double per_iter = (now_seconds() - start) / (double)iters;
        printf("gemm,ceiling,openblas:%s,%s,%s,%d,%d,%ld,%.9e,%.6e,%.6e,not_verified\n", core, sh->name, prec,
               threads, r, iters, per_iter, flop, bytes);
        fflush(stdout);
        fprintf(stderr, "ceiling gemm %s %s threads=%d rep %d/%d: %.3f GFLOP/s\n", sh->name, prec, threads, r + 1,
                reps, flop / per_iter * 1e-9);
      }
      free(a); free(b); free(c);
    }
  }
  return 0;
}
