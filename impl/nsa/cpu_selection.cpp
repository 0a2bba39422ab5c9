// The hand kernel's driver (ISA-neutral) and its scalar path.
//
//   for every (row t, group g), one task covering the heads of g:
//     s_j = scale * (q_h . k_j), pass 1: m, lse;  pass 2: o_h = sum_j exp(s_j - lse) v_j
//
// Tasks are independent and each owns its output rows, so the result is the
// same for every thread count and for a sequence packed or alone (tiles are
// cut from the row's own selection, never from absolute key positions).
// Threads come only from common/parallel.hpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "impl/common/parallel.hpp"
#include "impl/nsa/cpu_selection_kernels.hpp"
#include "impl/nsa/nsa.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::nsa {

namespace detail {

namespace {

// Pass 2 probabilities in place from pass 1's lse (or, for the mutant, per tile).
void scalar_probabilities(float* s, std::int64_t len, float lse, bool per_tile) {
  if (!per_tile) {
    for (std::int64_t i = 0; i < len; ++i) s[i] = std::exp(s[i] - lse);
    return;
  }
  for (std::int64_t t0 = 0; t0 < len; t0 += kPass2Tile) {
    const std::int64_t t1 = std::min(len, t0 + kPass2Tile);
    const float m = *std::max_element(s + t0, s + t1);
    float l = 0;
    for (std::int64_t i = t0; i < t1; ++i) l += std::exp(s[i] - m);
    const float tile_lse = m + std::log(l);
    for (std::int64_t i = t0; i < t1; ++i) s[i] = std::exp(s[i] - tile_lse);
  }
}

}  // namespace

void softmax_rows_scalar(float* s, int rows, std::int64_t len, std::int64_t ld, float* lse) {
  for (int r = 0; r < rows; ++r) {
    float* x = s + r * ld;
    const float m = *std::max_element(x, x + len);
    float l = 0;
    for (std::int64_t i = 0; i < len; ++i) l += std::exp(x[i] - m);
    lse[r] = m + std::log(l);
    scalar_probabilities(x, len, lse[r], false);
  }
}

void row_scalar(const RowTask& t, const KernelParams& kp, float* scratch) {
  const std::int64_t ld = score_stride(t.length);
  const int d = kp.dim, dv = kp.dim_v;
  float* q = scratch + t.heads * ld;  // the task's queries in FP32
  for (int h = 0; h < t.heads; ++h)
    for (int e = 0; e < d; ++e) q[h * d + e] = float_from_bf16(t.q[h][e]);
  // pass 1: scores, each key row read once for every head
  KeyCursor keys(t.spans, t.n_spans, t.k, t.k_stride, kp.overread_span_end);
  const bf16* row = nullptr;
  for (std::int64_t i = 0; keys.fill(&row, 1) == 1; ++i)
    for (int h = 0; h < t.heads; ++h) {
      float acc = 0;
      for (int e = 0; e < d; ++e) acc += q[h * d + e] * float_from_bf16(row[e]);
      scratch[h * ld + i] = acc * kp.scale;
    }
  for (int h = 0; h < t.heads; ++h) {
    float* s = scratch + h * ld;
    const float m = *std::max_element(s, s + t.length);
    float l = 0;
    for (std::int64_t i = 0; i < t.length; ++i) l += std::exp(s[i] - m);
    const float lse = m + std::log(l);
    if (t.lse[h]) *t.lse[h] = lse;
    scalar_probabilities(s, t.length, lse, kp.pass2_tile_lse);
  }
  // pass 2: o_h = sum_i P[h][i] v_i
  for (int h = 0; h < t.heads; ++h) std::fill(t.o[h], t.o[h] + dv, 0.0f);
  KeyCursor values(t.spans, t.n_spans, t.v, t.v_stride, false);
  for (std::int64_t i = 0; values.fill(&row, 1) == 1; ++i)
    for (int h = 0; h < t.heads; ++h) {
      const float p = scratch[h * ld + i];
      for (int e = 0; e < dv; ++e) t.o[h][e] += p * float_from_bf16(row[e]);
    }
}

}  // namespace detail

namespace {

enum class KernelPath { Scalar, Avx2, Avx512, Avx512Bf16 };

const char* backend_of(KernelPath k) {
  switch (k) {
    case KernelPath::Scalar: return "cpu:scalar";
    case KernelPath::Avx2: return "cpu:avx2";
    case KernelPath::Avx512: return "cpu:avx512";
    case KernelPath::Avx512Bf16: return "cpu:avx512bf16";
  }
  return "cpu:?";
}

using RowFn = void (*)(const detail::RowTask&, const detail::KernelParams&, float*);

RowFn row_function(KernelPath k) {
  switch (k) {
    case KernelPath::Scalar: return detail::row_scalar;
    case KernelPath::Avx2: return detail::row_avx2;
    case KernelPath::Avx512: return detail::row_avx512;
    case KernelPath::Avx512Bf16: return detail::row_avx512bf16;
  }
  return detail::row_scalar;
}

struct AlignedFloats {
  std::unique_ptr<float[], void (*)(float*)> p{nullptr, [](float* f) { ::operator delete[](f, std::align_val_t{64}); }};
  std::int64_t size = 0;
  float* get(std::int64_t n) {
    if (n > size) {
      p.reset(static_cast<float*>(::operator new[](static_cast<std::size_t>(n) * sizeof(float), std::align_val_t{64})));
      size = n;
    }
    return p.get();
  }
};

}  // namespace

RunInfo selection_attention_hand(const SelectionProblem& p, SelectionOutput out, const HandOptions& opt) {
  check_problem(p, out);
  if (opt.threads < 1) throw InvalidArgument("nsa::selection_attention_hand: threads must be >= 1");
  const popper::cpu::Isa isa = popper::cpu::resolve(opt.isa, "nsa::selection_attention_hand");
  const KernelPath path =
      isa == popper::cpu::Isa::Avx512
          ? (opt.bf16_dot && popper::cpu::has_avx512_bf16() ? KernelPath::Avx512Bf16 : KernelPath::Avx512)
      : isa == popper::cpu::Isa::Avx2 ? KernelPath::Avx2
                                      : KernelPath::Scalar;
  const RowFn run_row = row_function(path);

  const HeadLayout& lay = p.layout;
  detail::KernelParams kp;
  kp.dim = lay.dim;
  kp.dim_v = lay.dim_v;
  kp.scale = softmax_scale(lay.dim);
  if (POPPER_MUTANT("nsa-scale-twice")) kp.scale *= kp.scale;
  if (POPPER_MUTANT("nsa-scale-none")) kp.scale = 1.0f;
  kp.pass2_tile_lse = POPPER_MUTANT("nsa-pass2-tile-lse");
  kp.overread_span_end = POPPER_MUTANT("nsa-overread-span-end");
  const bool k_offset_from_q = POPPER_MUTANT("nsa-varlen-k-offset-from-q");
  const bool per_head_selection = POPPER_MUTANT("nsa-per-head-selection");

  const int G = lay.groups, hg = lay.heads_per_group();
  const std::int64_t rows = p.batch.rows();
  const auto seq = row_sequences(p.batch);
  const SpanPack& pack = *p.spans;
  std::vector<double> cost(static_cast<std::size_t>(rows * G));
  for (std::int64_t t = 0; t < rows; ++t)
    for (int g = 0; g < G; ++g)
      cost[static_cast<std::size_t>(t * G + g)] = static_cast<double>(pack.selected(t, g) * hg + 1);

  popper::parallel::run_weighted(cost, opt.threads, [&](std::size_t begin, std::size_t end, int) {
    AlignedFloats scratch;
    for (std::size_t item = begin; item < end; ++item) {
      const std::int64_t t = static_cast<std::int64_t>(item) / G;
      const int g = static_cast<int>(static_cast<std::int64_t>(item) % G);
      const int b = seq[static_cast<std::size_t>(t)];
      const std::int64_t key0 = k_offset_from_q ? p.batch.cu_seqlens_q[b] : p.batch.cu_seqlens_k[b];
      // Heads of the group in tasks of up to kMaxTaskHeads (all of them at once for h_g <= 8); the
      // per-head-selection mutant gives odd heads the next group's selection instead.
      const int step = per_head_selection ? 1 : detail::kMaxTaskHeads;
      for (int h0 = 0; h0 < hg; h0 += step) {
        const int nh = std::min(step, hg - h0);
        const int sg = per_head_selection && (h0 % 2 == 1) ? (g + 1) % G : g;
        const auto spans = pack.of(t, sg);
        std::int64_t length = 0;
        for (const Span& s : spans) length += s.end - s.begin;
        detail::RowTask task;
        task.heads = nh;
        for (int i = 0; i < nh; ++i) {
          const std::int64_t h = static_cast<std::int64_t>(g) * hg + h0 + i;
          task.q[i] = p.q.data() + (t * lay.heads + h) * lay.dim;
          task.o[i] = out.o.data() + (t * lay.heads + h) * lay.dim_v;
          task.lse[i] = out.lse.empty() ? nullptr : out.lse.data() + t * lay.heads + h;
        }
        if (length == 0) {  // nothing selected: o = 0, lse = -inf
          for (int i = 0; i < nh; ++i) {
            std::fill(task.o[i], task.o[i] + lay.dim_v, 0.0f);
            if (task.lse[i]) *task.lse[i] = -std::numeric_limits<float>::infinity();
          }
          continue;
        }
        task.k = p.k.data() + (key0 * G + g) * lay.dim;
        task.k_stride = static_cast<std::int64_t>(G) * lay.dim;
        task.v = p.v.data() + (key0 * G + g) * lay.dim_v;
        task.v_stride = static_cast<std::int64_t>(G) * lay.dim_v;
        task.spans = spans.data();
        task.n_spans = static_cast<std::int64_t>(spans.size());
        task.length = length;
        run_row(task, kp, scratch.get(detail::scratch_floats(nh, length, lay.dim)));
      }
    }
  });
  return {backend_of(path), ""};
}

}  // namespace popper::nsa
