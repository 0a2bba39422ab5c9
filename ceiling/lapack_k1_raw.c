/* Ceiling tier of the arrow family: raw C LAPACKE over the same packed inputs
 * as bench_arrow (bench/arrow/shapes.h + generate.h, fixed-seed PRNG). Each
 * atom's dense bordered Hessian H = [[blockdiag(D_i + rho_t I), B], [B^T, C + rho_beta I]]
 * (order [t_0..t_{n-1}, beta]) is assembled and solved with dpotrf + dpotrs,
 * H delta = -g. Atoms are split over --threads pthreads (OpenBLAS single-threaded
 * inside, so threads are across atoms as in the other tiers).
 *
 * CSV on stdout, one row per repetition (bench producer protocol):
 * family,tier,backend,shape,precision,threads,rep,iterations,seconds_per_iter,flop_per_iter,bytes_per_iter,verdict
 * flop_per_iter counts the useful row work (rows x arrow_row_flops), the same
 * count every arrow tier reports, so ratios compare atoms/s. */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <lapacke.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arrow/generate.h"
#include "arrow/shapes.h"

static const double kRhoT = 1e-3, kRhoBeta = 1e-3;

typedef struct worker {
  const arrow_inputs* in;
  int atom_begin, atom_end;
  int failures;
  double checksum;
} worker;

static void* solve_atoms(void* arg) {
  worker* w = (worker*)arg;
  const arrow_inputs* in = w->in;
  size_t offD = 0, offB = 0, offg = 0;
  int a;
  /* Offsets of the first atom: prefix over the (uniform-d, uniform-k) CSR. */
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
    else
      w->checksum += x[0] + x[N - 1];
    free(H);
    free(x);
    offD += n * d * d;
    offB += n * d * k;
    offg += n * d;
  }
  return NULL;
}

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One full class solve over `threads` workers; returns the failure count. */
static int solve_class(const arrow_inputs* in, int threads) {
  worker w[64];
  pthread_t tid[64];
  int t, failures = 0;
  for (t = 0; t < threads; ++t) {
    w[t].in = in;
    w[t].atom_begin = (int)((long long)in->atoms * t / threads);
    w[t].atom_end = (int)((long long)in->atoms * (t + 1) / threads);
    w[t].failures = 0;
    w[t].checksum = 0.0;
  }
  for (t = 1; t < threads; ++t) pthread_create(&tid[t], NULL, solve_atoms, &w[t]);
  solve_atoms(&w[0]);
  for (t = 1; t < threads; ++t) pthread_join(tid[t], NULL);
  for (t = 0; t < threads; ++t) failures += w[t].failures;
  return failures;
}

int main(int argc, char** argv) {
  const char* filters[32];
  int nfilters = 0, reps = 5, threads = 1, i, s;
  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc && nfilters < 32) {
      filters[nfilters++] = argv[++i];
    } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--list-shapes") == 0) {
      for (s = 0; s < arrow_shape_count; ++s) printf("%s\n", arrow_shapes[s].name);
      return 0;
    } else {
      fprintf(stderr, "usage: %s [--shape NAME]... [--reps N] [--threads T] [--list-shapes]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1 || threads < 1 || threads > 64) {
    fprintf(stderr, "reps must be >= 1 and threads in 1..64\n");
    return 2;
  }
  openblas_set_num_threads(1);
  printf("family,tier,backend,shape,precision,threads,rep,iterations,seconds_per_iter,flop_per_iter,bytes_per_iter,verdict\n");
  for (s = 0; s < arrow_shape_count; ++s) {
    const arrow_shape* sh = &arrow_shapes[s];
    arrow_inputs in;
    double flop, bytes;
    int selected = nfilters == 0, r;
    for (i = 0; i < nfilters; ++i) selected |= strcmp(filters[i], sh->name) == 0;
    if (!selected) continue;
    if (arrow_inputs_make(sh, &in) != 0) {
      fprintf(stderr, "# %s: out of memory\n", sh->name);
      return 1;
    }
    flop = arrow_inputs_rows(&in) * arrow_row_flops(sh->d, sh->k);
    bytes = arrow_inputs_bytes(&in);
    fprintf(stderr, "# %s: %d atoms, %.0f rows, warm-up\n", sh->name, in.atoms, arrow_inputs_rows(&in));
    if (solve_class(&in, threads) != 0) fprintf(stderr, "# %s: some atoms failed to factor\n", sh->name);
    for (r = 0; r < reps; ++r) {
      int iters = 0;
      const double t0 = now_seconds();
      double t1;
      do {
        solve_class(&in, threads);
        ++iters;
        t1 = now_seconds();
      } while (t1 - t0 < 0.2);
      printf("arrow,ceiling,lapacke,%s,f64,%d,%d,%d,%.9g,%.6g,%.6g,not_verified\n", sh->name, threads, r, iters,
             (t1 - t0) / iters, flop, bytes);
      fflush(stdout);
    }
    arrow_inputs_free(&in);
  }
  return 0;
}
