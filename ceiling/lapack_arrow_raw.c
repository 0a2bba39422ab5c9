/* Ceiling tier of the arrow family: raw C LAPACKE over the same packed inputs
 * as the arrow bench (workloads/arrow/shapes.h + generate.h, fixed-seed PRNG). Each
 * atom's dense bordered Hessian H = [[blockdiag(D_i + rho_t I), B], [B^T, C + rho_beta I]]
 * (order [t_0..t_{n-1}, beta]) is assembled and solved with dpotrf + dpotrs,
 * H delta = -g. Atoms are independent problems, so the program does what a C
 * user would: OpenBLAS runs single-threaded inside each tiny factorization and
 * --threads OpenMP threads split the atoms (a static contiguous split).
 *
 * Arguments, timing and CSV rows: popper/ceiling_cli.h (one row per repetition).
 * flop_per_iter counts the useful row work (rows x arrow_row_flops), the same
 * count every arrow tier reports, so ratios compare atoms/s; bytes_per_iter is
 * the compulsory traffic (inputs once, outputs once). */
#include "popper/ceiling_cli.h" /* first: it sets _POSIX_C_SOURCE */

#include <cblas.h>
#include <lapacke.h>
#include <omp.h>

#include "workloads/arrow/generate.h"
#include "workloads/arrow/shapes.h"

static const double kRhoT = 1e-3, kRhoBeta = 1e-3;

typedef struct worker {
  const arrow_inputs* in;
  int atom_begin, atom_end;
  int failures;
  double checksum;
} worker;

static void solve_atoms(worker* w) {
  const arrow_inputs* in = w->in;
  size_t offD = 0, offB = 0, offg = 0;
  int a;
  /* Offsets of the first atom: prefix over the CSR. */
  for (a = 0; a < w->atom_begin; ++a) {
    const size_t n = (size_t)(in->atom_offsets[a + 1] - in->atom_offsets[a]), d = (size_t)in->row_dims[a],
                 k = (size_t)in->border_dims[a];
    offD += n * d * d;
    offB += n * d * k;
    offg += n * d;
  }
  for (a = w->atom_begin; a < w->atom_end; ++a) {
    const size_t n = (size_t)(in->atom_offsets[a + 1] - in->atom_offsets[a]), d = (size_t)in->row_dims[a],
                 k = (size_t)in->border_dims[a], nt = n * d, N = nt + k;
    const double* C = in->hbb + (size_t)a * k * k;
    const double* gb = in->g_b + (size_t)a * k;
    double* H = (double*)calloc(N * N, sizeof(double));
    double* x = (double*)malloc(sizeof(double) * N);
    size_t i, r, c;
    if (!H || !x) {
      ++w->failures;
      free(H);
      free(x);
      continue;
    }
    for (i = 0; i < n; ++i) {
      const double* Di = in->D + offD + i * d * d;
      const double* Bi = in->B + offB + i * d * k;
      const size_t o = i * d;
      for (c = 0; c < d; ++c)
        for (r = c; r < d; ++r) H[(o + r) + (o + c) * N] = Di[r + c * d] + (r == c ? kRhoT : 0.0);
      for (c = 0; c < k; ++c)
        for (r = 0; r < d; ++r) H[(nt + c) + (o + r) * N] = Bi[r + c * d];
      for (r = 0; r < d; ++r) x[o + r] = -in->g_t[offg + o + r];
    }
    for (c = 0; c < k; ++c) {
      for (r = c; r < k; ++r) H[(nt + r) + (nt + c) * N] = C[r + c * k] + (r == c ? kRhoBeta : 0.0);
      x[nt + c] = -gb[c];
    }
    if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)N, H, (lapack_int)N) != 0 ||
        LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'L', (lapack_int)N, 1, H, (lapack_int)N, x, (lapack_int)N) != 0)
      ++w->failures;
    else w->checksum += x[0] + x[N - 1];
    free(H);
    free(x);
    offD += n * d * d;
    offB += n * d * k;
    offg += n * d;
  }
}

/* One full class solve, atoms split over `threads` OpenMP threads; returns the failure count. */
static int solve_class(const arrow_inputs* in, int threads) {
  int failures = 0;
#pragma omp parallel num_threads(threads) reduction(+ : failures)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    worker w = {in, (int)((long long)in->atoms * t / nt), (int)((long long)in->atoms * (t + 1) / nt), 0, 0.0};
    solve_atoms(&w);
    failures += w.failures;
  }
  return failures;
}

static const char* shape_name(int s) { return arrow_shapes[s].name; }

int main(int argc, char** argv) {
  const char* program = "ceiling_lapack_arrow_raw";
  struct ceiling_args args;
  int s;
  const int rc = ceiling_open(argc, argv, program, arrow_shape_count, shape_name, NULL, &args);
  if (rc >= 0) return rc;
  if (args.probe) {
    printf("# config: %s\n", openblas_get_corename());
    return 0;
  }
  openblas_set_num_threads(1); /* threads go across atoms, never inside one tiny dpotrf */
  char backend[96];
  snprintf(backend, sizeof backend, "openblas:%s", openblas_get_corename());
  ceiling_print_header();
  for (s = 0; s < arrow_shape_count; ++s) {
    const arrow_shape* sh = &arrow_shapes[s];
    arrow_inputs in;
    double flop, bytes;
    int r;
    if (!ceiling_shape_selected(&args, sh->name) || !ceiling_precision_selected(&args, "f64")) continue;
    if (arrow_inputs_make(sh, &in) != 0) {
      fprintf(stderr, "# %s: out of memory\n", sh->name);
      return 1;
    }
    flop = arrow_inputs_rows(&in) * arrow_row_flops(sh->d, sh->k);
    bytes = arrow_inputs_bytes(&in);
    fprintf(stderr, "# %s: %d atoms, %.0f rows, warm-up\n", sh->name, in.atoms, arrow_inputs_rows(&in));
    if (solve_class(&in, args.threads) != 0) fprintf(stderr, "# %s: some atoms failed to factor\n", sh->name);
    for (r = 0; r < args.reps; ++r) {
      long iters = 0;
      ceiling_pace_begin(&args);
      const double t0 = ceiling_now();
      double t1;
      do {
        solve_class(&in, args.threads);
        ++iters;
        t1 = ceiling_now();
      } while (t1 - t0 < ceiling_min_rep_seconds);
      ceiling_pace_end(&args);
      ceiling_print_row("arrow", backend, sh->name, "f64", args.threads, r, iters, (t1 - t0) / (double)iters, flop,
                        bytes, "not_verified");
    }
    arrow_inputs_free(&in);
  }
  return 0;
}
