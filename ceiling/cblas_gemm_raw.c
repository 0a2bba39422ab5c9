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
#include "ceiling_cli.h"  /* first: it sets _POSIX_C_SOURCE */

#include <cblas.h>

#include "gemm/shapes.h"

/* OpenBLAS extensions (declared in its cblas.h on most distributions; repeated
 * here so the program also builds against headers that omit them). */
char* openblas_get_corename(void);
void openblas_set_num_threads(int num_threads);

static void run_gemm(int is_f64, int m, int n, int k, const void* a, const void* b, void* c) {
  if (is_f64)
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, (const double*)a, k,
                (const double*)b, n, 0.0, (double*)c, n);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, (const float*)a, k,
                (const float*)b, n, 0.0f, (float*)c, n);
}

int main(int argc, char** argv) {
  const char* program = "ceiling_cblas_gemm_raw";
  struct ceiling_args args;
  const int rc = ceiling_parse_args(argc, argv, &args, program);
  if (rc) return rc == 1 ? 0 : 2;
  const char* names[POPPER_GEMM_SHAPE_COUNT];
  for (int s = 0; s < POPPER_GEMM_SHAPE_COUNT; ++s) names[s] = POPPER_GEMM_SHAPES[s].name;
  if (ceiling_check_shapes(&args, names, POPPER_GEMM_SHAPE_COUNT, program)) return 2;
  if (args.list) {
    for (int s = 0; s < POPPER_GEMM_SHAPE_COUNT; ++s)
      printf("%s,%d,%d,%d,%s\n", POPPER_GEMM_SHAPES[s].name, POPPER_GEMM_SHAPES[s].m, POPPER_GEMM_SHAPES[s].n,
             POPPER_GEMM_SHAPES[s].k, POPPER_GEMM_SHAPES[s].set);
    return 0;
  }
  const int threads = args.threads, reps = args.reps;

  openblas_set_num_threads(threads);
  const char* core = openblas_get_corename();
  fprintf(stderr, "# blas_core: %s\n", core);
  ceiling_print_header();

  for (int s = 0; s < POPPER_GEMM_SHAPE_COUNT; ++s) {
    const struct popper_gemm_shape* sh = &POPPER_GEMM_SHAPES[s];
    if (!ceiling_shape_selected(&args, sh->name)) continue;
    for (int p = 0; p < 2; ++p) {
      const int is_f64 = p == 1;
      const char* prec = is_f64 ? "f64" : "f32";
      if (!ceiling_precision_selected(&args, prec)) continue;
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
      ceiling_fill(a, na, is_f64, 1);
      ceiling_fill(b, nb, is_f64, 2);
      memset(c, 0, nc * elem);

      /* Warm-up call also sizes the repetition: iterations so that one rep >= kMinRepSeconds. */
      double t0 = ceiling_now();
      run_gemm(is_f64, sh->m, sh->n, sh->k, a, b, c);
      const long iters = ceiling_iterations(ceiling_now() - t0);
      run_gemm(is_f64, sh->m, sh->n, sh->k, a, b, c);

      const double flop = 2.0 * sh->m * sh->n * (double)sh->k;
      const double bytes = (double)(na + nb + nc) * (double)elem;
      for (int r = 0; r < reps; ++r) {
        const double start = ceiling_now();
        for (long it = 0; it < iters; ++it) run_gemm(is_f64, sh->m, sh->n, sh->k, a, b, c);
        const double per_iter = (ceiling_now() - start) / (double)iters;
        char backend[96];
        snprintf(backend, sizeof backend, "openblas:%s", core);
        ceiling_print_row("gemm", backend, sh->name, prec, threads, r, iters, per_iter, flop, bytes, "not_verified");
        fprintf(stderr, "ceiling gemm %s %s threads=%d rep %d/%d: %.3f GFLOP/s\n", sh->name, prec, threads, r + 1,
                reps, flop / per_iter * 1e-9);
      }
      free(a); free(b); free(c);
    }
  }
  return 0;
}
