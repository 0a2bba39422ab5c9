// The oracle of the NSA contract (contracts/nsa/nsa-selection-v1.yaml): plain
// loops in FP64 over the same BF16 inputs, one head at a time.
//
//   s_j = (sum_d q_d k_jd) / sqrt(D),  m = max s_j,  lse = m + log sum_j exp(s_j - m),
//   o = sum_j exp(s_j - lse) v_j        (J empty: o = 0, lse = -inf)
//
// and the selection rule written the obvious way (a stable sort of the
// non-forced eligible blocks by score, so ties keep the lower index first).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "impl/nsa/nsa.hpp"

namespace popper::nsa::reference {

struct Attention {
  std::vector<double> o;    // [rows, H, Dv] for the rows asked for, in that order
  std::vector<double> lse;  // [rows, H]
};

// Every row when `rows` is empty. The problem is checked like the kernels' (check_problem).
Attention selection_attention(const SelectionProblem& p, std::span<const std::int64_t> rows = {});

// The selection rule, spelled out (no threads, no partial sort).
BlockSelection select_blocks(const VarlenBatch& batch, int groups, const SelectionConfig& cfg,
                             std::span<const float> scores, int stride);

// J(t, g) by membership: every key j < n_k whose block is selected and j <= pos(t), ascending.
std::vector<std::int32_t> selected_tokens(const VarlenBatch& batch, const BlockSelection& selection, std::int64_t row,
                                          int group);

// The keys a span list covers, ascending (span order kept).
std::vector<std::int32_t> span_tokens(std::span<const Span> spans);

// Key position of query row t: n_k(b) - n_q(b) + (t - cu_seqlens_q[b]).
std::int64_t query_position(const VarlenBatch& batch, std::int64_t row);

}  // namespace popper::nsa::reference
