/* Shapes of the sae family (Kronecker-factored SAE Schur operator): the one
 * list shared by bench_sae (Google Benchmark: wrapped = dense route, hand =
 * matrix-free) and the optional ceiling. Valid C11 and C++20.
 *
 * Every row has exactly m support entries (block indices drawn with
 * replacement from [0, K), so repeats occur) and a q x p local Jacobian.
 * op = apply: y = (sum_i S_i + rho I) x; op = solve: the reduced Schur solve.
 * The dense route stores (K p)^2 doubles and declines above its memory budget
 * (and, for solve, above its flop budget); apply_p2048/p5120 are beyond it. */
#ifndef POPPER_WORKLOADS_SAE_SHAPES_H
#define POPPER_WORKLOADS_SAE_SHAPES_H

enum { SAE_OP_APPLY = 0, SAE_OP_SOLVE = 1 };

typedef struct sae_shape {
  const char* name;
  int op;   /* SAE_OP_APPLY | SAE_OP_SOLVE */
  int rows; /* n */
  int K;    /* beta blocks */
  int p;    /* decoder output width */
  int m;    /* support entries per row */
  int q;    /* local coordinates per row */
  unsigned long long seed;
} sae_shape;

static const sae_shape sae_shapes[] = {
    {"apply_p64", SAE_OP_APPLY, 256, 16, 64, 4, 8, 0x5AE0001ULL},
    {"apply_p256", SAE_OP_APPLY, 512, 16, 256, 4, 8, 0x5AE0002ULL},
    {"apply_p1024", SAE_OP_APPLY, 512, 12, 1024, 4, 8, 0x5AE0003ULL}, /* dense 1.1 GiB */
    {"apply_p2048", SAE_OP_APPLY, 512, 16, 2048, 4, 8, 0x5AE0004ULL}, /* dense 8 GiB: declines */
    {"apply_p5120", SAE_OP_APPLY, 512, 64, 5120, 4, 8, 0x5AE0005ULL}, /* seed's LLM width; dense 800 GiB */
    {"solve_p64", SAE_OP_SOLVE, 256, 16, 64, 4, 8, 0x5AE0011ULL},
    /* The CI gate's solve: solve_p64 at half the blocks, so that the dense
     * route's Cholesky (K p = 512) takes seconds under callgrind. */
    {"solve_gate", SAE_OP_SOLVE, 256, 8, 64, 4, 8, 0x5AE0017ULL},
    {"solve_p256", SAE_OP_SOLVE, 512, 16, 256, 4, 8, 0x5AE0012ULL},
    {"solve_p1024", SAE_OP_SOLVE, 512, 12, 1024, 4, 8, 0x5AE0013ULL}, /* dense potrf 6e11 flop: declines */
    {"solve_p5120", SAE_OP_SOLVE, 512, 64, 5120, 4, 8, 0x5AE0015ULL},
};
static const int sae_shape_count = (int)(sizeof(sae_shapes) / sizeof(sae_shapes[0]));

/* Budgets of the dense route (the wrapped tier declines above them). */
#define SAE_DENSE_MAX_BYTES (4.0 * 1024.0 * 1024.0 * 1024.0)
#define SAE_DENSE_MAX_SOLVE_FLOP 1.0e11

#endif
