/* The GEMM ceiling loop shared by every vendor's raw-C program
 * (cblas_gemm_raw.c: OpenBLAS, blis_gemm_raw.c: BLIS):
 *
 *   C = alpha * A * B + beta * C   (row-major, NoTrans/NoTrans, alpha = 1, beta = 0)
 *   FLOP = 2 m n k;  bytes = compulsory DRAM traffic (m k + k n + m n) * sizeof(T):
 *   A and B read once, C written once (beta = 0: C is never read).
 *
 * For each shape of workloads/gemm/shapes.h and each precision: warm up, check
 * the product (workloads/gemm/product_check.h: the rows carry its verdict, "incorrect: ..." when
 * the library got it wrong), size the repetition (>= --min-time, 0.2 s by
 * default; ceiling_repetition_iterations), time --reps repetitions, one CSV row each; with --cache cold
 * every timed call follows an eviction (ceiling_time_calls). The vendor
 * program supplies only the call and its backend label, so every vendor is
 * timed by the same code. Header-only, C11. */
#ifndef POPPER_GEMM_CEILING_H
#define POPPER_GEMM_CEILING_H

#include "popper/ceiling_cli.h" /* first: it sets _POSIX_C_SOURCE */

#include "impl/common/huge_pages.h"
#include "workloads/gemm/product_check.h"
#include "workloads/gemm/shapes.h"

/* One row-major NN product; a, b, c hold float (is_f64 == 0) or double. */
typedef void (*ceiling_gemm_fn)(int is_f64, int m, int n, int k, const void* a, const void* b, void* c);

struct ceiling_gemm_call {
  ceiling_gemm_fn gemm;
  int is_f64, m, n, k;
  const void *a, *b;
  void* c;
};
static void ceiling_gemm_once(void* ctx) {
  const struct ceiling_gemm_call* g = (const struct ceiling_gemm_call*)ctx;
  g->gemm(g->is_f64, g->m, g->n, g->k, g->a, g->b, g->c);
}

/* Runs the loop; backend is the CSV backend column ("openblas:SkylakeX", "blis:skx").
 * Returns the process exit code. */
static int ceiling_gemm_run(const struct ceiling_args* args, const char* program, const char* backend,
                            ceiling_gemm_fn gemm) {
  const int threads = args->threads, reps = args->reps;
  ceiling_print_header();
  for (int s = 0; s < POPPER_GEMM_SHAPE_COUNT; ++s) {
    const struct popper_gemm_shape* sh = &POPPER_GEMM_SHAPES[s];
    if (!ceiling_shape_selected(args, sh->name)) continue;
    for (int p = 0; p < 2; ++p) {
      const int is_f64 = p == 1;
      const char* prec = is_f64 ? "f64" : "f32";
      if (!ceiling_precision_selected(args, prec)) continue;
      const size_t elem = is_f64 ? sizeof(double) : sizeof(float);
      const size_t na = (size_t)sh->m * (size_t)sh->k, nb = (size_t)sh->k * (size_t)sh->n,
                   nc = (size_t)sh->m * (size_t)sh->n;
      /* Each on a page, as the suite's (POPPER_OPERAND_ALIGNMENT says why). */
      void* a = popper_buffer_alloc(na * elem, POPPER_OPERAND_ALIGNMENT, 0);
      void* b = popper_buffer_alloc(nb * elem, POPPER_OPERAND_ALIGNMENT, 0);
      void* c = popper_buffer_alloc(nc * elem, POPPER_OPERAND_ALIGNMENT, 0);
      if (!a || !b || !c) {
        fprintf(stderr, "%s: out of memory for shape %s\n", program, sh->name);
        popper_buffer_free(a, na * elem, 0), popper_buffer_free(b, nb * elem, 0), popper_buffer_free(c, nc * elem, 0);
        return 1;
      }
      ceiling_fill(a, na, is_f64, 1);
      ceiling_fill(b, nb, is_f64, 2);
      memset(c, 0, nc * elem);

      /* The first call pays the library's one-time set-up. */
      gemm(is_f64, sh->m, sh->n, sh->k, a, b, c);
      /* The suites' check and labels (product_check.h). */
      const int samples = popper_gemm_check_samples(sh->m, sh->n, sh->k);
      char verdict[96];
      popper_gemm_check_label(popper_gemm_check_product(is_f64, sh->m, sh->n, sh->k, a, b, c, samples, 1.0), samples,
                              verdict, sizeof verdict);
      const double flop = 2.0 * sh->m * sh->n * (double)sh->k;
      const double bytes = (double)(na + nb + nc) * (double)elem;
      struct ceiling_gemm_call call = {gemm, is_f64, sh->m, sh->n, sh->k, a, b, c};
      const long iters = ceiling_repetition_iterations(args, ceiling_gemm_once, &call);
      for (int r = 0; r < reps; ++r) {
        const double per_iter = ceiling_time_calls(args, iters, ceiling_gemm_once, &call);
        ceiling_print_row("gemm", backend, sh->name, prec, threads, r, iters, per_iter, flop, bytes, verdict);
        fprintf(stderr, "%s gemm %s %s threads=%d rep %d/%d: %.3f GFLOP/s\n", backend, sh->name, prec, threads, r + 1,
                reps, flop / per_iter * 1e-9);
      }
      popper_buffer_free(a, na * elem, 0), popper_buffer_free(b, nb * elem, 0), popper_buffer_free(c, nc * elem, 0);
    }
  }
  return 0;
}

static const char* ceiling_gemm_shape_name(int s) { return POPPER_GEMM_SHAPES[s].name; }
static void ceiling_gemm_list_line(int s) {
  const struct popper_gemm_shape* sh = &POPPER_GEMM_SHAPES[s];
  printf("%s,%d,%d,%d,%s\n", sh->name, sh->m, sh->n, sh->k, sh->set);
}

/* ceiling_open over the GEMM shapes: -1 to run, else main's exit code. */
static int ceiling_gemm_open(int argc, char** argv, const char* program, struct ceiling_args* args) {
  ceiling_cold_supported = 1;
  return ceiling_open(argc, argv, program, POPPER_GEMM_SHAPE_COUNT, ceiling_gemm_shape_name, ceiling_gemm_list_line,
                      args);
}

#endif
