/* Training-step presets: the one list shared by bench/train, the libtorch
 * ceiling (ceiling/torch_train_raw.cpp), the falsifiers (falsify/train) and
 * popper train (tools/popper_train.cpp).
 *   tiny        the contract tests' model (a step in milliseconds)
 *   small       the bench model: hidden 512, 8 layers, 8:2 heads of 64, with
 *               S = 512 and B = 1 so that a step is about a second on this project's 2-core machine
 *   albor-350m  the seed's shapes (hidden 1024, 24 layers, intermediate 4096, vocabulary 32768,
 *               seq 1024, batch 4; 16:4 heads of 64): run by popper train where the machine allows,
 *               never by the bench (a step is minutes here)
 * "set" is the bench's: gate (the CI instruction-count gate), full (timed runs), none (not benched). */
#ifndef POPPER_WORKLOADS_TRAIN_SHAPES_H
#define POPPER_WORKLOADS_TRAIN_SHAPES_H
#include <string.h>

struct popper_train_shape {
  const char* name;
  int vocab, hidden, layers, q_heads, kv_heads, head_dim, intermediate, seq, batch;
  const char* set;
};

static const struct popper_train_shape POPPER_TRAIN_SHAPES[] = {
    {"tiny", 128, 64, 2, 4, 2, 16, 160, 32, 2, "gate"},
    {"small", 8192, 512, 8, 8, 2, 64, 2048, 512, 1, "full"},
    {"albor-350m", 32768, 1024, 24, 16, 4, 64, 4096, 1024, 4, "none"},
};
#define POPPER_TRAIN_SHAPE_COUNT ((int)(sizeof(POPPER_TRAIN_SHAPES) / sizeof(POPPER_TRAIN_SHAPES[0])))

static inline const struct popper_train_shape* popper_train_find_shape(const char* name) {
  for (int i = 0; i < POPPER_TRAIN_SHAPE_COUNT; ++i)
    if (strcmp(POPPER_TRAIN_SHAPES[i].name, name) == 0) return &POPPER_TRAIN_SHAPES[i];
  return 0;
}

/* The work of a step as MFU counts it: 6 P tokens, P the parameters that take
 * part in a matrix product (every weight matrix but the embedding table, a
 * gather; the biases, norms and attention's own products are not counted). */
static inline double popper_train_matmul_params(const struct popper_train_shape* s) {
  const double H = s->hidden, Q = (double)s->q_heads * s->head_dim, K = (double)s->kv_heads * s->head_dim;
  return s->layers * (2.0 * Q * H + 2.0 * K * H + 3.0 * H * s->intermediate) + (double)s->vocab * H;
}
static inline double popper_train_flop(const struct popper_train_shape* s) {
  return 6.0 * popper_train_matmul_params(s) * (double)s->batch * s->seq;
}

#ifdef __cplusplus
#include "impl/train/train.hpp"
/* The preset as the model's Config. */
inline popper::train::Config popper_train_config(const popper_train_shape& s) {
  popper::train::Config c;
  c.vocab = s.vocab, c.hidden = s.hidden, c.layers = s.layers, c.q_heads = s.q_heads, c.kv_heads = s.kv_heads;
  c.head_dim = s.head_dim, c.intermediate = s.intermediate, c.seq = s.seq, c.batch = s.batch;
  return c;
}
#endif
#endif
