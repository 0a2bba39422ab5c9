/* GEMM benchmark shapes: the one list shared by ceiling/cblas_gemm_raw.c and
 * bench/gemm (C11 and C++20). C = A*B with A m x k, B k x n, row-major.
 * The training shapes are those of the seed spec §5.2 plus the GQA key/value
 * projection (Appendix A, claim 8). "gate" shapes are small enough for the CI
 * regression gate under callgrind; "full" shapes are the real workload. The
 * square gate shapes have C rows of at most 2 KiB, where the hand GEMM reads A
 * in place; wide_640 (2.5 KiB rows in f32) takes its packed-A path, so the gate
 * counts both. */
#ifndef POPPER_WORKLOADS_GEMM_SHAPES_H
#define POPPER_WORKLOADS_GEMM_SHAPES_H

struct popper_gemm_shape {
  const char* name;
  int m, n, k;
  const char* set; /* "gate" (small, CI gate) or "full" */
};

static const struct popper_gemm_shape POPPER_GEMM_SHAPES[] = {
    {"small_64", 64, 64, 64, "gate"},
    {"small_128", 128, 128, 128, "gate"},
    {"small_256", 256, 256, 256, "gate"},
    {"wide_640", 128, 640, 128, "gate"},       /* C rows > 2 KiB: the hand kernel packs A */
    {"attn_qkv", 4096, 1024, 1024, "full"},    /* Q/K/V projection, S=4096, H=1024 */
    {"attn_kv", 4096, 256, 1024, "full"},      /* GQA K/V: 4 kv heads x 64 */
    {"ffn_gate_up", 4096, 4096, 1024, "full"}, /* FFN gate/up, I=4096 */
    {"ffn_down", 4096, 1024, 4096, "full"},    /* FFN down projection */
    {"lm_head", 4096, 32768, 1024, "full"},    /* LM head, V=32768 */
    {"square_1k", 1024, 1024, 1024, "full"},
    {"square_4k", 4096, 4096, 4096, "full"},
    {"gemv_1k", 1, 1024, 1024, "full"}, /* one token through a projection: B is streamed once */
    {"gemv_4k", 1, 4096, 4096, "full"},
};

#define POPPER_GEMM_SHAPE_COUNT ((int)(sizeof(POPPER_GEMM_SHAPES) / sizeof(POPPER_GEMM_SHAPES[0])))

#endif
