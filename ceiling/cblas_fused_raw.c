/* Ceiling tier for the fused family: the separate computation in plain C, the
 * attention products through OpenBLAS SGEMM, everything else as separate loops
 * over the whole tensor (what an unfused implementation does):
 *   CE        softmax pass (P stored) -> loss pass -> gradient pass (over the logits)
 *   RMSNorm   forward storing normed -> backward reading it
 *   SwiGLU    forward -> sigma pass (stored) -> d_up pass -> d_gate pass (grads stored)
 *   RoPE      one pass per head over the cos/sin table
 *   attention S = Q K^T (sgemm) -> softmax with scale and causal mask -> O = P V (sgemm);
 *             backward dP = dO V^T, dS = P (dP - D), dQ = scale dS K, dK = scale dS^T Q, dV = P^T dO
 * Shapes from workloads/fused/shapes.h; flop and bytes per call from the same header, so
 * rows compare with the bench tiers. --threads sets OpenBLAS threads (the loops are serial).
 * Output: the CSV rows of popper/ceiling_cli.h, verdict not_verified (the tiers verify). */
#include "popper/ceiling_cli.h" /* first: it sets _POSIX_C_SOURCE */

#include <cblas.h>
#include <math.h>

#include "workloads/fused/shapes.h"

char* openblas_get_corename(void);
void openblas_set_num_threads(int num_threads);

static float* alloc_floats(size_t n) { return (float*)malloc((n ? n : 1) * sizeof(float)); }

struct bufs {
  float *a, *b, *c, *d, *e, *f, *g, *h, *i;
  long long* labels;
};

static void ce_call(const struct popper_fused_shape* s, struct bufs* m) {
  const size_t rows = (size_t)s->batch * s->seq, V = (size_t)s->vocab;
  float *x = m->a, *p = m->b, *loss = m->c;
  for (size_t r = 0; r < rows; ++r) { /* softmax pass */
    const float* xr = x + r * V;
    float* pr = p + r * V;
    float mx = -INFINITY, sum = 0;
    for (size_t i = 0; i < V; ++i) mx = xr[i] > mx ? xr[i] : mx;
    for (size_t i = 0; i < V; ++i) sum += (pr[i] = expf(xr[i] - mx));
    const float inv = 1.0f / sum;
    for (size_t i = 0; i < V; ++i) pr[i] *= inv;
  }
  for (size_t r = 0; r < rows; ++r) loss[r] = -logf(p[r * V + (size_t)m->labels[r]]); /* loss pass */
  for (size_t r = 0; r < rows; ++r) {                                                 /* gradient pass */
    for (size_t i = 0; i < V; ++i) x[r * V + i] = p[r * V + i];
    x[r * V + (size_t)m->labels[r]] -= 1.0f;
  }
}

static void rmsnorm_call(const struct popper_fused_shape* s, struct bufs* m) {
  const size_t rows = (size_t)s->batch * s->seq, H = (size_t)s->hidden;
  float *x = m->a, *w = m->b, *y = m->c, *normed = m->d, *dy = m->e, *dx = m->f, *dw = m->g, *inv = m->h;
  for (size_t r = 0; r < rows; ++r) {
    float ss = 0;
    for (size_t i = 0; i < H; ++i) ss += x[r * H + i] * x[r * H + i];
    inv[r] = 1.0f / sqrtf(ss / (float)H + 1e-6f);
    for (size_t i = 0; i < H; ++i) {
      normed[r * H + i] = x[r * H + i] * inv[r];
      y[r * H + i] = normed[r * H + i] * w[i];
    }
  }
  for (size_t i = 0; i < H; ++i) dw[i] = 0;
  for (size_t r = 0; r < rows; ++r) {
    float c = 0;
    for (size_t i = 0; i < H; ++i) c += dy[r * H + i] * w[i] * normed[r * H + i];
    c /= (float)H;
    for (size_t i = 0; i < H; ++i) {
      dx[r * H + i] = inv[r] * (dy[r * H + i] * w[i] - normed[r * H + i] * c);
      dw[i] += dy[r * H + i] * normed[r * H + i];
    }
  }
}

static void swiglu_call(const struct popper_fused_shape* s, struct bufs* m) {
  const size_t n = (size_t)s->batch * s->seq * s->intermediate;
  float *g = m->a, *u = m->b, *h = m->c, *dh = m->d, *sg = m->e, *dg = m->f, *du = m->g;
  for (size_t i = 0; i < n; ++i) h[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
  for (size_t i = 0; i < n; ++i) sg[i] = 1.0f / (1.0f + expf(-g[i]));
  for (size_t i = 0; i < n; ++i) du[i] = dh[i] * g[i] * sg[i];
  for (size_t i = 0; i < n; ++i) dg[i] = dh[i] * u[i] * sg[i] * (1.0f + g[i] * (1.0f - sg[i]));
}

static void rope_call(const struct popper_fused_shape* s, struct bufs* m) {
  const size_t D = (size_t)s->head_dim, half = D / 2, tokens = (size_t)s->batch * s->seq;
  const float *cs = m->c, *sn = m->d;
  for (int which = 0; which < 2; ++which) {
    const size_t heads = (size_t)(which ? s->kv_heads : s->q_heads);
    float* base = which ? m->b : m->a;
    for (size_t h = 0; h < heads; ++h)
      for (size_t t = 0; t < tokens; ++t) {
        const size_t pos = t % (size_t)s->seq;
        float* x = base + (t * heads + h) * D;
        for (size_t j = 0; j < half; ++j) {
          const float c = cs[pos * half + j], sv = sn[pos * half + j], x1 = x[j], x2 = x[j + half];
          x[j] = x1 * c - x2 * sv;
          x[j + half] = x2 * c + x1 * sv;
        }
      }
  }
}

/* q a, k b, v c, o d, P e, dO f, dq g, dk h, dv i (dS reuses a scratch e2 = P of the forward kept in e) */
static void attn_forward(const struct popper_fused_shape* s, struct bufs* m) {
  const int S = s->seq, Hq = s->q_heads, Hkv = s->kv_heads, D = s->head_dim, g = Hq / Hkv;
  const float scale = 1.0f / sqrtf((float)D);
  for (int b = 0; b < s->batch; ++b)
    for (int h = 0; h < Hq; ++h) {
      float* P = m->e + ((size_t)b * Hq + h) * S * S;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, S, S, D, 1.0f, m->a + ((size_t)b * S * Hq + h) * D, Hq * D,
                  m->b + ((size_t)b * S * Hkv + h / g) * D, Hkv * D, 0.0f, P, S);
    }
  for (size_t row = 0; row < (size_t)s->batch * Hq * S; ++row) {
    float* p = m->e + row * S;
    const int i = (int)(row % (size_t)S);
    float mx = -INFINITY, sum = 0;
    for (int j = 0; j <= i; ++j) mx = p[j] * scale > mx ? p[j] * scale : mx;
    for (int j = 0; j < S; ++j) sum += (p[j] = j <= i ? expf(p[j] * scale - mx) : 0.0f);
    for (int j = 0; j <= i; ++j) p[j] /= sum;
  }
  for (int b = 0; b < s->batch; ++b)
    for (int h = 0; h < Hq; ++h)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, S, D, S, 1.0f, m->e + ((size_t)b * Hq + h) * S * S, S,
                  m->c + ((size_t)b * S * Hkv + h / g) * D, Hkv * D, 0.0f, m->d + ((size_t)b * S * Hq + h) * D, Hq * D);
}

static void attn_backward(const struct popper_fused_shape* s, struct bufs* m, float* dS) {
  const int S = s->seq, Hq = s->q_heads, Hkv = s->kv_heads, D = s->head_dim, g = Hq / Hkv;
  const float scale = 1.0f / sqrtf((float)D);
  for (int b = 0; b < s->batch; ++b)
    for (int h = 0; h < Hq; ++h)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, S, S, D, 1.0f, m->f + ((size_t)b * S * Hq + h) * D, Hq * D,
                  m->c + ((size_t)b * S * Hkv + h / g) * D, Hkv * D, 0.0f, dS + ((size_t)b * Hq + h) * S * S, S);
  for (int b = 0; b < s->batch; ++b)
    for (int h = 0; h < Hq; ++h)
      for (int i = 0; i < S; ++i) {
        const float* o = m->d + (((size_t)b * S + i) * Hq + h) * D;
        const float* d = m->f + (((size_t)b * S + i) * Hq + h) * D;
        float di = 0;
        for (int c = 0; c < D; ++c) di += d[c] * o[c];
        const float* p = m->e + (((size_t)b * Hq + h) * S + i) * S;
        float* ds = dS + (((size_t)b * Hq + h) * S + i) * S;
        for (int j = 0; j < S; ++j) ds[j] = p[j] * (ds[j] - di);
      }
  for (int b = 0; b < s->batch; ++b)
    for (int h = 0; h < Hq; ++h) {
      const size_t u = (size_t)b * Hq + h, kvoff = ((size_t)b * S * Hkv + h / g) * D,
                   qoff = ((size_t)b * S * Hq + h) * D;
      const float beta = h % g == 0 ? 0.0f : 1.0f;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, S, D, S, scale, dS + u * S * S, S, m->b + kvoff, Hkv * D,
                  0.0f, m->g + qoff, Hq * D);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, S, D, S, scale, dS + u * S * S, S, m->a + qoff, Hq * D, beta,
                  m->h + kvoff, Hkv * D);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, S, D, S, 1.0f, m->e + u * S * S, S, m->f + qoff, Hq * D,
                  beta, m->i + kvoff, Hkv * D);
    }
}

/* One call of the shape's kernel (ceiling_time_calls' callback). */
struct fused_call {
  const struct popper_fused_shape* s;
  struct bufs* m;
  float* extra;
};
static void fused_once(void* ctx) {
  const struct fused_call* c = (const struct fused_call*)ctx;
  switch (c->s->kernel) {
    case POPPER_FUSED_CE: ce_call(c->s, c->m); break;
    case POPPER_FUSED_RMSNORM: rmsnorm_call(c->s, c->m); break;
    case POPPER_FUSED_SWIGLU: swiglu_call(c->s, c->m); break;
    case POPPER_FUSED_ROPE: rope_call(c->s, c->m); break;
    case POPPER_FUSED_ATTN_FWD: attn_forward(c->s, c->m); break;
    case POPPER_FUSED_ATTN_BWD: attn_backward(c->s, c->m, c->extra); break;
  }
}

static const char* shape_name(int i) { return POPPER_FUSED_SHAPES[i].name; }
static void list_line(int i) { printf("%s,%s\n", POPPER_FUSED_SHAPES[i].name, POPPER_FUSED_SHAPES[i].set); }

int main(int argc, char** argv) {
  const char* program = "ceiling_cblas_fused_raw";
  struct ceiling_args args;
  const int rc = ceiling_open(argc, argv, program, POPPER_FUSED_SHAPE_COUNT, shape_name, list_line, &args);
  if (rc >= 0) return rc;
  if (args.probe) { /* the OpenBLAS core this environment loads (vendors.hpp) */
    printf("# config: %s\n", openblas_get_corename());
    return 0;
  }
  openblas_set_num_threads(args.threads);
  const char* core = openblas_get_corename();
  fprintf(stderr, "# blas_core: %s\n", core);
  ceiling_print_header();
  for (int si = 0; si < POPPER_FUSED_SHAPE_COUNT; ++si) {
    const struct popper_fused_shape* s = &POPPER_FUSED_SHAPES[si];
    if (!ceiling_shape_selected(&args, s->name) || !ceiling_precision_selected(&args, "f32")) continue;
    const size_t tokens = (size_t)s->batch * s->seq;
    size_t n1 = 0, n2 = 0, n3 = 0, n4 = 0; /* sizes of the buffers a.. by kernel */
    switch (s->kernel) {
      case POPPER_FUSED_CE: n1 = tokens * (size_t)s->vocab; break;
      case POPPER_FUSED_RMSNORM: n1 = tokens * (size_t)s->hidden; break;
      case POPPER_FUSED_SWIGLU: n1 = tokens * (size_t)s->intermediate; break;
      case POPPER_FUSED_ROPE:
        n1 = tokens * (size_t)s->q_heads * s->head_dim;
        n2 = tokens * (size_t)s->kv_heads * s->head_dim;
        break;
      default:
        n1 = tokens * (size_t)s->q_heads * s->head_dim, n2 = tokens * (size_t)s->kv_heads * s->head_dim;
        n3 = (size_t)s->batch * s->q_heads * (size_t)s->seq * s->seq;
    }
    (void)n4;
    struct bufs m = {0};
    float* extra = NULL;
    if (s->kernel == POPPER_FUSED_CE) {
      m.a = alloc_floats(n1), m.b = alloc_floats(n1), m.c = alloc_floats(tokens);
      m.labels = (long long*)malloc(tokens * sizeof(long long));
      ceiling_fill(m.a, n1, 0, 1);
      for (size_t r = 0; r < tokens; ++r) m.labels[r] = (long long)((r * 2654435761u) % (size_t)s->vocab);
    } else if (s->kernel == POPPER_FUSED_RMSNORM || s->kernel == POPPER_FUSED_SWIGLU) {
      m.a = alloc_floats(n1), m.b = alloc_floats(n1), m.c = alloc_floats(n1), m.d = alloc_floats(n1);
      m.e = alloc_floats(n1), m.f = alloc_floats(n1), m.g = alloc_floats(n1), m.h = alloc_floats(tokens);
      ceiling_fill(m.a, n1, 0, 1), ceiling_fill(m.b, n1, 0, 2), ceiling_fill(m.d, n1, 0, 3),
          ceiling_fill(m.e, n1, 0, 4);
    } else if (s->kernel == POPPER_FUSED_ROPE) {
      const size_t half = (size_t)s->head_dim / 2;
      m.a = alloc_floats(n1), m.b = alloc_floats(n2), m.c = alloc_floats((size_t)s->seq * half),
      m.d = alloc_floats((size_t)s->seq * half);
      ceiling_fill(m.a, n1, 0, 1), ceiling_fill(m.b, n2, 0, 2);
      for (size_t p = 0; p < (size_t)s->seq; ++p)
        for (size_t j = 0; j < half; ++j) {
          const double ang = (double)p * pow(10000.0, -2.0 * (double)j / (double)s->head_dim);
          m.c[p * half + j] = (float)cos(ang), m.d[p * half + j] = (float)sin(ang);
        }
    } else {
      m.a = alloc_floats(n1), m.b = alloc_floats(n2), m.c = alloc_floats(n2), m.d = alloc_floats(n1),
      m.e = alloc_floats(n3);
      m.f = alloc_floats(n1), m.g = alloc_floats(n1), m.h = alloc_floats(n2), m.i = alloc_floats(n2);
      ceiling_fill(m.a, n1, 0, 1), ceiling_fill(m.b, n2, 0, 2), ceiling_fill(m.c, n2, 0, 3),
          ceiling_fill(m.f, n1, 0, 4);
      if (s->kernel == POPPER_FUSED_ATTN_BWD) {
        extra = alloc_floats(n3);
        attn_forward(s, &m);
      }
    }
    /* One call of the shape's separate computation. */
    struct fused_call call = {s, &m, extra};
    const long iters = ceiling_repetition_iterations(&args, fused_once, &call);
    const double flop = popper_fused_flop(s), bytes = popper_fused_bytes(s);
    char backend[96];
    snprintf(backend, sizeof backend, "openblas:%s", core);
    for (int r = 0; r < args.reps; ++r) {
      const double per_iter = ceiling_time_calls(&args, iters, fused_once, &call);
      ceiling_print_row("fused", backend, s->name, "f32", args.threads, r, iters, per_iter, flop, bytes,
                        "not_verified");
      fprintf(stderr, "ceiling fused %s threads=%d rep %d/%d: %.3f ms\n", s->name, args.threads, r + 1, args.reps,
              per_iter * 1e3);
    }
    free(m.a), free(m.b), free(m.c), free(m.d), free(m.e), free(m.f), free(m.g), free(m.h), free(m.i), free(m.labels),
        free(extra);
  }
  return 0;
}
