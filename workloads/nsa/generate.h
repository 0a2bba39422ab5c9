/* The NSA bench workload, generated the same way in C (the ceiling) and C++
 * (bench/nsa and falsify/nsa testbed): one definition, header-only, C11.
 *
 *   4 sequences, R = N / 4 query rows each, at the end of their keys
 *   (pos = n_k - R + i, bottom-right alignment); G = 1 key/value group.
 *   few:  n_k(b) = 2L + R for every b (equal lengths); row span [s, s + L),
 *         s pseudo-random in [0, pos + 1 - L]
 *   many: n_k(b) = 2L + b L / 2 + R (varlen); 8 spans of L/8 keys, span j
 *         inside region [j w, (j + 1) w), w = (pos + 1) / 8, at a
 *         pseudo-random offset (gaps between spans)
 *   data: uniform [-1, 1) (the ceiling_fill / fill_uniform LCG, seeds 1, 2, 3
 *         for Q, K, V), rounded to BF16 to nearest even. */
#ifndef POPPER_WORKLOADS_NSA_GENERATE_H
#define POPPER_WORKLOADS_NSA_GENERATE_H

#include <stdint.h>
#include <string.h>

#include "workloads/nsa/shapes.h"

#define POPPER_NSA_SEQS 4
#define POPPER_NSA_MANY_SPANS 8

struct popper_nsa_layout {
  int rows_per_seq;
  int n_k[POPPER_NSA_SEQS];
  int cu_q[POPPER_NSA_SEQS + 1];
  int cu_k[POPPER_NSA_SEQS + 1];
  int spans_per_row;
};

static inline uint64_t popper_nsa_mix(uint64_t x) { /* splitmix64 finalizer */
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

static inline int popper_nsa_is_many(const struct popper_nsa_shape* s) { return strcmp(s->dist, "many") == 0; }

static inline void popper_nsa_layout_of(const struct popper_nsa_shape* s, struct popper_nsa_layout* out) {
  const int r = s->rows / POPPER_NSA_SEQS, l = s->sel_len;
  out->rows_per_seq = r;
  out->spans_per_row = popper_nsa_is_many(s) ? POPPER_NSA_MANY_SPANS : 1;
  out->cu_q[0] = out->cu_k[0] = 0;
  for (int b = 0; b < POPPER_NSA_SEQS; ++b) {
    out->n_k[b] = 2 * l + (popper_nsa_is_many(s) ? b * l / 2 : 0) + r;
    out->cu_q[b + 1] = out->cu_q[b] + r;
    out->cu_k[b + 1] = out->cu_k[b] + out->n_k[b];
  }
}

/* The spans (sequence-local [begin, end)) of query row i of sequence b. */
static inline void popper_nsa_row_spans(const struct popper_nsa_shape* s, const struct popper_nsa_layout* lay, int b,
                                        int i, int32_t* begin, int32_t* end) {
  const int l = s->sel_len;
  const int pos = lay->n_k[b] - lay->rows_per_seq + i;
  const uint64_t key = ((uint64_t)(unsigned)b << 32) ^ (uint64_t)(unsigned)i;
  if (!popper_nsa_is_many(s)) {
    const int start = (int)(popper_nsa_mix(key) % (uint64_t)(pos + 2 - l));
    begin[0] = start;
    end[0] = start + l;
    return;
  }
  const int seg = l / POPPER_NSA_MANY_SPANS, w = (pos + 1) / POPPER_NSA_MANY_SPANS;
  for (int j = 0; j < POPPER_NSA_MANY_SPANS; ++j) {
    const int off = (int)(popper_nsa_mix(key * 8u + (uint64_t)j) % (uint64_t)(w - seg + 1));
    begin[j] = j * w + off;
    end[j] = begin[j] + seg;
  }
}

/* FP32 -> BF16, round to nearest even (the same rule as popper::nsa::bf16_from_float). */
static inline uint16_t popper_nsa_bf16(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((bits >> 16) | 0x0040u);
  return (uint16_t)((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

static inline float popper_nsa_float(uint16_t b) {
  const uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* FLOP per call: QK^T and PV, 2 FLOP per multiply-add. */
static inline double popper_nsa_flop(const struct popper_nsa_shape* s) {
  return 2.0 * (double)s->rows * s->heads * (double)s->sel_len * (double)(2 * s->dim);
}

/* Compulsory bytes per call: Q, the selected K/V rows of every row, O (FP32). */
static inline double popper_nsa_bytes(const struct popper_nsa_shape* s) {
  return 2.0 * s->rows * s->heads * s->dim + 2.0 * s->rows * (double)s->sel_len * 2 * s->dim +
         4.0 * s->rows * s->heads * s->dim;
}

#endif
