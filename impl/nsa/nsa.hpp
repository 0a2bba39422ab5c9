// NSA selection attention under contract (contracts/nsa/nsa-selection-v1.yaml).
//
// Notation of the contract: B sequences packed with cu_seqlens_q / cu_seqlens_k;
// H query heads, G key/value groups, h_g = H / G heads per group, head h in
// group floor(h / h_g); Q[t, h, D], K[u, g, D], V[u, g, Dv] in BF16 (uint16),
// O[t, h, Dv] and lse[t, h] in FP32. Query row t of sequence b sits at key
// position pos(t) = n_k(b) - n_q(b) + (t - cu_seqlens_q[b]).
//
//   block selection   I(t, g) = forced(initial, local) U top-n by group score,
//                     ties to the lower block index, causal eligibility
//   span packing      J(t, g) = union_i [i l', min((i+1) l', pos + 1, n_k)) as maximal runs
//   attention         s_j = (q . k_j) / sqrt(D);  pass 1: m, lse;  pass 2: o = sum_j exp(s_j - lse) v_j
//
// Paths: the hand kernel (group-centric, one task per (row, group) covering
// all heads of the group, BF16 pair dot products, FP32 accumulation), the
// fallback ("packed SDPA": gather + dense attention through OpenBLAS SGEMM),
// a CUDA entry that declines to the hand kernel without a device, and the
// router that picks hand or fallback from a committed threshold file.
//
// Every entry point checks sizes and cu_seqlens before touching memory and
// throws popper::BufferTooSmall / popper::InvalidArgument.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "impl/common/cpu_features.hpp"

namespace popper::nsa {

// ---- BF16 storage -------------------------------------------------------

using bf16 = std::uint16_t;

// Round to nearest even; NaN stays a (quiet) NaN, +-Inf stay +-Inf.
bf16 bf16_from_float(float x);
inline float float_from_bf16(bf16 b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
void to_bf16(std::span<const float> in, std::span<bf16> out);  // sizes must match

// ---- Shapes ---------------------------------------------------------------

struct HeadLayout {
  int heads = 1;   // H
  int groups = 1;  // G, H % G == 0
  int dim = 0;     // D (queries and keys)
  int dim_v = 0;   // Dv
  int heads_per_group() const { return groups > 0 ? heads / groups : 0; }
};

// Views of cu_seqlens_q and cu_seqlens_k (B + 1 entries each).
struct VarlenBatch {
  std::span<const std::int32_t> cu_seqlens_q;
  std::span<const std::int32_t> cu_seqlens_k;
  int sequences() const { return cu_seqlens_q.empty() ? 0 : static_cast<int>(cu_seqlens_q.size()) - 1; }
  std::int64_t rows() const { return cu_seqlens_q.empty() ? 0 : cu_seqlens_q.back(); }
  std::int64_t keys() const { return cu_seqlens_k.empty() ? 0 : cu_seqlens_k.back(); }
};

// Throws InvalidArgument unless both arrays have B + 1 >= 2 entries, start at
// 0, never decrease, and n_q(b) <= n_k(b) for every sequence.
void check_batch(const VarlenBatch& batch);

// The sequence of every query row (size T_q), for a checked batch.
std::vector<std::int32_t> row_sequences(const VarlenBatch& batch);

// ---- Block selection ------------------------------------------------------

struct SelectionConfig {
  int block_size = 64;  // l'
  int top_n = 16;       // n blocks per (row, group), forced ones included
  int n_init = 1;       // initial blocks always selected
  int n_local = 2;      // local blocks (the query's block and the ones before it)
};

// ceil(n_k / block_size).
std::int32_t block_count(std::int32_t n_k, int block_size);

// Group importance p[t, g, i] = sum over the heads of group g of p_h[t, h, i]
// (FP64 in head order, rounded once). head_scores is [rows, H, stride],
// group_scores [rows, G, stride].
void group_block_scores(const HeadLayout& layout, std::int64_t rows, int stride, std::span<const float> head_scores,
                        std::span<float> group_scores);

struct BlockSelection {
  std::int64_t rows = 0;
  int groups = 0;
  int top_n = 0;
  int block_size = 0;
  std::vector<std::int32_t> blocks;  // [rows, groups, top_n], ascending, -1 padded
  std::span<const std::int32_t> of(std::int64_t row, int group) const {
    return {blocks.data() + (row * groups + group) * top_n, static_cast<std::size_t>(top_n)};
  }
};

// scores: [T_q, G, stride] group importance, stride >= the largest block
// count of any sequence. No NaN. Deterministic for every thread count.
BlockSelection select_blocks(const VarlenBatch& batch, int groups, const SelectionConfig& cfg,
                             std::span<const float> scores, int stride, int threads = 1);

// ---- Span packing ---------------------------------------------------------

struct Span {
  std::int32_t begin = 0, end = 0;  // sequence-local key positions [begin, end)
};

// The selected key spans of every (row, group), row-major: offsets has
// rows * groups + 1 entries (cu_spans).
struct SpanPack {
  std::int64_t rows = 0;
  int groups = 0;
  std::vector<std::int64_t> offsets;
  std::vector<Span> spans;

  std::span<const Span> of(std::int64_t row, int group) const {
    const std::size_t i = static_cast<std::size_t>(row * groups + group);
    return {spans.data() + offsets[i], static_cast<std::size_t>(offsets[i + 1] - offsets[i])};
  }
  std::int64_t selected(std::int64_t row, int group) const;  // L(t, g)
  std::int64_t total_selected() const;
  double mean_selected() const;  // Lbar; 0 for an empty pack
};

// Causally clipped maximal runs of the selected blocks. Throws InvalidArgument
// naming row, group, block and n_k for a block past the sequence end, after
// the query, listed twice or out of order.
SpanPack pack_block_selection(const VarlenBatch& batch, const BlockSelection& selection);

// Explicit spans: offsets [rows * groups + 1], spans sequence-local, each
// within [0, n_k] and starting at or after the previous span's end. Empty
// spans are dropped; adjacent ones are kept as given.
SpanPack pack_explicit_spans(const VarlenBatch& batch, int groups, std::span<const std::int64_t> offsets,
                             std::span<const Span> spans);

// Throws InvalidArgument unless `pack` fits `batch` (rows, groups, every span inside its sequence, ascending).
void check_span_pack(const VarlenBatch& batch, int groups, const SpanPack& pack);

// ---- Varlen packing of separate sequences ---------------------------------

struct SequenceInput {
  std::int32_t n_q = 0, n_k = 0;
  std::span<const bf16> q, k, v;  // [n_q, H, D], [n_k, G, D], [n_k, G, Dv]
};

struct PackedBatch {
  std::vector<std::int32_t> cu_seqlens_q, cu_seqlens_k;
  std::vector<bf16> q, k, v;
  VarlenBatch batch() const { return {cu_seqlens_q, cu_seqlens_k}; }
};

// Concatenates the sequences and builds cu_seqlens. Checks every size first.
PackedBatch pack_sequences(const HeadLayout& layout, std::span<const SequenceInput> sequences);

// ---- Selection attention --------------------------------------------------

struct SelectionProblem {
  HeadLayout layout;
  VarlenBatch batch;
  const SpanPack* spans = nullptr;
  std::span<const bf16> q, k, v;
};

struct SelectionOutput {
  std::span<float> o;    // [T_q, H, Dv]
  std::span<float> lse;  // [T_q, H], or empty when not wanted
};

// All size and consistency checks of the entry points (throws before any write).
void check_problem(const SelectionProblem& p, const SelectionOutput& out);

// The scale the kernels apply once: 1 / sqrt(D), rounded to FP32.
float softmax_scale(int dim);

struct HandOptions {
  int threads = 1;
  popper::cpu::Isa isa = popper::cpu::Isa::Auto;
  bool bf16_dot = true;  // on AVX-512: VDPBF16PS when the CPU has AVX512-BF16
};

struct FallbackOptions {
  int threads = 1;
};

// What ran: "cpu:avx512bf16" "cpu:avx512" "cpu:avx2" "cpu:scalar" "openblas:<core>" "cuda:sm_XY";
// decline holds the device's reason when a device entry declined.
struct RunInfo {
  std::string backend;
  std::string decline;
};

RunInfo selection_attention_hand(const SelectionProblem& p, SelectionOutput out, const HandOptions& opt = {});
RunInfo selection_attention_fallback(const SelectionProblem& p, SelectionOutput out, const FallbackOptions& opt = {});
// Declines (CPU hand kernel with `cpu`, identical results) when no CUDA device is usable.
RunInfo selection_attention_cuda(const SelectionProblem& p, SelectionOutput out, const HandOptions& cpu = {});

// ---- Router -----------------------------------------------------------------

// One line of the router config: heads per group h, head dim d, and the
// smallest mean selected length from which the hand kernel runs (nullopt: never).
struct RouteEntry {
  int heads = 0;
  int dim = 0;
  std::optional<std::int64_t> min_len;
};

struct RouterConfig {
  double margin = 0;
  std::vector<RouteEntry> entries;
  std::string origin;  // file it came from
  const RouteEntry* find(int heads_per_group, int dim) const;
};

// The format `popper bench threshold --family nsa` writes (config/nsa-router.yaml):
//   thresholds: [{h: 4, d: 64, min_l: 256}, {h: 8, d: 128, min_l: never}, ...]
// Throws popper::Error naming `origin` on anything malformed.
RouterConfig parse_router_config(const std::string& yaml_text, const std::string& origin);
RouterConfig load_router_config(const std::string& path);
// $POPPER_NSA_ROUTER_CONFIG, else config/nsa-router.yaml in the data directory
// (popper/runtime_paths.hpp: the source tree's, linked into a build tree, or a bundle's copy).
std::string default_router_config_path();

enum class RoutePath { Hand, Fallback };
const char* to_string(RoutePath p);

struct RouteDecision {
  RoutePath path = RoutePath::Fallback;
  int heads_per_group = 0;
  int dim = 0;
  double mean_len = 0;
  std::optional<std::int64_t> min_len;  // the entry's threshold, when one applied
  bool configured = false;              // an entry for (h, d) exists
  std::string reason;
  std::string backend;  // filled after the run
};

// hand iff an entry exists, it is not "never", and mean_len >= min_len.
RouteDecision decide_route(const RouterConfig& cfg, int heads_per_group, int dim, double mean_len);

// Where the router reports which path ran: counters, the last decision, and
// an optional callback (called on the caller's thread after each routed call).
class RouteDiagnostics {
 public:
  using Callback = std::function<void(const RouteDecision&)>;
  void set_callback(Callback cb);
  long hand_calls() const { return hand_.load(); }
  long fallback_calls() const { return fallback_.load(); }
  std::optional<RouteDecision> last() const;
  void reset();
  void record(const RouteDecision& d);

 private:
  mutable std::mutex mutex_;
  std::atomic<long> hand_{0}, fallback_{0};
  std::optional<RouteDecision> last_;
  Callback callback_;
};

// The process-wide diagnostics the router reports to by default.
RouteDiagnostics& route_diagnostics();

struct RoutedOptions {
  int threads = 1;
  RouteDiagnostics* diagnostics = nullptr;  // nullptr: route_diagnostics()
};

RunInfo selection_attention_routed(const SelectionProblem& p, SelectionOutput out, const RouterConfig& cfg,
                                   const RoutedOptions& opt = {});

}  // namespace popper::nsa
