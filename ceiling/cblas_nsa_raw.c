/* Ceiling tier for NSA selection attention: the "packed SDPA" work done in
 * plain C straight over OpenBLAS, no popper code.
 *
 * For every query row t (G = 1, H heads, L selected keys in its spans):
 *   gather  K_J (L x D), V_J (L x Dv) from BF16 to FP32, Q_t (H x D)
 *   S = (1/sqrt(D)) Q_t K_J^T        cblas_sgemm(RowMajor, NoTrans, Trans)
 *   P = exp(S - lse) per row         (max, a vectorizable polynomial exp, sum, logf)
 *   O_t = P V_J                      cblas_sgemm(RowMajor, NoTrans, NoTrans)
 *
 * Shapes and the workload (spans, BF16 data) come from workloads/nsa/shapes.h and
 * generate.h, the same definition the bench suite uses. --threads T splits
 * the rows over T pthreads, OpenBLAS single-threaded inside each (as the
 * wrapped tier does). Before timing, rows 0 and N-1 are checked against an
 * FP64 evaluation (MAE <= 1e-3, the contract's target). One CSV row per
 * repetition (popper/ceiling_cli.h). */
#include "popper/ceiling_cli.h" /* first: it sets _POSIX_C_SOURCE */

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>

#include "workloads/nsa/generate.h"

char* openblas_get_corename(void);
void openblas_set_num_threads(int num_threads);

struct nsa_problem {
  const struct popper_nsa_shape* s;
  struct popper_nsa_layout lay;
  int rows, heads, dim, sel_len, spans;
  int32_t *begin, *end; /* [rows, spans] */
  int* row_seq;
  uint16_t *q, *k, *v;
  float* o;
};

struct nsa_worker {
  struct nsa_problem* p;
  int r0, r1;
  float *kg, *vg, *qg, *sc;
};

static void widen(const uint16_t* src, float* dst, int n) {
  for (int i = 0; i < n; ++i) dst[i] = popper_nsa_float(src[i]);
}

/* exp(x) for x <= 0 to ~1 ulp (Cephes' polynomial, 2^n through the exponent
 * bits), written so the compiler vectorizes the softmax loops as the wrapped
 * tier's softmax is vectorized; below -87 the result is flushed to 0. */
static inline float exp_poly(float x) {
  const float xc = x < -87.0f ? -87.0f : x;
  const float n = (float)(int32_t)(xc * 1.44269504088896341f - 0.5f); /* round to nearest for xc <= 0 */
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  const int32_t e = ((int32_t)n + 127) << 23;
  float scale;
  memcpy(&scale, &e, sizeof scale);
  return x < -87.0f ? 0.0f : y * scale;
}

static void attend_row(const struct nsa_problem* p, struct nsa_worker* w, int t) {
  const int d = p->dim, h = p->heads, l = p->sel_len;
  const long key0 = p->lay.cu_k[p->row_seq[t]];
  int r = 0;
  for (int s = 0; s < p->spans; ++s)
    for (int j = p->begin[t * p->spans + s]; j < p->end[t * p->spans + s]; ++j, ++r) {
      widen(p->k + (key0 + j) * d, w->kg + (long)r * d, d);
      widen(p->v + (key0 + j) * d, w->vg + (long)r * d, d);
    }
  widen(p->q + (long)t * h * d, w->qg, h * d);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, h, l, d, (float)(1.0 / sqrt((double)d)), w->qg, d, w->kg, d,
              0.0f, w->sc, l);
  for (int i = 0; i < h; ++i) {
    float* x = w->sc + (long)i * l;
    float m = x[0], sum = 0.0f;
    for (int j = 1; j < l; ++j) m = x[j] > m ? x[j] : m;
    for (int j = 0; j < l; ++j) sum += exp_poly(x[j] - m);
    const float lse = m + logf(sum);
    for (int j = 0; j < l; ++j) x[j] = exp_poly(x[j] - lse);
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, h, d, l, 1.0f, w->sc, l, w->vg, d, 0.0f,
              p->o + (long)t * h * d, d);
}

static void* run_worker(void* arg) {
  struct nsa_worker* w = (struct nsa_worker*)arg;
  for (int t = w->r0; t < w->r1; ++t) attend_row(w->p, w, t);
  return NULL;
}

static int run_call(struct nsa_problem* p, struct nsa_worker* workers, int threads) {
  if (threads == 1) {
    run_worker(&workers[0]);
    return 0;
  }
  pthread_t tid[64];
  for (int i = 0; i < threads; ++i)
    if (pthread_create(&tid[i], NULL, run_worker, &workers[i]) != 0) return 1;
  for (int i = 0; i < threads; ++i) pthread_join(tid[i], NULL);
  return 0;
}

/* One call (ceiling_time_calls' callback); a thread that could not start fails the call. */
struct nsa_call {
  struct nsa_problem* p;
  struct nsa_worker* workers;
  int threads, failed;
};
static void nsa_once(void* ctx) {
  struct nsa_call* c = (struct nsa_call*)ctx;
  if (!c->failed && run_call(c->p, c->workers, c->threads)) c->failed = 1;
}

/* Mean |O - O_ref| over rows 0 and N-1 (every head and element), O_ref in FP64. */
static double sampled_mae(const struct nsa_problem* p) {
  const int d = p->dim, h = p->heads, l = p->sel_len;
  const int check[2] = {0, p->rows - 1};
  double err = 0;
  long count = 0;
  double* s = malloc(sizeof(double) * (size_t)l);
  double* o = malloc(sizeof(double) * (size_t)d);
  for (int c = 0; c < 2; ++c) {
    const int t = check[c];
    const long key0 = p->lay.cu_k[p->row_seq[t]];
    for (int i = 0; i < h; ++i) {
      int r = 0;
      double m = -INFINITY, sum = 0;
      for (int sp = 0; sp < p->spans; ++sp)
        for (int j = p->begin[t * p->spans + sp]; j < p->end[t * p->spans + sp]; ++j, ++r) {
          double dot = 0;
          for (int e = 0; e < d; ++e)
            dot +=
                (double)popper_nsa_float(p->q[((long)t * h + i) * d + e]) * popper_nsa_float(p->k[(key0 + j) * d + e]);
          s[r] = dot / sqrt((double)d);
          m = s[r] > m ? s[r] : m;
        }
      for (r = 0; r < l; ++r) sum += exp(s[r] - m);
      const double lse = m + log(sum);
      for (int e = 0; e < d; ++e) o[e] = 0;
      r = 0;
      for (int sp = 0; sp < p->spans; ++sp)
        for (int j = p->begin[t * p->spans + sp]; j < p->end[t * p->spans + sp]; ++j, ++r)
          for (int e = 0; e < d; ++e) o[e] += exp(s[r] - lse) * popper_nsa_float(p->v[(key0 + j) * d + e]);
      for (int e = 0; e < d; ++e, ++count) err += fabs(o[e] - p->o[((long)t * h + i) * d + e]);
    }
  }
  free(s);
  free(o);
  return count ? err / (double)count : 0.0;
}

static void fill_bf16(uint16_t* dst, size_t n, unsigned long long seed) {
  float* tmp = malloc(sizeof(float) * (n ? n : 1));
  ceiling_fill(tmp, n, 0, seed);
  for (size_t i = 0; i < n; ++i) dst[i] = popper_nsa_bf16(tmp[i]);
  free(tmp);
}

static const char* shape_name(int s) { return POPPER_NSA_SHAPES[s].name; }
static void list_line(int s) {
  const struct popper_nsa_shape* sh = &POPPER_NSA_SHAPES[s];
  printf("%s,%s,%d,%d,%d,%d,%s\n", sh->name, sh->dist, sh->rows, sh->heads, sh->dim, sh->sel_len, sh->set);
}

int main(int argc, char** argv) {
  const char* program = "ceiling_cblas_nsa_raw";
  struct ceiling_args args;
  const int rc = ceiling_open(argc, argv, program, POPPER_NSA_SHAPE_COUNT, shape_name, list_line, &args);
  if (rc >= 0) return rc;
  if (args.probe) { /* the OpenBLAS core this environment loads (vendors.hpp) */
    printf("# config: %s\n", openblas_get_corename());
    return 0;
  }
  const int threads = args.threads, reps = args.reps;
  if (threads > 64) {
    fprintf(stderr, "%s: at most 64 threads\n", program);
    return 2;
  }
  openblas_set_num_threads(1); /* threads come from the row split */
  const char* core = openblas_get_corename();
  fprintf(stderr, "# blas_core: %s\n", core);
  ceiling_print_header();
  int exit_code = 0;
  char backend[96];
  snprintf(backend, sizeof backend, "openblas:%s", core);

  for (int si = 0; si < POPPER_NSA_SHAPE_COUNT; ++si) {
    const struct popper_nsa_shape* sh = &POPPER_NSA_SHAPES[si];
    if (!ceiling_shape_selected(&args, sh->name) || !ceiling_precision_selected(&args, "bf16")) continue;
    struct nsa_problem p;
    memset(&p, 0, sizeof p);
    p.s = sh;
    popper_nsa_layout_of(sh, &p.lay);
    p.rows = sh->rows;
    p.heads = sh->heads;
    p.dim = sh->dim;
    p.sel_len = sh->sel_len;
    p.spans = p.lay.spans_per_row;
    const long tk = p.lay.cu_k[POPPER_NSA_SEQS];
    p.begin = malloc(sizeof(int32_t) * (size_t)p.rows * (size_t)p.spans);
    p.end = malloc(sizeof(int32_t) * (size_t)p.rows * (size_t)p.spans);
    p.row_seq = malloc(sizeof(int) * (size_t)p.rows);
    p.q = malloc(sizeof(uint16_t) * (size_t)p.rows * (size_t)p.heads * (size_t)p.dim);
    p.k = malloc(sizeof(uint16_t) * (size_t)tk * (size_t)p.dim);
    p.v = malloc(sizeof(uint16_t) * (size_t)tk * (size_t)p.dim);
    p.o = malloc(sizeof(float) * (size_t)p.rows * (size_t)p.heads * (size_t)p.dim);
    struct nsa_worker workers[64];
    int ok = p.begin && p.end && p.row_seq && p.q && p.k && p.v && p.o;
    for (int i = 0; i < threads && ok; ++i) {
      workers[i].p = &p;
      workers[i].r0 = (int)((long)i * p.rows / threads);
      workers[i].r1 = (int)((long)(i + 1) * p.rows / threads);
      workers[i].kg = malloc(sizeof(float) * (size_t)p.sel_len * (size_t)p.dim);
      workers[i].vg = malloc(sizeof(float) * (size_t)p.sel_len * (size_t)p.dim);
      workers[i].qg = malloc(sizeof(float) * (size_t)p.heads * (size_t)p.dim);
      workers[i].sc = malloc(sizeof(float) * (size_t)p.heads * (size_t)p.sel_len);
      ok = workers[i].kg && workers[i].vg && workers[i].qg && workers[i].sc;
    }
    if (!ok) {
      fprintf(stderr, "out of memory for shape %s\n", sh->name);
      return 1;
    }
    for (int b = 0; b < POPPER_NSA_SEQS; ++b)
      for (int i = 0; i < p.lay.rows_per_seq; ++i) {
        const int t = p.lay.cu_q[b] + i;
        p.row_seq[t] = b;
        popper_nsa_row_spans(sh, &p.lay, b, i, p.begin + (long)t * p.spans, p.end + (long)t * p.spans);
      }
    fill_bf16(p.q, (size_t)p.rows * (size_t)p.heads * (size_t)p.dim, 1);
    fill_bf16(p.k, (size_t)tk * (size_t)p.dim, 2);
    fill_bf16(p.v, (size_t)tk * (size_t)p.dim, 3);

    if (run_call(&p, workers, threads)) {
      fprintf(stderr, "%s: pthread_create failed\n", program);
      return 1;
    }
    const double mae = sampled_mae(&p);
    char verdict[96];
    if (mae <= 1e-3) snprintf(verdict, sizeof verdict, "verified(sampled 2 rows)");
    else snprintf(verdict, sizeof verdict, "incorrect: MAE %.3e > 1e-3", mae);
    struct nsa_call call = {&p, workers, threads, 0};
    const long iters = mae <= 1e-3 ? ceiling_repetition_iterations(&args, nsa_once, &call) : 0;
    for (int r = 0; r < reps && mae <= 1e-3 && !call.failed; ++r) {
      const double per_iter = ceiling_time_calls(&args, iters, nsa_once, &call);
      if (call.failed) break;
      ceiling_print_row("nsa", backend, sh->name, "bf16", threads, r, iters, per_iter, popper_nsa_flop(sh),
                        popper_nsa_bytes(sh), verdict);
      fprintf(stderr, "ceiling nsa %s threads=%d rep %d/%d: %.3f GFLOP/s\n", sh->name, threads, r + 1, reps,
              popper_nsa_flop(sh) / per_iter * 1e-9);
    }
    if (mae > 1e-3)
      fprintf(stderr, "%s %s: %s; not timed\n", program, sh->name,
              verdict); /* no row: never a time for a wrong answer */
    if (call.failed) {
      fprintf(stderr, "%s %s: pthread_create failed during a repetition\n", program, sh->name);
      exit_code = 1;
    }
    for (int i = 0; i < threads; ++i) {
      free(workers[i].kg);
      free(workers[i].vg);
      free(workers[i].qg);
      free(workers[i].sc);
    }
    free(p.begin);
    free(p.end);
    free(p.row_seq);
    free(p.q);
    free(p.k);
    free(p.v);
    free(p.o);
  }
  return exit_code;
}
