/* Ceiling tier for GEMM through BLIS, called directly from C (typed API).
 *
 *   C = alpha * A * B + beta * C   (row-major, NoTrans/NoTrans, alpha=1, beta=0)
 *
 * bli_?gemm takes a row and a column stride per operand, so row-major
 * operands are passed as they are (rs = leading dimension, cs = 1). The
 * timing loop is gemm_ceiling.h's, shared with the OpenBLAS ceiling.
 *
 * BLIS picks its sub-configuration (kernel set) once per process: from
 * BLIS_ARCH_TYPE when set (a numeric arch_t id: 0 skx, 3 haswell, 6 zen3,
 * 25 generic in BLIS 0.9), else from its own CPU detection. The backend
 * column names what it selected ("blis:skx"); --probe prints only that.
 * Threads: --threads (bli_thread_set_num_threads; the harness also sets
 * BLIS_NUM_THREADS to the same value). Built only when CMake found BLIS
 * (POPPER_BLIS). */
#include "gemm_ceiling.h" /* first: it sets _POSIX_C_SOURCE */

#include <blis.h>

/* One row of C is a GEMV, c = B^T a: BLIS's gemv for it, as its GEMM would
 * pack all of B. */
static void run_gemm(int is_f64, int m, int n, int k, const void* a, const void* b, void* c) {
  if (m == 1 && is_f64) {
    double one = 1.0, zero = 0.0;
    bli_dgemv(BLIS_TRANSPOSE, BLIS_NO_CONJUGATE, k, n, &one, (double*)b, n, 1, (double*)a, 1, &zero, (double*)c, 1);
  } else if (m == 1) {
    float one = 1.0f, zero = 0.0f;
    bli_sgemv(BLIS_TRANSPOSE, BLIS_NO_CONJUGATE, k, n, &one, (float*)b, n, 1, (float*)a, 1, &zero, (float*)c, 1);
  } else if (is_f64) {
    double one = 1.0, zero = 0.0;
    bli_dgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, &one, (double*)a, k, 1, (double*)b, n, 1, &zero,
              (double*)c, n, 1);
  } else {
    float one = 1.0f, zero = 0.0f;
    bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, &one, (float*)a, k, 1, (float*)b, n, 1, &zero, (float*)c,
              n, 1);
  }
}

int main(int argc, char** argv) {
  const char* program = "ceiling_blis_gemm_raw";
  struct ceiling_args args;
  const int rc = ceiling_gemm_open(argc, argv, program, &args);
  if (rc >= 0) return rc;
  /* bli_init before the first query: BLIS validates BLIS_ARCH_TYPE against the
   * sub-configurations it registered, and aborts on an id it was not built with. */
  bli_init();
  const char* arch = bli_arch_string(bli_arch_query_id());
  if (args.probe) {
    printf("# config: %s\n", arch);
    return 0;
  }
  bli_thread_set_num_threads(args.threads);
  fprintf(stderr, "# blis_config: %s (BLIS %s)\n", arch, bli_info_get_version_str());
  char backend[96];
  snprintf(backend, sizeof backend, "blis:%s", arch);
  return ceiling_gemm_run(&args, program, backend, run_gemm);
}
