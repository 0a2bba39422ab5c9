/* Ceiling tier of the q4k family: ggml's CPU mat-vec (llama.cpp, the pinned
 * npm packages of scripts/install-deps.sh) through its graph API in plain C.
 *
 *   y = W x,  W rows x cols Q4_K (ggml_mul_mat; ggml rounds x to Q8_K inside)
 *
 * Two rows per shape: W in the CPU backend's default buffer ("ggml-cpu:<v>")
 * and in its CPU_REPACK buffer ("ggml-cpu:<v>+repack", the layout llama.cpp
 * serves weights in; rows % 8 == 0 only). <v> is the CPU backend variant,
 * loaded by path: POPPER_GGML_CPU_VARIANT, else the first of zen4, icelake,
 * skylakex, haswell, sse42, x64 that ggml accepts on this CPU. Threads =
 * --threads, set with ggml_backend_set_n_threads. Verification: sampled rows
 * against an FP64 product of dequantize_row_q4_K's weights; the label carries
 * max |y - y_ref| / sum |w x|. Timings below the read bound are invalid
 * (ceiling/read_bound.h). Inputs: workloads/q4k/shapes.h, identical in every tier. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popper/ceiling_cli.h"
#include "read_bound.h"
#include "workloads/q4k/shapes.h"

#if POPPER_HAVE_GGML
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>

void dequantize_row_q4_K(const void* x, float* y, int64_t k); /* exported by libggml-base.so */

static void quiet_log(enum ggml_log_level level, const char* text, void* user) {
  (void)user;
  if (level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static ggml_backend_reg_t load_cpu_backend(char* variant, size_t size) {
  static const char* order[] = {"zen4", "icelake", "skylakex", "haswell", "sse42", "x64"};
  const char* dir = getenv("POPPER_GGML_CPU_DIR");
  if (!dir || !*dir) dir = POPPER_GGML_CPU_DIR;
  const char* want = getenv("POPPER_GGML_CPU_VARIANT");
  for (int i = 0; i < 6; ++i) {
    const char* v = want && *want ? want : order[i];
    char path[4096];
    snprintf(path, sizeof path, "%s/libggml-cpu-%s.so", dir, v);
    ggml_backend_reg_t reg = ggml_backend_load(path);
    if (reg) {
      snprintf(variant, size, "%s", v);
      return reg;
    }
    if (want && *want) break;
  }
  return NULL;
}

/* max_r |y_r - y_ref,r| / sum_i |w_ri x_i| over up to 256 rows; w holds one dequantized row. */
static double scaled_error(const unsigned char* blocks, const float* x, const float* y, int rows, int cols, float* w) {
  double worst = 0;
  const int step = rows / 256 > 1 ? rows / 256 : 1;
  for (int r = 0; r < rows; r += step) {
    dequantize_row_q4_K(blocks + (size_t)r * (size_t)(cols / 256) * POPPER_Q4K_BLOCK_BYTES, w, cols);
    double ref = 0, mag = 0;
    for (int i = 0; i < cols; ++i) ref += (double)w[i] * x[i], mag += fabs((double)w[i] * x[i]);
    const double e = mag > 0 ? fabs((double)y[r] - ref) / mag : 0;
    if (e > worst || e != e) worst = e;
  }
  return worst;
}

typedef struct ggml_threadpool* (*threadpool_new_t)(struct ggml_threadpool_params*);
typedef void (*threadpool_free_t)(struct ggml_threadpool*);
typedef void (*set_threadpool_t)(ggml_backend_t, struct ggml_threadpool*);

/* A threadpool that lives as long as the backend, as llama.cpp's tools attach
 * one: without it every graph_compute creates and joins its worker threads,
 * which at 2 threads cost more than a small mat-vec itself. NULL (and the
 * per-call threads) when the backend lacks the entry points. */
static struct ggml_threadpool* attach_threadpool(ggml_backend_reg_t reg, ggml_backend_t backend, int threads) {
  threadpool_new_t make = (threadpool_new_t)ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new");
  set_threadpool_t set = (set_threadpool_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_cpu_set_threadpool");
  if (!make || !set || threads < 2) return NULL;
  struct ggml_threadpool_params p = ggml_threadpool_params_default(threads);
  struct ggml_threadpool* pool = make(&p);
  if (pool) set(backend, pool);
  return pool;
}

static void detach_threadpool(ggml_backend_reg_t reg, ggml_backend_t backend, struct ggml_threadpool** pool) {
  if (!*pool) return;
  set_threadpool_t set = (set_threadpool_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_cpu_set_threadpool");
  threadpool_free_t release = (threadpool_free_t)ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_free");
  set(backend, NULL);
  if (release) release(*pool);
  *pool = NULL;
}

struct graph_call {
  ggml_backend_t backend;
  struct ggml_cgraph* graph;
};
static void run_graph(void* ctx) {
  const struct graph_call* c = (const struct graph_call*)ctx;
  ggml_backend_graph_compute(c->backend, c->graph);
}

static void run_shape(ggml_backend_reg_t reg, const char* variant, const struct popper_q4k_shape* sh, int repack,
                      const struct ceiling_args* a) {
  /* The bound first, before the backend exists: its worker threads must not
   * share the cores with the probe, and a backend left idle through a probe
   * ran its 2-thread mat-vec 6-8x slower for the rest of its life. */
  const double bytes = popper_q4k_bytes(sh->rows, sh->cols);
  const double bound = ceiling_read_bound(bytes, a->threads, 5);
  ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, 0);
  ggml_backend_t backend = ggml_backend_dev_init(dev, NULL);
  ggml_backend_set_n_threads_t set_threads =
      (ggml_backend_set_n_threads_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads");
  set_threads(backend, a->threads);
  struct ggml_threadpool* pool = attach_threadpool(reg, backend, a->threads);

  struct ggml_init_params pw = {ggml_tensor_overhead() * 2, NULL, true};
  struct ggml_context* ctx_w = ggml_init(pw);
  struct ggml_tensor* w = ggml_new_tensor_2d(ctx_w, GGML_TYPE_Q4_K, sh->cols, sh->rows);
  struct ggml_init_params pio = {ggml_tensor_overhead() * 8 + ggml_graph_overhead(), NULL, true};
  struct ggml_context* ctx_io = ggml_init(pio);
  struct ggml_tensor* x = ggml_new_tensor_1d(ctx_io, GGML_TYPE_F32, sh->cols);
  struct ggml_tensor* y = ggml_mul_mat(ctx_io, w, x);
  struct ggml_cgraph* graph = ggml_new_graph(ctx_io);
  ggml_build_forward_expand(graph, y);

  ggml_backend_buffer_type_t wbuft = ggml_backend_get_default_buffer_type(backend);
  if (repack) {
    ggml_backend_dev_get_extra_bufts_t extra =
        (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
    repack = 0;
    for (ggml_backend_buffer_type_t* b = extra ? extra(dev) : NULL; b && *b; ++b)
      if (strcmp(ggml_backend_buft_name(*b), "CPU_REPACK") == 0) wbuft = *b, repack = 1;
    if (!repack) {
      fprintf(stderr, "ceiling_ggml_q4k_raw: no CPU_REPACK buffer type in %s\n", variant);
      goto done;
    }
  }
  {
    ggml_backend_buffer_t buf_w = ggml_backend_alloc_ctx_tensors_from_buft(ctx_w, wbuft);
    ggml_backend_buffer_t buf_io = ggml_backend_alloc_ctx_tensors(ctx_io, backend);
    const size_t nblocks = (size_t)sh->rows * (size_t)(sh->cols / 256);
    unsigned char* blocks = (unsigned char*)malloc(nblocks * POPPER_Q4K_BLOCK_BYTES);
    float* xv = (float*)malloc((size_t)sh->cols * sizeof *xv);
    float* yv = (float*)malloc((size_t)sh->rows * sizeof *yv);
    double* seconds = (double*)malloc((size_t)a->reps * sizeof *seconds);
    double* paces = (double*)malloc((size_t)a->reps * sizeof *paces);
    float* row = (float*)malloc((size_t)sh->cols * sizeof *row);
    if (!buf_w || !buf_io || !blocks || !xv || !yv || !seconds || !paces || !row) {
      printf("# skipped: cannot allocate %s with %d repetitions\n", sh->name, a->reps);
    } else {
      popper_q4k_fill_blocks(blocks, nblocks, POPPER_Q4K_SEED);
      ceiling_fill(xv, (size_t)sh->cols, 0, POPPER_Q4K_SEED + 1);
      ggml_backend_tensor_set(w, blocks, 0, nblocks * POPPER_Q4K_BLOCK_BYTES);
      ggml_backend_tensor_set(x, xv, 0, (size_t)sh->cols * sizeof *xv);

      ggml_backend_graph_compute(backend, graph);
      ggml_backend_tensor_get(y, yv, 0, (size_t)sh->rows * sizeof *yv);
      char verdict[160];
      snprintf(verdict, sizeof verdict, "verified(err %.2e%s)", scaled_error(blocks, xv, yv, sh->rows, sh->cols, row),
               sh->rows > 256 ? " sampled 256 rows" : "");
      char backend_name[96];
      snprintf(backend_name, sizeof backend_name, "ggml-cpu:%s%s", variant, repack ? "+repack" : "");
      struct graph_call call = {backend, graph};
      const long iters = ceiling_repetition_iterations(a, run_graph, &call);
      for (int rep = 0; rep < a->reps; ++rep) {
        seconds[rep] = ceiling_time_calls(a, iters, run_graph, &call);
        paces[rep] = ceiling_pace_seconds;
      }
      detach_threadpool(reg, backend, &pool); /* its workers must not share the cores with the probe */
      double sorted[1024];
      const int n = a->reps < 1024 ? a->reps : 1024;
      memcpy(sorted, seconds, (size_t)n * sizeof *sorted);
      ceiling_bound_check(bytes, sorted, n, ceiling_read_bound_again(bound, bytes, a->threads, 5), a->threads, verdict,
                          sizeof verdict);
      for (int rep = 0; rep < a->reps; ++rep)
        ceiling_print_paced_row("q4k", backend_name, sh->name, "q4k", a->threads, rep, iters, seconds[rep],
                                2.0 * sh->rows * (double)sh->cols, bytes, verdict, paces[rep]);
    }
    free(row), free(paces), free(seconds), free(yv), free(xv), free(blocks);
    if (buf_io) ggml_backend_buffer_free(buf_io);
    if (buf_w) ggml_backend_buffer_free(buf_w);
  }
done:
  detach_threadpool(reg, backend, &pool);
  ggml_free(ctx_io);
  ggml_free(ctx_w);
  ggml_backend_free(backend);
}
#endif

static const char* shape_name(int i) { return POPPER_Q4K_SHAPES[i].name; }

int main(int argc, char** argv) {
  struct ceiling_args a;
  ceiling_cold_supported = 1;
  const int rc = ceiling_open(argc, argv, "ceiling_ggml_q4k_raw", POPPER_Q4K_SHAPE_COUNT, shape_name, NULL, &a);
  if (rc >= 0) return rc;
#if !POPPER_HAVE_GGML
  printf("# skipped: requires ggml (popper was built without the llama.cpp packages; run scripts/install-deps.sh)\n");
  return 0;
#else
  ggml_log_set(quiet_log, NULL);
  char variant[64];
  ggml_backend_reg_t reg = load_cpu_backend(variant, sizeof variant);
  if (!reg) {
    printf("# skipped: requires ggml (no CPU backend variant loads on this CPU)\n");
    return 0;
  }
  if (a.probe) { /* the variant ggml loads here: the configuration this ceiling runs */
    printf("# config: %s\n", variant);
    return 0;
  }
  if (!ceiling_precision_selected(&a, "q4k")) return 0;
  ceiling_print_header();
  for (int i = 0; i < POPPER_Q4K_SHAPE_COUNT; ++i) {
    const struct popper_q4k_shape* sh = &POPPER_Q4K_SHAPES[i];
    if (!ceiling_shape_selected(&a, sh->name)) continue;
    fprintf(stderr, "ceiling_ggml_q4k_raw: %s, %d thread(s), ggml-cpu:%s\n", sh->name, a.threads, variant);
    run_shape(reg, variant, sh, 0, &a);
    if (sh->rows % 8 == 0 && strcmp(variant, "x64") != 0 && strcmp(variant, "sse42") != 0)
      run_shape(reg, variant, sh, 1, &a);
  }
  return 0;
#endif
}
