/* Ceiling tier for GEMM: OpenBLAS called directly from C, no wrapper.
 *
 *   C = alpha * A * B + beta * C   (row-major, NoTrans/NoTrans, alpha=1, beta=0)
 *
 * The timing loop is gemm_ceiling.h's (shared with the BLIS ceiling). The
 * backend column names the core OpenBLAS loaded ("openblas:SkylakeX").
 * OPENBLAS_CORETYPE is read by OpenBLAS at load time, so the harness compares
 * core types by running this program under different environments, after
 * `--probe` told it which core a setting really loads (an unknown name falls
 * back to auto-detection silently). */
#include "gemm_ceiling.h" /* first: it sets _POSIX_C_SOURCE */

#include <cblas.h>

/* OpenBLAS extensions (declared in its cblas.h on most distributions; repeated
 * here so the program also builds against headers that omit them). */
char* openblas_get_corename(void);
void openblas_set_num_threads(int num_threads);

/* One row of C is a GEMV, c = B^T a: OpenBLAS's best routine for it (its GEMM
 * packs all of B; 0.3.27 forwards such calls to GEMV itself). */
static void run_gemm(int is_f64, int m, int n, int k, const void* a, const void* b, void* c) {
  if (m == 1 && is_f64)
    cblas_dgemv(CblasRowMajor, CblasTrans, k, n, 1.0, (const double*)b, n, (const double*)a, 1, 0.0, (double*)c, 1);
  else if (m == 1)
    cblas_sgemv(CblasRowMajor, CblasTrans, k, n, 1.0f, (const float*)b, n, (const float*)a, 1, 0.0f, (float*)c, 1);
  else if (is_f64)
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, (const double*)a, k, (const double*)b, n, 0.0,
                (double*)c, n);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, (const float*)a, k, (const float*)b, n, 0.0f,
                (float*)c, n);
}

int main(int argc, char** argv) {
  const char* program = "ceiling_cblas_gemm_raw";
  struct ceiling_args args;
  const int rc = ceiling_gemm_open(argc, argv, program, &args);
  if (rc >= 0) return rc;
  const char* core = openblas_get_corename();
  if (args.probe) {
    printf("# config: %s\n", core);
    return 0;
  }
  openblas_set_num_threads(args.threads);
  fprintf(stderr, "# blas_core: %s\n", core);
  char backend[96];
  snprintf(backend, sizeof backend, "openblas:%s", core);
  return ceiling_gemm_run(&args, program, backend, run_gemm);
}
