/* Fused-kernel benchmark shapes: the one list shared by ceiling/cblas_fused_raw.c
 * and bench/fused (C11 and C++20). The full shapes are the seed's transformer
 * block (training-performance-spec.md section 11: B = 4, S = 1024, H = 1024,
 * 16 Q / 4 KV heads, head_dim 64, I = 4096, V = 32768) plus a 128K-vocabulary
 * CE case (1024 tokens, so one logits tensor stays 512 MiB); "gate" shapes are
 * small enough for the callgrind instruction-count gate. */
#ifndef POPPER_WORKLOADS_FUSED_SHAPES_H
#define POPPER_WORKLOADS_FUSED_SHAPES_H

enum popper_fused_kernel {
  POPPER_FUSED_CE,       /* cross-entropy forward + backward */
  POPPER_FUSED_RMSNORM,  /* RMSNorm forward + backward */
  POPPER_FUSED_SWIGLU,   /* SwiGLU forward + backward */
  POPPER_FUSED_ROPE,     /* RoPE forward on Q and K */
  POPPER_FUSED_ATTN_FWD, /* causal GQA attention forward */
  POPPER_FUSED_ATTN_BWD  /* causal GQA attention backward */
};

struct popper_fused_shape {
  const char* name;
  enum popper_fused_kernel kernel;
  int batch, seq, hidden, q_heads, kv_heads, head_dim, intermediate, vocab;
  const char* set; /* "gate" or "full" */
};

static const struct popper_fused_shape POPPER_FUSED_SHAPES[] = {
    {"ce_gate", POPPER_FUSED_CE, 1, 16, 0, 0, 0, 0, 0, 4096, "gate"},
    {"rmsnorm_gate", POPPER_FUSED_RMSNORM, 1, 64, 256, 0, 0, 0, 0, 0, "gate"},
    {"swiglu_gate", POPPER_FUSED_SWIGLU, 1, 64, 0, 0, 0, 0, 512, 0, "gate"},
    {"rope_gate", POPPER_FUSED_ROPE, 1, 64, 0, 4, 2, 64, 0, 0, "gate"},
    {"attn_fwd_gate", POPPER_FUSED_ATTN_FWD, 1, 128, 0, 2, 1, 64, 0, 0, "gate"},
    {"attn_bwd_gate", POPPER_FUSED_ATTN_BWD, 1, 128, 0, 2, 1, 64, 0, 0, "gate"},
    {"ce_v32k", POPPER_FUSED_CE, 4, 1024, 0, 0, 0, 0, 0, 32768, "full"},
    {"ce_v128k", POPPER_FUSED_CE, 1, 1024, 0, 0, 0, 0, 0, 131072, "full"},
    {"rmsnorm_h1024", POPPER_FUSED_RMSNORM, 4, 1024, 1024, 0, 0, 0, 0, 0, "full"},
    {"swiglu_i4096", POPPER_FUSED_SWIGLU, 4, 1024, 0, 0, 0, 0, 4096, 0, "full"},
    {"rope_s1024", POPPER_FUSED_ROPE, 4, 1024, 0, 16, 4, 64, 0, 0, "full"},
    {"attn_fwd_s1024", POPPER_FUSED_ATTN_FWD, 4, 1024, 0, 16, 4, 64, 0, 0, "full"},
    {"attn_bwd_s1024", POPPER_FUSED_ATTN_BWD, 4, 1024, 0, 16, 4, 64, 0, 0, "full"},
};

#define POPPER_FUSED_SHAPE_COUNT ((int)(sizeof(POPPER_FUSED_SHAPES) / sizeof(POPPER_FUSED_SHAPES[0])))

/* Work and compulsory traffic per call, the same for every tier (the problem's, not an
 * implementation's): flop for the roofline placement, bytes that must cross memory.
 *   CE       8 flop and 8 bytes per logit (read, gradient written in place)
 *   RMSNorm  13 flop, 20 bytes per element (x twice, y, dy, dx)
 *   SwiGLU   15 flop, 32 bytes per element (g, u, h; dh, g, u, d_gate, d_up)
 *   RoPE     3 flop, 8 bytes per element of Q and K (read, write)
 *   attention forward 4 B Hq D S(S+1)/2 flop (causal QK^T and PV), bytes of q, k, v, o;
 *   backward 2.5x the forward flop (five products), bytes of q, k, v, o, dO, dq, dk, dv */
static double popper_fused_flop(const struct popper_fused_shape* s) {
  const double tokens = (double)s->batch * s->seq;
  const double causal_pairs = (double)s->seq * (s->seq + 1) / 2.0;
  switch (s->kernel) {
    case POPPER_FUSED_CE: return 8.0 * tokens * s->vocab;
    case POPPER_FUSED_RMSNORM: return 13.0 * tokens * s->hidden;
    case POPPER_FUSED_SWIGLU: return 15.0 * tokens * s->intermediate;
    case POPPER_FUSED_ROPE: return 3.0 * tokens * (s->q_heads + s->kv_heads) * s->head_dim;
    case POPPER_FUSED_ATTN_FWD: return 4.0 * s->batch * s->q_heads * s->head_dim * causal_pairs;
    case POPPER_FUSED_ATTN_BWD: return 10.0 * s->batch * s->q_heads * s->head_dim * causal_pairs;
  }
  return 0;
}
static double popper_fused_bytes(const struct popper_fused_shape* s) {
  const double tokens = (double)s->batch * s->seq;
  const double q = tokens * s->q_heads * s->head_dim, kv = tokens * s->kv_heads * s->head_dim;
  switch (s->kernel) {
    case POPPER_FUSED_CE: return 8.0 * tokens * s->vocab;
    case POPPER_FUSED_RMSNORM: return 20.0 * tokens * s->hidden;
    case POPPER_FUSED_SWIGLU: return 32.0 * tokens * s->intermediate;
    case POPPER_FUSED_ROPE: return 8.0 * (q + kv);
    case POPPER_FUSED_ATTN_FWD: return 4.0 * (2 * q + 2 * kv);
    case POPPER_FUSED_ATTN_BWD: return 4.0 * (5 * q + 4 * kv);
  }
  return 0;
}

#endif
