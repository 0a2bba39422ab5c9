/* The dot family's ceiling: OpenBLAS's cblas_sdot called from C, the best a
 * caller of the vendor library gets on this machine, over popper's
 * popper/ceiling_cli.h (arguments, timing, the CSV rows popper reads).
 *   --probe  prints the OpenBLAS kernel set this environment loads, so popper
 *            can time the ceiling under each one the CPU runs.
 * Each row is checked before it is timed: |sdot - x.y| <= (gamma_n + gamma64_n) S. */
#include "popper/ceiling_cli.h" /* first: it sets _POSIX_C_SOURCE */

#include <cblas.h>
#include <math.h>

#include "workloads/dot_shapes.h"

char* openblas_get_corename(void);
void openblas_set_num_threads(int);

static const char* shape_name(int i) { return DOTKIT_DOT_SHAPES[i].name; }

static double gamma_k(double k, double u) { return k * u / (1.0 - k * u); }

struct sdot_call {
  int n;
  const float *x, *y;
  volatile float sink;
};
static void sdot_once(void* ctx) {
  struct sdot_call* c = (struct sdot_call*)ctx;
  c->sink = cblas_sdot(c->n, c->x, 1, c->y, 1);
}

int main(int argc, char** argv) {
  struct ceiling_args a;
  const int rc = ceiling_open(argc, argv, "ceiling_cblas_sdot_raw", DOTKIT_DOT_SHAPE_COUNT, shape_name, NULL, &a);
  if (rc >= 0) return rc;
  if (a.probe) {
    printf("# config: %s\n", openblas_get_corename());
    return 0;
  }
  if (!ceiling_precision_selected(&a, "f32")) return 0;
  openblas_set_num_threads(a.threads);
  char backend[96];
  snprintf(backend, sizeof backend, "openblas:%s", openblas_get_corename());
  ceiling_print_header();
  for (int s = 0; s < DOTKIT_DOT_SHAPE_COUNT; ++s) {
    const struct dotkit_dot_shape* sh = &DOTKIT_DOT_SHAPES[s];
    if (!ceiling_shape_selected(&a, sh->name)) continue;
    const long n = sh->n;
    float* x = malloc((size_t)n * sizeof *x);
    float* y = malloc((size_t)n * sizeof *y);
    if (!x || !y) {
      fprintf(stderr, "ceiling_cblas_sdot_raw: out of memory for %s\n", sh->name);
      return 1;
    }
    ceiling_fill(x, (size_t)n, 0, 1);
    ceiling_fill(y, (size_t)n, 0, 2);

    volatile float sink = cblas_sdot((int)n, x, 1, y, 1);
    double exact = 0, sum_abs = 0;
    for (long i = 0; i < n; ++i) {
      exact += (double)x[i] * (double)y[i];
      sum_abs += fabs((double)x[i] * (double)y[i]);
    }
    const double err = fabs((double)sink - exact);
    const double bound = (gamma_k((double)n, ldexp(1.0, -24)) + gamma_k((double)n, ldexp(1.0, -53))) * sum_abs;
    char verdict[128];
    if (err <= bound) snprintf(verdict, sizeof verdict, "verified");
    else snprintf(verdict, sizeof verdict, "incorrect: error %.3e > bound %.3e", err, bound);

    /* ceiling_time_calls times the repetition between the pace probe's two
     * halves and then hands the CPUs to the other side of the ratio when
     * popper runs the two in turns (popper/turns.h). */
    struct sdot_call call = {(int)n, x, y, 0.0f};
    const long iters = ceiling_repetition_iterations(&a, sdot_once, &call);
    for (int r = 0; r < a.reps; ++r) {
      const double per_iter = ceiling_time_calls(&a, iters, sdot_once, &call);
      ceiling_print_row("dot", backend, sh->name, "f32", a.threads, r, iters, per_iter, 2.0 * (double)n,
                        8.0 * (double)n, verdict);
    }
    (void)sink;
    free(x);
    free(y);
  }
  return 0;
}
