/* Ceiling of the sae family: the dense route in raw C over CBLAS/LAPACKE.
 *
 *   A_i = L_i L_i^T + lambda I = R_i R_i^T          (dsyrk + dpotrf, setup)
 *   M_i = I - Z_i^T Z_i,  Z_i = R_i^{-1} L_i        (dtrsm + dsyrk)
 *   A   = rho I + sum_i sum_{k,k'} c_{i,k} c_{i,k'} M_i  on block (k, k')  (lower blocks)
 *   apply: y = A x (dsymv, A formed once, untimed)
 *   solve: form A + dpotrf + dpotrs, timed as one route
 *
 * Same shapes (workloads/sae/shapes.h) and inputs (workloads/sae/generate.h) as
 * bench_sae; declines a shape above the same memory/flop budgets (stderr).
 * Arguments, timing and CSV rows: popper/ceiling_cli.h. The dense matrix is one
 * problem, so OpenBLAS itself runs --threads threads. The backend column
 * names the OpenBLAS core ("openblas:Cooperlake"). */
#include "popper/ceiling_cli.h" /* first: it sets _POSIX_C_SOURCE */

#include <cblas.h>
#include <lapacke.h>

#include "workloads/sae/generate.h"
#include "workloads/sae/shapes.h"

typedef struct problem {
  size_t n, K, p, m, q, dim;
  size_t* blocks;
  double *weights, *l, *r, *x, *b;
} problem;

static int build(const sae_shape* sh, problem* pr) {
  pr->n = (size_t)sh->rows, pr->K = (size_t)sh->K, pr->p = (size_t)sh->p, pr->m = (size_t)sh->m, pr->q = (size_t)sh->q;
  pr->dim = pr->K * pr->p;
  pr->blocks = malloc(pr->n * pr->m * sizeof(size_t));
  pr->weights = malloc(pr->n * pr->m * sizeof(double));
  pr->l = malloc(pr->n * pr->q * pr->p * sizeof(double));
  pr->r = calloc(pr->n * pr->q * pr->q, sizeof(double));
  pr->x = malloc(pr->dim * sizeof(double));
  pr->b = malloc(pr->dim * sizeof(double));
  if (!pr->blocks || !pr->weights || !pr->l || !pr->r || !pr->x || !pr->b) return -1;
  sae_generate(sh, pr->blocks, pr->weights, pr->l, pr->x, pr->b);
  const int q = (int)pr->q, p = (int)pr->p;
  for (size_t i = 0; i < pr->n; ++i) {
    double* r = pr->r + i * pr->q * pr->q;
    cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, q, p, 1.0, pr->l + i * pr->q * pr->p, p, 0.0, r, q);
    for (size_t c = 0; c < pr->q; ++c) r[c * pr->q + c] += SAE_LAMBDA;
    if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', q, r, q) != 0) return -2;
  }
  return 0;
}

static void release(problem* pr) {
  free(pr->blocks), free(pr->weights), free(pr->l), free(pr->r), free(pr->x), free(pr->b);
}

/* Forms the lower blocks of A into a (dim x dim, row-major). z: q p, mm: p p scratch. */
static void form(const problem* pr, double* a, double* z, double* mm) {
  const size_t n = pr->dim, p = pr->p, q = pr->q, m = pr->m;
  memset(a, 0, n * n * sizeof(double));
  for (size_t e = 0; e < n; ++e) a[e * n + e] = SAE_RHO;
  size_t kb[64];
  double cb[64];
  for (size_t i = 0; i < pr->n; ++i) {
    size_t d = 0;
    for (size_t s = 0; s < m; ++s) {
      const size_t k = pr->blocks[i * m + s];
      const double w = pr->weights[i * m + s];
      if (w == 0.0) continue;
      size_t t = 0;
      while (t < d && kb[t] != k) ++t;
      if (t == d) kb[d] = k, cb[d] = 0.0, ++d;
      cb[t] += w;
    }
    if (d == 0) continue;
    memset(mm, 0, p * p * sizeof(double));
    if (q > 0) {
      memcpy(z, pr->l + i * q * p, q * p * sizeof(double));
      cblas_dtrsm(CblasRowMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, (int)q, (int)p, 1.0,
                  pr->r + i * q * q, (int)q, z, (int)p);
      cblas_dsyrk(CblasRowMajor, CblasLower, CblasTrans, (int)p, (int)q, -1.0, z, (int)p, 0.0, mm, (int)p);
    }
    for (size_t r = 0; r < p; ++r) {
      mm[r * p + r] += 1.0;
      for (size_t c = r + 1; c < p; ++c) mm[r * p + c] = mm[c * p + r];
    }
    for (size_t u = 0; u < d; ++u)
      for (size_t v = 0; v <= u; ++v) {
        const size_t kr = kb[u] > kb[v] ? kb[u] : kb[v], kc = kb[u] > kb[v] ? kb[v] : kb[u];
        double* blk = a + kr * p * n + kc * p;
        for (size_t r = 0; r < p; ++r) cblas_daxpy((int)p, cb[u] * cb[v], mm + r * p, 1, blk + r * n, 1);
      }
  }
}

static const char* shape_name(int s) { return sae_shapes[s].name; }

int main(int argc, char** argv) {
  const char* program = "ceiling_lapack_sae_raw";
  struct ceiling_args args;
  const int rc = ceiling_open(argc, argv, program, sae_shape_count, shape_name, NULL, &args);
  if (rc >= 0) return rc;
  if (args.probe) {
    printf("# config: %s\n", openblas_get_corename());
    return 0;
  }
  const int reps = args.reps, threads = args.threads;
  openblas_set_num_threads(threads);
  char backend[96];
  snprintf(backend, sizeof backend, "openblas:%s", openblas_get_corename());
  ceiling_print_header();
  for (int s = 0; s < sae_shape_count; ++s) {
    const sae_shape* sh = &sae_shapes[s];
    if (!ceiling_shape_selected(&args, sh->name) || !ceiling_precision_selected(&args, "f64")) continue;
    if (sh->m > 64) {
      fprintf(stderr, "# skipped %s: m = %d > 64 support entries per row (ceiling's fixed scratch)\n", sh->name, sh->m);
      continue;
    }
    const double dim = (double)sh->K * (double)sh->p, bytes = dim * dim * 8.0;
    const double dn = sh->rows, dm = sh->m, dq = sh->q, dp = sh->p;
    const double form_flop = dn * (dq * dq * dp + dq * dp * (dp + 1) + dm * (dm + 1) * dp * dp);
    const double solve_flop = form_flop + dim * dim * dim / 3 + 4 * dim * dim;
    if (bytes > SAE_DENSE_MAX_BYTES || (sh->op == SAE_OP_SOLVE && solve_flop > SAE_DENSE_MAX_SOLVE_FLOP)) {
      fprintf(stderr, "# skipped %s: dense route needs %.2f GiB, %.3g flop (budgets %.0f GiB, %.0e flop)\n", sh->name,
              bytes / 1073741824.0, sh->op == SAE_OP_SOLVE ? solve_flop : 2 * dim * dim,
              SAE_DENSE_MAX_BYTES / 1073741824.0, SAE_DENSE_MAX_SOLVE_FLOP);
      continue;
    }
    problem pr;
    if (build(sh, &pr) != 0) {
      fprintf(stderr, "# skipped %s: input generation failed\n", sh->name);
      release(&pr);
      continue;
    }
    double* a = malloc((size_t)(bytes));
    double* z = malloc(pr.q * pr.p * sizeof(double) + 8);
    double* mm = malloc(pr.p * pr.p * sizeof(double));
    double* y = malloc(pr.dim * sizeof(double));
    if (!a || !z || !mm || !y) {
      fprintf(stderr, "# skipped %s: out of memory\n", sh->name);
      free(a), free(z), free(mm), free(y), release(&pr);
      continue;
    }
    fprintf(stderr, "# %s: dim %zu\n", sh->name, pr.dim);
    if (sh->op == SAE_OP_APPLY) {
      form(&pr, a, z, mm);
      cblas_dsymv(CblasRowMajor, CblasLower, (int)pr.dim, 1.0, a, (int)pr.dim, pr.x, 1, 0.0, y, 1); /* warm-up */
      for (int rep = 0; rep < reps; ++rep) {
        int iters = 0;
        ceiling_pace_begin(&args);
        const double t0 = ceiling_now();
        double t1 = t0;
        while (iters < 1 || t1 - t0 < ceiling_min_rep_seconds) {
          cblas_dsymv(CblasRowMajor, CblasLower, (int)pr.dim, 1.0, a, (int)pr.dim, pr.x, 1, 0.0, y, 1);
          ++iters;
          t1 = ceiling_now();
        }
        ceiling_pace_end(&args);
        ceiling_print_row("sae", backend, sh->name, "f64", threads, rep, iters, (t1 - t0) / iters, 2 * dim * dim,
                          4 * dim * dim + 16 * dim, "not_verified");
      }
    } else {
      for (int rep = -1; rep < reps; ++rep) { /* rep -1: warm-up */
        ceiling_pace_begin(&args);
        const double t0 = ceiling_now();
        form(&pr, a, z, mm);
        memcpy(y, pr.b, pr.dim * sizeof(double));
        int info = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', (int)pr.dim, a, (int)pr.dim);
        if (info == 0) info = LAPACKE_dpotrs(LAPACK_ROW_MAJOR, 'L', (int)pr.dim, 1, a, (int)pr.dim, y, 1);
        const double t1 = ceiling_now();
        ceiling_pace_end(&args);
        if (info != 0) {
          fprintf(stderr, "# %s: dpotrf/dpotrs info %d\n", sh->name, info);
          break;
        }
        if (rep >= 0)
          ceiling_print_row("sae", backend, sh->name, "f64", threads, rep, 1, t1 - t0, solve_flop, 24 * dim * dim,
                            "not_verified");
      }
    }
    fflush(stdout);
    free(a), free(z), free(mm), free(y), release(&pr);
  }
  return 0;
}
