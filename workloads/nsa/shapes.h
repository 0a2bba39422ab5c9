/* NSA selection attention benchmark shapes: the one list shared by
 * ceiling/cblas_nsa_raw.c, bench/nsa and falsify/nsa (C11 and C++20).
 *
 * The seed's grid: L (selected keys per row) in {64 .. 1024} plus 4096,
 * N (query rows) in {256, 1024}, H (heads, one KV group) in {4, 8},
 * D = Dv in {64, 128}; "few" = one span of L keys per row (dense batch of 4
 * equal sequences), "many" = 8 spans of L/8 keys with gaps (varlen batch of 4
 * sequences of different lengths). Names: <dist>_n<N>_h<H>_d<D>_l<L>; the
 * threshold command reads n, h, d, l back from them. "gate" shapes are small
 * enough for the callgrind gate. The workload itself is in generate.h. */
#ifndef POPPER_WORKLOADS_NSA_SHAPES_H
#define POPPER_WORKLOADS_NSA_SHAPES_H

struct popper_nsa_shape {
  const char* name;
  const char* dist; /* "few" | "many" */
  int rows;         /* N */
  int heads;        /* H (heads per group; G = 1) */
  int dim;          /* D = Dv */
  int sel_len;      /* L */
  const char* set;  /* "gate" | "full" */
};

#define POPPER_NSA_SHAPE(dist, n, h, d, l) \
  { #dist "_n" #n "_h" #h "_d" #d "_l" #l, #dist, n, h, d, l, "full" }
#define POPPER_NSA_LS(dist, n, h, d)                                                                               \
  POPPER_NSA_SHAPE(dist, n, h, d, 64), POPPER_NSA_SHAPE(dist, n, h, d, 128), POPPER_NSA_SHAPE(dist, n, h, d, 256), \
      POPPER_NSA_SHAPE(dist, n, h, d, 512), POPPER_NSA_SHAPE(dist, n, h, d, 1024),                                 \
      POPPER_NSA_SHAPE(dist, n, h, d, 4096)
#define POPPER_NSA_HD(dist, n)                                                                  \
  POPPER_NSA_LS(dist, n, 4, 64), POPPER_NSA_LS(dist, n, 4, 128), POPPER_NSA_LS(dist, n, 8, 64), \
      POPPER_NSA_LS(dist, n, 8, 128)

static const struct popper_nsa_shape POPPER_NSA_SHAPES[] = {
    {"gate_few_n16_h4_d64_l64", "few", 16, 4, 64, 64, "gate"},
    {"gate_many_n16_h4_d64_l128", "many", 16, 4, 64, 128, "gate"},
    POPPER_NSA_HD(few, 256),
    POPPER_NSA_HD(few, 1024),
    POPPER_NSA_HD(many, 256),
    POPPER_NSA_HD(many, 1024),
};

#define POPPER_NSA_SHAPE_COUNT ((int)(sizeof(POPPER_NSA_SHAPES) / sizeof(POPPER_NSA_SHAPES[0])))

#endif
