// Internal interface between the hand-kernel driver (cpu_selection.cpp) and
// its ISA translation units (cpu_selection_{avx2,avx512,avx512bf16}.cpp).
//
// One RowTask = one query row t, one GQA group g, up to kMaxTaskHeads heads of
// that group. Its keys are the concatenation of the spans of (t, g); every
// key tile is loaded once and used by all heads of the task (group-centric).
//
//   pass 1:  S[h][i] = scale * (q_h . k_{j_i}),  m_h = max_i S[h][i],
//            lse_h = m_h + log(sum_i exp(S[h][i] - m_h))
//   pass 2:  P[h][i] = exp(S[h][i] - lse_h)   (pass 1's lse, for every tile)
//            o_h = sum_i P[h][i] v_{j_i}      (FP32 FMA chains over the keys in selection order)
#pragma once
#include <cstdint>

#include "impl/nsa/nsa.hpp"

namespace popper::nsa::detail {

inline constexpr int kMaxTaskHeads = 8;
inline constexpr std::int64_t kPass2Tile = 64;  // tile of the concatenated selection (the per-tile-lse mutant's unit)

struct RowTask {
  int heads = 0;  // 1..kMaxTaskHeads
  const bf16* q[kMaxTaskHeads] = {};
  float* o[kMaxTaskHeads] = {};
  float* lse[kMaxTaskHeads] = {};  // entries may be null
  const bf16* k = nullptr;         // key 0 of the sequence, this group
  std::int64_t k_stride = 0;       // elements between consecutive keys (G * D)
  const bf16* v = nullptr;
  std::int64_t v_stride = 0;  // G * Dv
  const Span* spans = nullptr;
  std::int64_t n_spans = 0;
  std::int64_t length = 0;  // selected keys, > 0
};

struct KernelParams {
  int dim = 0, dim_v = 0;
  float scale = 0;
  bool pass2_tile_lse = false;     // mutant nsa-pass2-tile-lse
  bool overread_span_end = false;  // mutant nsa-overread-span-end
};

// Row stride of the score scratch: room for whole 16-lane tiles.
inline std::int64_t score_stride(std::int64_t length) { return (length + 15) / 16 * 16 + 16; }
// Floats of scratch one task needs (scores of every head + the prepared queries).
inline std::int64_t scratch_floats(int heads, std::int64_t length, int dim) {
  return heads * score_stride(length) + kMaxTaskHeads * ((dim + 31) / 32 * 32) + 16;
}

// Walks the keys of a span list in order and hands out row pointers. With
// `overread` (a mutant) it also reads the key one past the end of every span.
struct KeyCursor {
  const Span* s;
  const Span* e;
  std::int32_t j = 0, end = 0;
  const bf16* base;
  std::int64_t stride;
  bool overread;

  KeyCursor(const Span* spans, std::int64_t n, const bf16* b, std::int64_t st, bool over)
      : s(spans), e(spans + n), base(b), stride(st), overread(over) {
    enter();
  }
  void enter() {
    while (s != e && s->begin >= s->end) ++s;
    if (s != e) j = s->begin, end = s->end;
  }
  void leave() {
    if (overread) {
      [[maybe_unused]] static volatile bf16 sink;
      sink = base[static_cast<std::int64_t>(end) * stride];
    }
    ++s;
    enter();
  }
  bool done() const { return s == e; }
  // Up to `max` row pointers; returns how many.
  int fill(const bf16** rows, int max) {
    int n = 0;
    while (n < max && s != e) {
      rows[n++] = base + static_cast<std::int64_t>(j) * stride;
      if (++j == end) leave();
    }
    return n;
  }
};

// Each computes o and lse of one task; scratch holds scratch_floats(...) floats, 64-byte aligned.
void row_scalar(const RowTask& t, const KernelParams& kp, float* scratch);
void row_avx2(const RowTask& t, const KernelParams& kp, float* scratch);
void row_avx512(const RowTask& t, const KernelParams& kp, float* scratch);
void row_avx512bf16(const RowTask& t, const KernelParams& kp, float* scratch);

// In place: S[r][0..len) -> exp(S - lse_r), lse[r] = log sum exp S[r][.] (the fallback's softmax).
void softmax_rows_scalar(float* s, int rows, std::int64_t len, std::int64_t ld, float* lse);
void softmax_rows_avx2(float* s, int rows, std::int64_t len, std::int64_t ld, float* lse);
void softmax_rows_avx512(float* s, int rows, std::int64_t len, std::int64_t ld, float* lse);

}  // namespace popper::nsa::detail
