// FP64 reference of NSA selection attention and of the selection rule (reference.hpp).
#include "impl/nsa/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "popper/error.hpp"

namespace popper::nsa::reference {

std::int64_t query_position(const VarlenBatch& batch, std::int64_t row) {
  for (int b = 0; b < batch.sequences(); ++b)
    if (row >= batch.cu_seqlens_q[b] && row < batch.cu_seqlens_q[b + 1]) {
      const std::int64_t nq = batch.cu_seqlens_q[b + 1] - batch.cu_seqlens_q[b];
      const std::int64_t nk = batch.cu_seqlens_k[b + 1] - batch.cu_seqlens_k[b];
      return nk - nq + (row - batch.cu_seqlens_q[b]);
    }
  throw InvalidArgument("nsa::reference: row " + std::to_string(row) + " is in no sequence");
}

namespace {

int sequence_of(const VarlenBatch& batch, std::int64_t row) {
  for (int b = 0; b < batch.sequences(); ++b)
    if (row >= batch.cu_seqlens_q[b] && row < batch.cu_seqlens_q[b + 1]) return b;
  throw InvalidArgument("nsa::reference: row " + std::to_string(row) + " is in no sequence");
}

}  // namespace

std::vector<std::int32_t> span_tokens(std::span<const Span> spans) {
  std::vector<std::int32_t> out;
  for (const Span& s : spans)
    for (std::int32_t j = s.begin; j < s.end; ++j) out.push_back(j);
  return out;
}

Attention selection_attention(const SelectionProblem& p, std::span<const std::int64_t> rows) {
  const std::size_t h_count = static_cast<std::size_t>(p.layout.heads);
  const std::size_t dv = static_cast<std::size_t>(p.layout.dim_v), d = static_cast<std::size_t>(p.layout.dim);
  std::vector<float> dummy_o(static_cast<std::size_t>(p.batch.rows()) * h_count * dv);
  check_problem(p, {dummy_o, {}});
  std::vector<std::int64_t> all;
  if (rows.empty()) {
    for (std::int64_t t = 0; t < p.batch.rows(); ++t) all.push_back(t);
    rows = all;
  }
  const int hg = p.layout.heads_per_group();
  const std::size_t groups = static_cast<std::size_t>(p.layout.groups);
  const double scale = 1.0 / std::sqrt(static_cast<double>(p.layout.dim));
  Attention out;
  out.o.assign(rows.size() * h_count * dv, 0.0);
  out.lse.assign(rows.size() * h_count, -std::numeric_limits<double>::infinity());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::int64_t t = rows[r];
    const int b = sequence_of(p.batch, t);
    const std::size_t key0 = static_cast<std::size_t>(p.batch.cu_seqlens_k[b]);
    for (std::size_t h = 0; h < h_count; ++h) {
      const int g = static_cast<int>(h) / hg;
      const auto keys = span_tokens(p.spans->of(t, g));
      if (keys.empty()) continue;
      const bf16* q = p.q.data() + (static_cast<std::size_t>(t) * h_count + h) * d;
      std::vector<double> s(keys.size());
      for (std::size_t j = 0; j < keys.size(); ++j) {
        const bf16* k =
            p.k.data() + ((key0 + static_cast<std::size_t>(keys[j])) * groups + static_cast<std::size_t>(g)) * d;
        double dot = 0;
        for (std::size_t e = 0; e < d; ++e)
          dot += static_cast<double>(float_from_bf16(q[e])) * static_cast<double>(float_from_bf16(k[e]));
        s[j] = dot * scale;
      }
      const double m = *std::max_element(s.begin(), s.end());
      double l = 0;
      for (double x : s) l += std::exp(x - m);
      const double lse = m + std::log(l);
      double* o = out.o.data() + (r * h_count + h) * dv;
      for (std::size_t j = 0; j < keys.size(); ++j) {
        const double w = std::exp(s[j] - lse);
        const bf16* v =
            p.v.data() + ((key0 + static_cast<std::size_t>(keys[j])) * groups + static_cast<std::size_t>(g)) * dv;
        for (std::size_t e = 0; e < dv; ++e) o[e] += w * static_cast<double>(float_from_bf16(v[e]));
      }
      out.lse[r * h_count + h] = lse;
    }
  }
  return out;
}

BlockSelection select_blocks(const VarlenBatch& batch, int groups, const SelectionConfig& cfg,
                             std::span<const float> scores, int stride) {
  check_batch(batch);
  BlockSelection out;
  out.rows = batch.rows();
  out.groups = groups;
  out.top_n = cfg.top_n;
  out.block_size = cfg.block_size;
  out.blocks.assign(static_cast<std::size_t>(out.rows * groups * cfg.top_n), -1);
  for (std::int64_t t = 0; t < out.rows; ++t) {
    const std::int64_t cur = query_position(batch, t) / cfg.block_size;
    for (int g = 0; g < groups; ++g) {
      const float* s = scores.data() + (t * groups + g) * stride;
      std::vector<std::int32_t> picked, others;
      for (std::int32_t i = 0; i <= cur; ++i) {
        const bool initial = i < cfg.n_init;
        const bool local = i > cur - cfg.n_local;
        (initial || local ? picked : others).push_back(i);
      }
      std::stable_sort(others.begin(), others.end(), [&](std::int32_t a, std::int32_t c) { return s[a] > s[c]; });
      const std::int64_t total = std::min<std::int64_t>(cfg.top_n, cur + 1);
      for (std::size_t j = 0; static_cast<std::int64_t>(picked.size()) < total && j < others.size(); ++j)
        picked.push_back(others[j]);
      std::sort(picked.begin(), picked.end());
      std::copy(picked.begin(), picked.end(), out.blocks.begin() + (t * groups + g) * cfg.top_n);
    }
  }
  return out;
}

std::vector<std::int32_t> selected_tokens(const VarlenBatch& batch, const BlockSelection& selection, std::int64_t row,
                                          int group) {
  const int b = sequence_of(batch, row);
  const std::int64_t nk = batch.cu_seqlens_k[b + 1] - batch.cu_seqlens_k[b];
  const std::int64_t pos = query_position(batch, row);
  const auto blocks = selection.of(row, group);
  std::vector<std::int32_t> out;
  for (std::int64_t j = 0; j < nk && j <= pos; ++j)
    if (std::find(blocks.begin(), blocks.end(), static_cast<std::int32_t>(j / selection.block_size)) != blocks.end())
      out.push_back(static_cast<std::int32_t>(j));
  return out;
}

}  // namespace popper::nsa::reference
