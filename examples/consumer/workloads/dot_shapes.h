/* The dot family's workloads: one table for the suite, the ceiling and the
 * gate (bench/family.yaml names the gate's). C and C++. */
#ifndef DOTKIT_WORKLOADS_DOT_SHAPES_H
#define DOTKIT_WORKLOADS_DOT_SHAPES_H

struct dotkit_dot_shape {
  const char* name;
  long n; /* elements of x and of y */
};

/* n_1k and n_16k fit the L1 and L2 (the gate's, cheap under callgrind);
 * n_1m streams 8 MiB through the LLC. */
static const struct dotkit_dot_shape DOTKIT_DOT_SHAPES[] = {
    {"n_1k", 1024},
    {"n_16k", 16384},
    {"n_1m", 1048576},
};
#define DOTKIT_DOT_SHAPE_COUNT ((int)(sizeof DOTKIT_DOT_SHAPES / sizeof DOTKIT_DOT_SHAPES[0]))

#endif
