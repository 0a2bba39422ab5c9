/* Shapes of the arrow (batched K=1 border solve) family: the one list shared
 * by bench_arrow (Google Benchmark: reference, wrapped, hand tiers) and
 * ceiling_lapack_arrow_raw (raw C LAPACKE). Valid C11 and C++20.
 *
 * A shape is a color class of `atoms` independent atoms; atom a's row count
 * n_a is drawn uniformly from [rows_min, rows_max] by generate.h's fixed-seed
 * PRNG, with row dimension d and border dimension k for every atom. */
#ifndef POPPER_WORKLOADS_ARROW_SHAPES_H
#define POPPER_WORKLOADS_ARROW_SHAPES_H

typedef struct arrow_shape {
  const char* name;
  int atoms;    /* B */
  int rows_min; /* n_a range, inclusive */
  int rows_max;
  int d; /* row block dimension */
  int k; /* border dimension */
  unsigned long long seed;
  int reference; /* 1: small enough for the dense Eigen reference tier */
} arrow_shape;

static const arrow_shape arrow_shapes[] = {
    /* SAC backfitting scale (seed section 2): B = 4096 atoms, n_a in 16..256, d = 2, k = 6. */
    {"sac_b4096_d2_k6", 4096, 16, 256, 2, 6, 0x5AC0001ULL, 0},
    /* Small gate shape: quick enough for every tier, including the reference. */
    {"gate_b64_d2_k6", 64, 4, 32, 2, 6, 0x6A7E001ULL, 1},
};
static const int arrow_shape_count = (int)(sizeof(arrow_shapes) / sizeof(arrow_shapes[0]));

#endif
