// bench_nsa: the NSA selection attention suite (bench producer protocol).
// Names nsa/<tier>/<shape>/bf16/threads:<n>, shapes from workloads/nsa/shapes.h,
// workload from workloads/nsa/generate.h (the ceiling builds the same one):
//
//   wrapped    the fallback: gather + dense attention through OpenBLAS SGEMM
//   hand       the group-centric kernel (its own CPU path: cpu:avx512bf16 here)
//   pack       varlen packing apart from the kernels: pack_sequences of the 4
//              sequences into cu_seqlens buffers + the span pack of every row
//   reference  the FP64 oracle (gate shapes only)
//
// Counters per call: flop = 2 N H L (D + Dv) (QK^T and PV), bytes = Q, the
// selected K/V rows, O. Before timing, hand and wrapped outputs are compared
// with the FP64 reference on 8 rows spread over the batch (MAE <= 1e-3 and the
// contract's elementwise bound): label "verified(sampled 8 rows)", or the
// benchmark is skipped with "incorrect: ...". After timing they are checked
// the same way on fresh Q, K and V (popper::bench::Recheck).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "impl/nsa/nsa.hpp"
#include "nsa/testbed.hpp"
#include "popper/bench.hpp"
#include "workloads/nsa/generate.h"
#include "workloads/nsa/shapes.h"

namespace {

using namespace popper::nsa;
namespace pb = popper::bench;
namespace tb = popper::nsa::testbed;

struct Fixture {
  std::string name;
  tb::Workload w;
  // The same batch as separate sequences (what the pack tier packs) and the spans it packs.
  std::vector<SequenceInput> sequences;
  std::vector<std::int64_t> span_offsets;
  std::vector<Span> spans;
};

// One fixture at a time (a process usually runs one benchmark; the full list would not fit in memory).
std::shared_ptr<Fixture> fixture_for(const popper_nsa_shape& s) {
  static std::shared_ptr<Fixture> cached;
  if (cached && cached->name == s.name) return cached;
  cached.reset();
  auto f = std::make_shared<Fixture>();
  f->name = s.name;
  f->w = tb::make_workload(s);
  const auto& w = f->w;
  const HeadLayout& l = w.layout;
  for (int b = 0; b < POPPER_NSA_SEQS; ++b) {
    const std::int32_t q0 = w.cu_q[b], nq = w.cu_q[b + 1] - q0, k0 = w.cu_k[b], nk = w.cu_k[b + 1] - k0;
    f->sequences.push_back(
        {nq, nk, std::span(w.q).subspan(std::size_t(q0) * l.heads * l.dim, std::size_t(nq) * l.heads * l.dim),
         std::span(w.k).subspan(std::size_t(k0) * l.dim, std::size_t(nk) * l.dim),
         std::span(w.v).subspan(std::size_t(k0) * l.dim_v, std::size_t(nk) * l.dim_v)});
  }
  f->span_offsets = w.pack.offsets;
  f->spans = w.pack.spans;
  cached = f;
  return f;
}

// The first half of the sequences (and so of the query rows) of `w`: the
// skipped-work bench mutant's problem. Its buffers are prefixes of w's.
struct HalfProblem {
  std::vector<std::int32_t> cu_q, cu_k;
  SpanPack pack;
  SelectionProblem problem(const tb::Workload& w) const {
    const HeadLayout& l = w.layout;
    return {l,
            {cu_q, cu_k},
            &pack,
            std::span(w.q).first(std::size_t(cu_q.back()) * l.heads * l.dim),
            std::span(w.k).first(std::size_t(cu_k.back()) * l.groups * l.dim),
            std::span(w.v).first(std::size_t(cu_k.back()) * l.groups * l.dim_v)};
  }
};
HalfProblem first_half(const tb::Workload& w) {
  HalfProblem h;
  const std::size_t seqs = POPPER_NSA_SEQS / 2, rows = std::size_t(w.cu_q[seqs]);
  h.cu_q.assign(w.cu_q.begin(), w.cu_q.begin() + seqs + 1);
  h.cu_k.assign(w.cu_k.begin(), w.cu_k.begin() + seqs + 1);
  const std::vector<std::int64_t> offsets(w.pack.offsets.begin(), w.pack.offsets.begin() + rows + 1);
  const std::vector<Span> spans(w.pack.spans.begin(), w.pack.spans.begin() + offsets.back());
  h.pack = pack_explicit_spans({h.cu_q, h.cu_k}, 1, offsets, spans);
  return h;
}

void bench_nsa(benchmark::State& state, const pb::Case& c) {
  const popper_nsa_shape& sh = POPPER_NSA_SHAPES[c.shape];
  const int threads = c.threads;
  const auto f = fixture_for(sh);
  auto& w = f->w;
  std::vector<float> o(w.o_size()), lse(w.lse_size());
  HalfProblem half;
  auto run = [&](const tb::Workload& x, std::span<float> out_o, std::span<float> out_lse) {
    switch (c.tier) {
      case pb::Tier::Wrapped:
        selection_attention_fallback(x.problem(), {out_o, out_lse}, FallbackOptions{threads});
        break;
      case pb::Tier::Hand:
        if (pb::skips_work(c)) {  // the first half of the rows; the rest of o and lse left as they were
          if (half.cu_q.empty()) half = first_half(x);
          const SelectionProblem p = half.problem(x);
          const std::size_t rows = std::size_t(half.cu_q.back());
          selection_attention_hand(
              p, {out_o.first(rows * p.layout.heads * p.layout.dim_v), out_lse.first(rows * p.layout.heads)},
              HandOptions{threads});
          break;
        }
        selection_attention_hand(x.problem(), {out_o, out_lse}, HandOptions{threads});
        break;
      case pb::Tier::Reference: {
        const auto r = reference::selection_attention(x.problem());
        for (std::size_t i = 0; i < r.o.size(); ++i) out_o[i] = static_cast<float>(r.o[i]);
        break;
      }
      default: break;
    }
  };
  auto pack = [&] {
    PackedBatch packed = pack_sequences(w.layout, f->sequences);
    SpanPack spans = pack_explicit_spans(packed.batch(), 1, f->span_offsets, f->spans);
    return std::make_pair(std::move(packed), std::move(spans));
  };
  auto check = [&] {
    const auto acc = tb::compare(w.problem(), o, lse, tb::spread_rows(w.cu_q.back(), 8), 2.0);
    const bool ok = acc.within_bound && acc.mae <= 1e-3 && acc.out_abs_sum > 0;
    return ok ? pb::Verdict::verified("sampled 8 rows") : pb::Verdict::incorrect(acc.describe());
  };
  pb::Verdict v;
  try {
    if (c.tier == pb::Tier::Pack) {
      const auto [packed, spans] = pack();
      const bool same = packed.cu_seqlens_q == w.cu_q && packed.cu_seqlens_k == w.cu_k && packed.k == w.k &&
                        packed.q == w.q && packed.v == w.v && spans.offsets == w.pack.offsets &&
                        spans.spans.size() == w.pack.spans.size();
      v = same ? pb::Verdict::verified() : pb::Verdict::incorrect("the packed batch differs from the workload");
    } else {
      run(w, o, lse);
      if (c.tier == pb::Tier::Reference) {
        v = pb::Verdict::not_verified("the reference is the oracle");
      } else {
        v = check();
      }
    }
  } catch (const std::exception& e) {
    v = pb::Verdict::incorrect(std::string("threw ") + e.what());
  }
  // Injected slowdown lives in popper_bench_call_hand (whole extra calls), not here.
  auto timed = [&] {
    if (c.tier == pb::Tier::Pack) benchmark::DoNotOptimize(pack());
    else run(w, o, lse);
  };
  // After timing, the hand and wrapped tiers are checked again on fresh Q, K
  // and V in the fixture's own buffers (the spans the pack tier packs point
  // into them), which get their values back after the row: the shape's
  // other rows time the same operands.
  std::vector<bf16> original;
  pb::Recheck recheck;
  if (c.tier == pb::Tier::Hand || c.tier == pb::Tier::Wrapped) {
    recheck.refill = [&](std::uint64_t seed) {
      if (original.empty()) {
        original = w.q;
        original.insert(original.end(), w.k.begin(), w.k.end());
        original.insert(original.end(), w.v.begin(), w.v.end());
      }
      std::ranges::copy(tb::bf16_uniform(w.q.size(), seed), w.q.begin());
      std::ranges::copy(tb::bf16_uniform(w.k.size(), seed + 1), w.k.begin());
      std::ranges::copy(tb::bf16_uniform(w.v.size(), seed + 2), w.v.begin());
    };
    recheck.verify = check;
  }
  const double packed_bytes = 2.0 * double(w.q.size() + w.k.size() + w.v.size());
  const bool pack_tier = c.tier == pb::Tier::Pack;
  pb::measure(
      state, c, v, timed,
      {.work = pack_tier ? 0.0 : popper_nsa_flop(&sh), .bytes = pack_tier ? packed_bytes : popper_nsa_bytes(&sh)},
      recheck);
  if (!original.empty()) {
    auto at = original.begin();
    for (auto* buf : {&w.q, &w.k, &w.v}) {
      std::copy(at, at + std::ptrdiff_t(buf->size()), buf->begin());
      at += std::ptrdiff_t(buf->size());
    }
  }
}

void register_all() {
  pb::Family("nsa")
      .shapes(POPPER_NSA_SHAPES, POPPER_NSA_SHAPE_COUNT)
      .tiers({pb::Tier::Wrapped, pb::Tier::Hand, pb::Tier::Pack, pb::Tier::Reference})
      .precisions({"bf16"})
      .threads({1, 2})
      .where([](const pb::Case& c) {
        if (c.tier == pb::Tier::Reference)  // FP64 scalar: gate shapes, one thread
          return std::string(POPPER_NSA_SHAPES[c.shape].set) == "gate" && c.threads == 1;
        return c.tier != pb::Tier::Pack || c.threads == 1;  // packing is single-threaded
      })
      .add(bench_nsa);
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  std::string hand, wrapped;
  {  // backends as the entries report them, from one tiny call each
    const auto w = tb::make_workload(POPPER_NSA_SHAPES[0]);
    std::vector<float> o(w.o_size());
    hand = selection_attention_hand(w.problem(), {o, {}}).backend;
    wrapped = selection_attention_fallback(w.problem(), {o, {}}).backend;
  }
  return pb::run_suite(argc, argv,
                       {{pb::Tier::Hand, hand},
                        {pb::Tier::Wrapped, wrapped},
                        {pb::Tier::Pack, "cpu:memcpy"},
                        {pb::Tier::Reference, "reference"}});
}
