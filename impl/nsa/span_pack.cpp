// Span packing (contract: span_packing): selected blocks -> sequence-local
// key spans, causally clipped and merged into maximal ascending runs,
//
//   J(t, g) = union_{i in I(t, g)} [i l', min((i + 1) l', pos(t) + 1, n_k(b)))
//
// with offsets (cu_spans) over (row, group) in row-major order. A block past
// the sequence end, after the query, or listed twice is an error naming it.
#include <string>

#include "impl/nsa/nsa.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::nsa {

std::int64_t SpanPack::selected(std::int64_t row, int group) const {
  std::int64_t n = 0;
  for (const Span& s : of(row, group)) n += s.end - s.begin;
  return n;
}

std::int64_t SpanPack::total_selected() const {
  std::int64_t n = 0;
  for (const Span& s : spans) n += s.end - s.begin;
  return n;
}

double SpanPack::mean_selected() const {
  const std::int64_t items = rows * groups;
  return items > 0 ? static_cast<double>(total_selected()) / static_cast<double>(items) : 0.0;
}

SpanPack pack_block_selection(const VarlenBatch& batch, const BlockSelection& sel) {
  check_batch(batch);
  if (sel.rows != batch.rows() || sel.groups < 1 || sel.top_n < 1 || sel.block_size < 1 ||
      sel.blocks.size() != static_cast<std::size_t>(sel.rows) * static_cast<std::size_t>(sel.groups) *
                               static_cast<std::size_t>(sel.top_n))
    throw InvalidArgument("nsa::pack_block_selection: the selection has " + std::to_string(sel.rows) + " rows x " +
                          std::to_string(sel.groups) + " groups x " + std::to_string(sel.top_n) +
                          " slots (block size " + std::to_string(sel.block_size) + "), the batch " +
                          std::to_string(batch.rows()) + " rows, or its block list has the wrong length");
  const bool accept_past_end = POPPER_MUTANT("nsa-accept-past-end");
  const bool no_causal_clip = POPPER_MUTANT("nsa-pack-no-causal-clip");
  const std::int64_t l = sel.block_size;
  const auto seq = row_sequences(batch);

  SpanPack pack;
  pack.rows = sel.rows;
  pack.groups = sel.groups;
  pack.offsets.reserve(static_cast<std::size_t>(sel.rows * sel.groups) + 1);
  pack.offsets.push_back(0);
  for (std::int64_t t = 0; t < sel.rows; ++t) {
    const int b = seq[static_cast<std::size_t>(t)];
    const std::int32_t nq = batch.cu_seqlens_q[b + 1] - batch.cu_seqlens_q[b];
    const std::int32_t nk = batch.cu_seqlens_k[b + 1] - batch.cu_seqlens_k[b];
    const std::int64_t pos = nk - nq + (t - batch.cu_seqlens_q[b]);
    const std::int32_t nblocks = block_count(nk, sel.block_size);
    for (int g = 0; g < sel.groups; ++g) {
      std::int64_t prev = -1;
      for (const std::int32_t i : sel.of(t, g)) {
        if (i == -1) continue;  // padding
        const std::string where = "nsa: selection of row " + std::to_string(t) + " group " + std::to_string(g) +
                                  " names block " + std::to_string(i);
        if (i < -1) throw InvalidArgument(where + ", a negative block index");
        if (i >= nblocks && !accept_past_end)
          throw InvalidArgument(where + ", past the end of sequence " + std::to_string(b) +
                                " (n_k = " + std::to_string(nk) + " keys = " + std::to_string(nblocks) + " blocks of " +
                                std::to_string(l) + ")");
        if (i < nblocks && i * l > pos)
          throw InvalidArgument(where + ", which starts at key " + std::to_string(i * l) +
                                " after the query at position " + std::to_string(pos) + " (causal)");
        if (i <= prev)
          throw InvalidArgument(where + " after block " + std::to_string(prev) +
                                ": blocks must be ascending and listed once");
        prev = i;
        std::int64_t begin = i * l, end = (i + 1) * l;
        if (!no_causal_clip) end = std::min(end, pos + 1);
        end = std::min<std::int64_t>(end, nk);
        if (begin >= end) continue;  // only reachable when a past-end block was accepted
        if (pack.spans.size() > static_cast<std::size_t>(pack.offsets.back()) && pack.spans.back().end == begin)
          pack.spans.back().end = static_cast<std::int32_t>(end);  // adjacent blocks form one run
        else pack.spans.push_back({static_cast<std::int32_t>(begin), static_cast<std::int32_t>(end)});
      }
      pack.offsets.push_back(static_cast<std::int64_t>(pack.spans.size()));
    }
  }
  return pack;
}

SpanPack pack_explicit_spans(const VarlenBatch& batch, int groups, std::span<const std::int64_t> offsets,
                             std::span<const Span> spans) {
  check_batch(batch);
  if (groups < 1) throw InvalidArgument("nsa::pack_explicit_spans: groups must be >= 1");
  const std::size_t items = static_cast<std::size_t>(batch.rows()) * static_cast<std::size_t>(groups);
  if (offsets.size() != items + 1 || offsets[0] != 0 || offsets.back() != static_cast<std::int64_t>(spans.size()))
    throw InvalidArgument("nsa::pack_explicit_spans: offsets need rows * groups + 1 = " + std::to_string(items + 1) +
                          " entries from 0 to the span count " + std::to_string(spans.size()) + " (got " +
                          std::to_string(offsets.size()) + ")");
  SpanPack pack;
  pack.rows = batch.rows();
  pack.groups = groups;
  pack.offsets.reserve(items + 1);
  pack.offsets.push_back(0);
  pack.spans.reserve(spans.size());
  for (std::size_t i = 0; i < items; ++i) {
    if (offsets[i + 1] < offsets[i])
      throw InvalidArgument("nsa::pack_explicit_spans: offsets decrease at " + std::to_string(i));
    for (std::int64_t s = offsets[i]; s < offsets[i + 1]; ++s) {
      const Span sp = spans[static_cast<std::size_t>(s)];
      if (sp.end != sp.begin) pack.spans.push_back(sp);  // empty spans dropped; reversed ones kept for the check
    }
    pack.offsets.push_back(static_cast<std::int64_t>(pack.spans.size()));
  }
  check_span_pack(batch, groups, pack);
  return pack;
}

}  // namespace popper::nsa
