/* Ceiling tier for GEMM on CUDA: cuBLAS called directly, C style, no wrapper.
 *
 *   C = alpha * A * B + beta * C   (row-major A m x k, B k x n; alpha = 1, beta = 0)
 *
 * Row-major operands are passed to column-major cuBLAS as C^T = B^T A^T
 * (operands swapped, m and n swapped), the same mapping the wrapper uses.
 * Precisions: f32 (FP32 in/out), f16 and bf16 (16-bit in, FP32 out), all with
 * CUBLAS_COMPUTE_32F and CUBLAS_DEFAULT_MATH (no TF32), on an explicit
 * non-blocking stream bound with cublasSetStream. Timing uses CUDA events
 * after warm-up; one CSV row per repetition on stdout (bench producer
 * protocol; backend cublas:sm_XX), progress on stderr. Before timing, C is
 * copied back and checked as the suites' rows are (product_check.h; the
 * roundoff scale doubled for 16-bit inputs), so a claim against this ceiling
 * rests on a verified row. Without a device: "# skipped: no CUDA device". */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popper/ceiling_count.h"
#include "workloads/gemm/product_check.h"
#include "workloads/gemm/shapes.h"

#define MAX_FILTERS 64
static double min_rep_seconds = 0.2; /* --min-time */

#define CHECK_CUDA(x)                                                                    \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)
#define CHECK_CUBLAS(x)                                                          \
  do {                                                                           \
    cublasStatus_t s_ = (x);                                                     \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                           \
      fprintf(stderr, "%s:%d %s: status %d\n", __FILE__, __LINE__, #x, (int)s_); \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

/* Deterministic fill in [-1, 1): the same LCG as the CPU ceiling. */
static void fill_host(float* buf, size_t count, unsigned long long seed) {
  unsigned long long x = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (size_t i = 0; i < count; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    buf[i] = (float)((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
}

enum { IN_F32 = 0, IN_F16 = 1, IN_BF16 = 2 };
static const char* const kPrecisions[] = {"f32", "f16", "bf16"};

/* Uploads host as the input type; a 16-bit input's host values are replaced
 * by what the device holds (widened exactly), for the product check. */
static void* upload(float* host, size_t count, int input) {
  void* dev = NULL;
  if (input != IN_F32) {
    unsigned short* tmp = (unsigned short*)malloc(count * sizeof(unsigned short));
    if (!tmp) {
      fprintf(stderr, "out of memory\n");
      exit(1);
    }
    for (size_t i = 0; i < count; ++i) {
      if (input == IN_F16) {
        const __half h = __float2half(host[i]);
        memcpy(&tmp[i], &h, sizeof tmp[i]);
        host[i] = __half2float(h);
      } else {
        const __nv_bfloat16 h = __float2bfloat16(host[i]);
        memcpy(&tmp[i], &h, sizeof tmp[i]);
        host[i] = __bfloat162float(h);
      }
    }
    CHECK_CUDA(cudaMalloc(&dev, count * sizeof(unsigned short)));
    CHECK_CUDA(cudaMemcpy(dev, tmp, count * sizeof(unsigned short), cudaMemcpyHostToDevice));
    free(tmp);
  } else {
    CHECK_CUDA(cudaMalloc(&dev, count * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(dev, host, count * sizeof(float), cudaMemcpyHostToDevice));
  }
  return dev;
}

static void run_gemm(cublasHandle_t h, cudaStream_t st, int input, int m, int n, int k, const void* a, const void* b,
                     float* c) {
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType_t in = input == IN_F16 ? CUDA_R_16F : input == IN_BF16 ? CUDA_R_16BF : CUDA_R_32F;
  CHECK_CUBLAS(cublasSetStream(h, st));
  /* Row-major C = A B  <=>  column-major C^T = B^T A^T. */
  CHECK_CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, in, n, a, in, k, &beta, c, CUDA_R_32F, n,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static int selected(const char* name, const char** filters, int nfilters) {
  if (nfilters == 0) return 1;
  for (int i = 0; i < nfilters; ++i)
    if (strcmp(filters[i], name) == 0) return 1;
  return 0;
}

static void usage(FILE* to) {
  fprintf(to,
          "usage: ceiling_cublas_gemm_raw [--shape NAME]... [--reps N] [--threads T]\n"
          "                               [--precision f32|f16|bf16] [--min-time S] [--list-shapes] [--probe]\n");
}

int main(int argc, char** argv) {
  const char* filters[MAX_FILTERS];
  int nfilters = 0, reps = 5, threads = 1, list = 0, probe = 0;
  const char* precision = NULL; /* NULL = all three */
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (strcmp(arg, "--list-shapes") == 0) {
      list = 1;
    } else if (strcmp(arg, "--probe") == 0) {
      probe = 1;
    } else if (i + 1 < argc && strcmp(arg, "--shape") == 0) {
      if (nfilters == MAX_FILTERS) {
        fprintf(stderr, "too many --shape\n");
        return 2;
      }
      filters[nfilters++] = argv[++i];
    } else if (i + 1 < argc && strcmp(arg, "--reps") == 0) {
      reps = ceiling_parse_count(argv[++i], CEILING_MAX_REPS);
    } else if (i + 1 < argc && strcmp(arg, "--threads") == 0) {
      /* host threads do not apply to the device; recorded in the CSV */
      threads = ceiling_parse_count(argv[++i], CEILING_MAX_THREADS);
    } else if (i + 1 < argc && strcmp(arg, "--precision") == 0) {
      precision = argv[++i];
    } else if (i + 1 < argc && strcmp(arg, "--min-time") == 0) {
      min_rep_seconds = atof(argv[++i]);
      if (!(min_rep_seconds > 0)) {
        fprintf(stderr, "ceiling_cublas_gemm_raw: --min-time must be > 0 seconds\n");
        return 2;
      }
    } else if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "unknown or incomplete argument: %s\n", arg);
      usage(stderr);
      return 2;
    }
  }
  if (reps < 1 || threads < 1) {
    fprintf(stderr, "ceiling_cublas_gemm_raw: " CEILING_COUNT_ERROR, CEILING_MAX_REPS, CEILING_MAX_THREADS);
    return 2;
  }
  if (precision && strcmp(precision, "f32") != 0 && strcmp(precision, "f16") != 0 && strcmp(precision, "bf16") != 0) {
    fprintf(stderr, "--precision must be f32, f16 or bf16\n");
    return 2;
  }
  for (int i = 0; i < nfilters; ++i) {
    int known = 0;
    for (int s = 0; s < POPPER_GEMM_SHAPE_COUNT; ++s) known |= strcmp(filters[i], POPPER_GEMM_SHAPES[s].name) == 0;
    if (!known) {
      fprintf(stderr, "unknown shape: %s (see --list-shapes)\n", filters[i]);
      return 2;
    }
  }
  if (list) {
    for (int s = 0; s < POPPER_GEMM_SHAPE_COUNT; ++s)
      printf("%s,%d,%d,%d,%s\n", POPPER_GEMM_SHAPES[s].name, POPPER_GEMM_SHAPES[s].m, POPPER_GEMM_SHAPES[s].n,
             POPPER_GEMM_SHAPES[s].k, POPPER_GEMM_SHAPES[s].set);
    return 0;
  }

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    printf(probe ? "# config: no-device\n" : "# skipped: no CUDA device\n");
    return 0;
  }
  struct cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  if (probe) { /* the configuration is the device: cuBLAS picks its kernels per call */
    printf("# config: sm_%d%d\n", prop.major, prop.minor);
    return 0;
  }
  fprintf(stderr, "# device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);

  cublasHandle_t h;
  cudaStream_t st;
  CHECK_CUBLAS(cublasCreate(&h));
  CHECK_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CHECK_CUBLAS(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));

  printf(
      "family,tier,backend,shape,precision,threads,rep,iterations,seconds_per_iter,flop_per_iter,"
      "bytes_per_iter,verdict\n");
  for (int s = 0; s < POPPER_GEMM_SHAPE_COUNT; ++s) {
    const struct popper_gemm_shape* sh = &POPPER_GEMM_SHAPES[s];
    if (!selected(sh->name, filters, nfilters)) continue;
    for (int input = IN_F32; input <= IN_BF16; ++input) {
      const char* prec = kPrecisions[input];
      if (precision && strcmp(precision, prec) != 0) continue;
      const size_t na = (size_t)sh->m * (size_t)sh->k, nb = (size_t)sh->k * (size_t)sh->n,
                   nc = (size_t)sh->m * (size_t)sh->n;
      float* ha = (float*)malloc(na * sizeof(float));
      float* hb = (float*)malloc(nb * sizeof(float));
      if (!ha || !hb) {
        fprintf(stderr, "out of memory for shape %s\n", sh->name);
        return 1;
      }
      fill_host(ha, na, 1);
      fill_host(hb, nb, 2);
      void* da = upload(ha, na, input);
      void* db = upload(hb, nb, input);
      float* dc = NULL;
      CHECK_CUDA(cudaMalloc((void**)&dc, nc * sizeof(float)));

      /* Warm-up (also sizes the repetition so one lasts >= min_rep_seconds). */
      for (int w = 0; w < 3; ++w) run_gemm(h, st, input, sh->m, sh->n, sh->k, da, db, dc);
      float* hc = (float*)malloc(nc * sizeof(float));
      if (!hc) {
        fprintf(stderr, "out of memory for shape %s\n", sh->name);
        return 1;
      }
      CHECK_CUDA(cudaStreamSynchronize(st));
      CHECK_CUDA(cudaMemcpy(hc, dc, nc * sizeof(float), cudaMemcpyDeviceToHost));
      const int samples = popper_gemm_check_samples(sh->m, sh->n, sh->k);
      char verdict[96];
      popper_gemm_check_label(
          popper_gemm_check_product(0, sh->m, sh->n, sh->k, ha, hb, hc, samples, input == IN_F32 ? 1.0 : 2.0), samples,
          verdict, sizeof verdict);
      free(ha);
      free(hb);
      free(hc);
      CHECK_CUDA(cudaEventRecord(start, st));
      run_gemm(h, st, input, sh->m, sh->n, sh->k, da, db, dc);
      CHECK_CUDA(cudaEventRecord(stop, st));
      CHECK_CUDA(cudaEventSynchronize(stop));
      float one_ms = 0.0f;
      CHECK_CUDA(cudaEventElapsedTime(&one_ms, start, stop));
      long iters = one_ms > 0 ? (long)(min_rep_seconds / (one_ms * 1e-3)) + 1 : 1;

      const double flop = 2.0 * sh->m * sh->n * (double)sh->k;
      const double bytes = (double)(na + nb) * (input == IN_F32 ? 4.0 : 2.0) + (double)nc * 4.0;
      for (int r = 0; r < reps; ++r) {
        CHECK_CUDA(cudaEventRecord(start, st));
        for (long it = 0; it < iters; ++it) run_gemm(h, st, input, sh->m, sh->n, sh->k, da, db, dc);
        CHECK_CUDA(cudaEventRecord(stop, st));
        CHECK_CUDA(cudaEventSynchronize(stop));
        float ms = 0.0f;
        CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
        const double per_iter = (double)ms * 1e-3 / (double)iters;
        printf("gemm,ceiling,cublas:sm_%d%d,%s,%s,%d,%d,%ld,%.9e,%.6e,%.6e,%s\n", prop.major, prop.minor, sh->name,
               prec, threads, r, iters, per_iter, flop, bytes, verdict);
        fflush(stdout);
        fprintf(stderr, "ceiling gemm %s %s rep %d/%d: %.2f TFLOP/s\n", sh->name, prec, r + 1, reps,
                flop / per_iter * 1e-12);
      }
      CHECK_CUDA(cudaFree(da));
      CHECK_CUDA(cudaFree(db));
      CHECK_CUDA(cudaFree(dc));
    }
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  CHECK_CUDA(cudaStreamDestroy(st));
  CHECK_CUBLAS(cublasDestroy(h));
  return 0;
}
