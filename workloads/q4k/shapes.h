/* Q4_K GEMV benchmark shapes: the one list shared by bench/q4k (C++20) and the
 * ceilings ceiling/ggml_q4k_raw.c and ceiling/cblas_q4k_raw.c (C11).
 * y = W x, W rows x cols in Q4_K (0.5625 B/weight), x and y FP32.
 * "gate" shapes are small enough for the callgrind gate; "full" shapes are
 * decode-sized: Llama-7B attention and FFN rows, 16384 x 4096 (37.7 MB of
 * weights) and twice that, both above a 32 MiB last-level cache. The names are
 * the rows' keys in stored baselines: renaming one orphans its history. */
#ifndef POPPER_WORKLOADS_Q4K_SHAPES_H
#define POPPER_WORKLOADS_Q4K_SHAPES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct popper_q4k_shape {
  const char* name;
  int rows, cols;
  const char* set; /* "gate" or "full" */
};

static const struct popper_q4k_shape POPPER_Q4K_SHAPES[] = {
    {"gate_256x1024", 256, 1024, "gate"},          {"gate_512x2048", 512, 2048, "gate"},
    {"llama_attn_4096x4096", 4096, 4096, "full"},  /* 9.4 MB of weights */
    {"llama_ffn_11008x4096", 11008, 4096, "full"}, /* 25.4 MB */
    {"issue_16384x4096", 16384, 4096, "full"},     /* 37.7 MB */
    {"big_32768x4096", 32768, 4096, "full"},       /* 75.5 MB */
};

#define POPPER_Q4K_SHAPE_COUNT ((int)(sizeof(POPPER_Q4K_SHAPES) / sizeof(POPPER_Q4K_SHAPES[0])))
#define POPPER_Q4K_BLOCK_BYTES 144
#define POPPER_Q4K_SEED 20261123ULL

/* Bytes a GEMV must move: W, x and y. */
static inline double popper_q4k_bytes(int rows, int cols) {
  return (double)rows * (double)(cols / 256) * POPPER_Q4K_BLOCK_BYTES + 4.0 * cols + 4.0 * rows;
}

/* Deterministic valid Q4_K blocks, identical in every tier: random codes and
 * 6-bit scales from the shared 64-bit LCG; d in [2^-8, 2^-7) and dmin in
 * [2^-5, 2^-4) as exact FP16 bit patterns, so weights span about [-4, 7]. */
static inline void popper_q4k_fill_blocks(unsigned char* blocks, size_t count, unsigned long long seed) {
  unsigned long long x = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (size_t b = 0; b < count; ++b) {
    unsigned char* p = blocks + b * POPPER_Q4K_BLOCK_BYTES;
    for (int i = 0; i < POPPER_Q4K_BLOCK_BYTES; ++i) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      p[i] = (unsigned char)(x >> 56);
    }
    const uint16_t d = (uint16_t)(0x1C00u | ((unsigned)(x >> 20) & 0x3FFu));    /* 2^-8 .. */
    const uint16_t dmin = (uint16_t)(0x2800u | ((unsigned)(x >> 40) & 0x3FFu)); /* 2^-5 .. */
    memcpy(p, &d, 2);
    memcpy(p + 2, &dmin, 2);
  }
}

#endif
