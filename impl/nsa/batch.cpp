// BF16 conversion, varlen batch checks and packing (contract: bf16_storage,
// varlen_batch). Everything here runs before any kernel touches memory.
#include <cmath>
#include <limits>
#include <string>

#include "impl/nsa/nsa.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::nsa {

namespace {

std::string seq_name(int b) { return "sequence " + std::to_string(b); }

void need(std::size_t have, std::size_t want, const char* operand) {
  if (have < want) throw BufferTooSmall(operand, want, have);
}

std::size_t mul(std::int64_t a, std::int64_t b, std::int64_t c = 1) {
  return static_cast<std::size_t>(a) * static_cast<std::size_t>(b) * static_cast<std::size_t>(c);
}

}  // namespace

bf16 bf16_from_float(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<bf16>((bits >> 16) | 0x0040u);  // NaN stays NaN (quiet)
  if (POPPER_MUTANT("nsa-bf16-truncate")) return static_cast<bf16>(bits >> 16);
  const std::uint32_t lsb = (bits >> 16) & 1u;  // ties go to the even BF16 mantissa
  return static_cast<bf16>((bits + 0x7FFFu + lsb) >> 16);
}

void to_bf16(std::span<const float> in, std::span<bf16> out) {
  if (out.size() != in.size())
    throw InvalidArgument("nsa::to_bf16: output has " + std::to_string(out.size()) + " elements, input " +
                          std::to_string(in.size()));
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = bf16_from_float(in[i]);
}

float softmax_scale(int dim) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(dim))); }

void check_batch(const VarlenBatch& batch) {
  const auto& q = batch.cu_seqlens_q;
  const auto& k = batch.cu_seqlens_k;
  if (q.size() < 2 || k.size() != q.size())
    throw InvalidArgument("nsa: cu_seqlens_q and cu_seqlens_k need the same length B + 1 >= 2 (got " +
                          std::to_string(q.size()) + " and " + std::to_string(k.size()) + ")");
  if (q[0] != 0 || k[0] != 0) throw InvalidArgument("nsa: cu_seqlens_q[0] and cu_seqlens_k[0] must be 0");
  for (std::size_t b = 0; b + 1 < q.size(); ++b) {
    const std::int64_t nq = static_cast<std::int64_t>(q[b + 1]) - q[b];
    const std::int64_t nk = static_cast<std::int64_t>(k[b + 1]) - k[b];
    if (nq < 0 || nk < 0)
      throw InvalidArgument("nsa: cu_seqlens decrease at " + seq_name(static_cast<int>(b)) + " (n_q " +
                            std::to_string(nq) + ", n_k " + std::to_string(nk) + ")");
    if (nq > nk)
      throw InvalidArgument("nsa: " + seq_name(static_cast<int>(b)) + " has n_q = " + std::to_string(nq) +
                            " queries but only n_k = " + std::to_string(nk) + " keys (need n_q <= n_k)");
  }
}

std::vector<std::int32_t> row_sequences(const VarlenBatch& batch) {
  std::vector<std::int32_t> seq(static_cast<std::size_t>(batch.rows()));
  for (int b = 0; b < batch.sequences(); ++b)
    for (std::int32_t t = batch.cu_seqlens_q[b]; t < batch.cu_seqlens_q[b + 1]; ++t)
      seq[static_cast<std::size_t>(t)] = b;
  return seq;
}

void check_span_pack(const VarlenBatch& batch, int groups, const SpanPack& pack) {
  if (pack.rows != batch.rows() || pack.groups != groups)
    throw InvalidArgument("nsa: the span pack was built for " + std::to_string(pack.rows) + " rows x " +
                          std::to_string(pack.groups) + " groups, the problem has " + std::to_string(batch.rows()) +
                          " rows x " + std::to_string(groups) + " groups");
  const std::size_t items = mul(pack.rows, groups);
  if (pack.offsets.size() != items + 1 || pack.offsets[0] != 0 ||
      pack.offsets.back() != static_cast<std::int64_t>(pack.spans.size()))
    throw InvalidArgument("nsa: span pack offsets must have rows * groups + 1 entries from 0 to the span count");
  const auto seq = row_sequences(batch);
  for (std::int64_t t = 0; t < pack.rows; ++t) {
    const int b = seq[static_cast<std::size_t>(t)];
    const std::int32_t n_k = batch.cu_seqlens_k[b + 1] - batch.cu_seqlens_k[b];
    for (int g = 0; g < groups; ++g) {
      const std::size_t i = static_cast<std::size_t>(t * groups + g);
      if (pack.offsets[i + 1] < pack.offsets[i]) throw InvalidArgument("nsa: span pack offsets decrease");
      std::int32_t prev_end = 0;
      for (std::int64_t s = pack.offsets[i]; s < pack.offsets[i + 1]; ++s) {
        const Span sp = pack.spans[static_cast<std::size_t>(s)];
        if (sp.begin < prev_end || sp.end < sp.begin || sp.end > n_k)
          throw InvalidArgument("nsa: row " + std::to_string(t) + " group " + std::to_string(g) + ": span [" +
                                std::to_string(sp.begin) + ", " + std::to_string(sp.end) + ") is outside [" +
                                std::to_string(prev_end) + ", n_k = " + std::to_string(n_k) + ") of " + seq_name(b) +
                                " or out of order");
        prev_end = sp.end;
      }
    }
  }
}

void check_problem(const SelectionProblem& p, const SelectionOutput& out) {
  const HeadLayout& l = p.layout;
  if (l.heads < 1 || l.groups < 1 || l.dim < 1 || l.dim_v < 1)
    throw InvalidArgument("nsa: heads, groups, dim and dim_v must be >= 1");
  if (l.heads % l.groups != 0)
    throw InvalidArgument("nsa: heads (" + std::to_string(l.heads) + ") must be a multiple of groups (" +
                          std::to_string(l.groups) + ")");
  check_batch(p.batch);
  if (!p.spans) throw InvalidArgument("nsa: no span pack given");
  check_span_pack(p.batch, l.groups, *p.spans);
  const std::int64_t tq = p.batch.rows(), tk = p.batch.keys();
  if (!POPPER_MUTANT("nsa-skip-q-size-check")) need(p.q.size(), mul(tq, l.heads, l.dim), "q");
  need(p.k.size(), mul(tk, l.groups, l.dim), "k");
  need(p.v.size(), mul(tk, l.groups, l.dim_v), "v");
  need(out.o.size(), mul(tq, l.heads, l.dim_v), "o");
  if (!out.lse.empty()) need(out.lse.size(), mul(tq, l.heads), "lse");
}

PackedBatch pack_sequences(const HeadLayout& layout, std::span<const SequenceInput> sequences) {
  if (layout.heads < 1 || layout.groups < 1 || layout.dim < 1 || layout.dim_v < 1 || layout.heads % layout.groups)
    throw InvalidArgument("nsa::pack_sequences: heads, groups, dim, dim_v >= 1 and heads % groups == 0 required");
  std::int64_t tq = 0, tk = 0;
  for (std::size_t b = 0; b < sequences.size(); ++b) {
    const SequenceInput& s = sequences[b];
    const std::string who = seq_name(static_cast<int>(b));
    if (s.n_q < 0 || s.n_k < s.n_q)
      throw InvalidArgument("nsa::pack_sequences: " + who + " needs 0 <= n_q <= n_k (got " + std::to_string(s.n_q) +
                            ", " + std::to_string(s.n_k) + ")");
    need(s.q.size(), mul(s.n_q, layout.heads, layout.dim), "q");
    need(s.k.size(), mul(s.n_k, layout.groups, layout.dim), "k");
    need(s.v.size(), mul(s.n_k, layout.groups, layout.dim_v), "v");
    tq += s.n_q;
    tk += s.n_k;
    if (tq > std::numeric_limits<std::int32_t>::max() || tk > std::numeric_limits<std::int32_t>::max())
      throw InvalidArgument("nsa::pack_sequences: more than 2^31 - 1 rows");
  }
  PackedBatch out;
  out.cu_seqlens_q.reserve(sequences.size() + 1);
  out.cu_seqlens_k.reserve(sequences.size() + 1);
  out.cu_seqlens_q.push_back(0);
  out.cu_seqlens_k.push_back(0);
  out.q.reserve(mul(tq, layout.heads, layout.dim));
  out.k.reserve(mul(tk, layout.groups, layout.dim));
  out.v.reserve(mul(tk, layout.groups, layout.dim_v));
  for (const SequenceInput& s : sequences) {
    out.q.insert(out.q.end(), s.q.begin(),
                 s.q.begin() + static_cast<std::ptrdiff_t>(mul(s.n_q, layout.heads, layout.dim)));
    out.k.insert(out.k.end(), s.k.begin(),
                 s.k.begin() + static_cast<std::ptrdiff_t>(mul(s.n_k, layout.groups, layout.dim)));
    out.v.insert(out.v.end(), s.v.begin(),
                 s.v.begin() + static_cast<std::ptrdiff_t>(mul(s.n_k, layout.groups, layout.dim_v)));
    out.cu_seqlens_q.push_back(out.cu_seqlens_q.back() + s.n_q);
    out.cu_seqlens_k.push_back(out.cu_seqlens_k.back() + s.n_k);
  }
  if (sequences.empty()) {  // a batch needs B >= 1: one empty sequence
    out.cu_seqlens_q.push_back(0);
    out.cu_seqlens_k.push_back(0);
  }
  return out;
}

}  // namespace popper::nsa
