// Block selection (contract: block_selection, NSA section 3.3.3):
//
//   cur = floor(pos / l'), eligible E = {0..cur}
//   F = ({0..n_init-1} U {cur-n_local+1..cur}) n E
//   I = F U top_{min(n, cur+1) - |F|}(E \ F) by group score descending, ties to the LOWER index
//
// One selection per (row, group): every head of the group uses it.
#include <algorithm>
#include <cmath>
#include <string>

#include "impl/common/parallel.hpp"
#include "impl/nsa/nsa.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::nsa {

std::int32_t block_count(std::int32_t n_k, int block_size) {
  return block_size < 1 || n_k <= 0
             ? 0
             : static_cast<std::int32_t>((static_cast<std::int64_t>(n_k) + block_size - 1) / block_size);
}

void group_block_scores(const HeadLayout& layout, std::int64_t rows, int stride, std::span<const float> head_scores,
                        std::span<float> group_scores) {
  if (layout.heads < 1 || layout.groups < 1 || layout.heads % layout.groups != 0)
    throw InvalidArgument("nsa::group_block_scores: heads must be a positive multiple of groups");
  if (rows < 0 || stride < 0) throw InvalidArgument("nsa::group_block_scores: rows and stride must be >= 0");
  const std::size_t per_head = static_cast<std::size_t>(rows) * static_cast<std::size_t>(stride);
  if (head_scores.size() < per_head * static_cast<std::size_t>(layout.heads))
    throw BufferTooSmall("head_scores", per_head * static_cast<std::size_t>(layout.heads), head_scores.size());
  if (group_scores.size() < per_head * static_cast<std::size_t>(layout.groups))
    throw BufferTooSmall("group_scores", per_head * static_cast<std::size_t>(layout.groups), group_scores.size());
  const int hg = layout.heads_per_group();
  const bool first_head_only = POPPER_MUTANT("nsa-group-score-first-head");
  for (std::int64_t t = 0; t < rows; ++t)
    for (int g = 0; g < layout.groups; ++g)
      for (int i = 0; i < stride; ++i) {
        double sum = 0;  // FP64 in head order, rounded once: no order effects between groups of different sizes
        for (int h = g * hg; h < (first_head_only ? g * hg + 1 : (g + 1) * hg); ++h)
          sum += head_scores[static_cast<std::size_t>((t * layout.heads + h) * stride + i)];
        group_scores[static_cast<std::size_t>((t * layout.groups + g) * stride + i)] = static_cast<float>(sum);
      }
}

BlockSelection select_blocks(const VarlenBatch& batch, int groups, const SelectionConfig& cfg,
                             std::span<const float> scores, int stride, int threads) {
  check_batch(batch);
  if (groups < 1) throw InvalidArgument("nsa::select_blocks: groups must be >= 1");
  if (cfg.block_size < 1 || cfg.top_n < 1 || cfg.n_init < 0 || cfg.n_local < 0 || cfg.top_n < cfg.n_init + cfg.n_local)
    throw InvalidArgument(
        "nsa::select_blocks: need block_size >= 1, top_n >= 1, n_init, n_local >= 0 and "
        "top_n >= n_init + n_local (got l' = " +
        std::to_string(cfg.block_size) + ", n = " + std::to_string(cfg.top_n) +
        ", n_init = " + std::to_string(cfg.n_init) + ", n_local = " + std::to_string(cfg.n_local) + ")");
  if (threads < 1) throw InvalidArgument("nsa::select_blocks: threads must be >= 1");
  std::int32_t max_blocks = 0;
  for (int b = 0; b < batch.sequences(); ++b)
    max_blocks = std::max(max_blocks, block_count(batch.cu_seqlens_k[b + 1] - batch.cu_seqlens_k[b], cfg.block_size));
  if (stride < max_blocks)
    throw InvalidArgument("nsa::select_blocks: score stride " + std::to_string(stride) + " < " +
                          std::to_string(max_blocks) + " blocks of the longest sequence");
  const std::int64_t rows = batch.rows();
  const std::size_t need =
      static_cast<std::size_t>(rows) * static_cast<std::size_t>(groups) * static_cast<std::size_t>(stride);
  if (scores.size() < need) throw BufferTooSmall("scores", need, scores.size());

  const auto seq = row_sequences(batch);
  auto query_block = [&](std::int64_t t) {
    const int b = seq[static_cast<std::size_t>(t)];
    const std::int32_t nq = batch.cu_seqlens_q[b + 1] - batch.cu_seqlens_q[b];
    const std::int32_t nk = batch.cu_seqlens_k[b + 1] - batch.cu_seqlens_k[b];
    const std::int32_t pos = nk - nq + static_cast<std::int32_t>(t - batch.cu_seqlens_q[b]);
    return pos / cfg.block_size;
  };
  // NaN has no place in a ranking: reject it up front (never inside the parallel region).
  for (std::int64_t t = 0; t < rows; ++t)
    for (int g = 0; g < groups; ++g)
      for (std::int32_t i = 0; i <= query_block(t); ++i)
        if (std::isnan(scores[static_cast<std::size_t>((t * groups + g) * stride + i)]))
          throw InvalidArgument("nsa::select_blocks: score of row " + std::to_string(t) + " group " +
                                std::to_string(g) + " block " + std::to_string(i) + " is NaN");

  BlockSelection out;
  out.rows = rows;
  out.groups = groups;
  out.top_n = cfg.top_n;
  out.block_size = cfg.block_size;
  out.blocks.assign(need / static_cast<std::size_t>(stride) * static_cast<std::size_t>(cfg.top_n), -1);
  const bool tie_higher = POPPER_MUTANT("nsa-tie-higher");
  const bool drop_local = POPPER_MUTANT("nsa-drop-local");

  popper::parallel::run(static_cast<std::size_t>(rows), threads, [&](std::size_t begin, std::size_t end, int) {
    std::vector<char> chosen;
    std::vector<std::int32_t> candidates;
    for (std::size_t tt = begin; tt < end; ++tt) {
      const std::int64_t t = static_cast<std::int64_t>(tt);
      const std::int32_t cur = query_block(t);
      for (int g = 0; g < groups; ++g) {
        const float* s = scores.data() + (t * groups + g) * stride;
        chosen.assign(static_cast<std::size_t>(cur) + 1, 0);
        int forced = 0;
        auto force = [&](std::int32_t i) {
          if (i >= 0 && i <= cur && !chosen[static_cast<std::size_t>(i)])
            chosen[static_cast<std::size_t>(i)] = 1, ++forced;
        };
        for (std::int32_t i = 0; i < cfg.n_init; ++i) force(i);
        if (!drop_local)
          for (std::int32_t i = cur - cfg.n_local + 1; i <= cur; ++i) force(i);
        const std::int64_t want = std::min<std::int64_t>(cfg.top_n, cur + 1) - forced;
        candidates.clear();
        for (std::int32_t i = 0; i <= cur; ++i)
          if (!chosen[static_cast<std::size_t>(i)]) candidates.push_back(i);
        const std::size_t k =
            static_cast<std::size_t>(std::clamp<std::int64_t>(want, 0, static_cast<std::int64_t>(candidates.size())));
        // Strict weak order on (score desc, index asc): the result is unique, so deterministic.
        std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(k), candidates.end(),
                          [&](std::int32_t a, std::int32_t c) {
                            if (s[a] != s[c]) return s[a] > s[c];
                            return tie_higher ? a > c : a < c;
                          });
        for (std::size_t j = 0; j < k; ++j) chosen[static_cast<std::size_t>(candidates[j])] = 1;
        std::int32_t* dst = out.blocks.data() + (t * groups + g) * cfg.top_n;
        int n = 0;
        for (std::int32_t i = 0; i <= cur && n < cfg.top_n; ++i)
          if (chosen[static_cast<std::size_t>(i)]) dst[n++] = i;
      }
    }
  });
  return out;
}

}  // namespace popper::nsa
