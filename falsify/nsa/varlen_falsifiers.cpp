// Varlen packing and entry-point checks (contracts/nsa/nsa-selection-v1.yaml:
// FALSIFY-NSA-006, -008): a packed batch gives every sequence exactly its
// result alone, for every thread count and path; short buffers and malformed
// cu_seqlens are refused before anything is written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "impl/nsa/nsa.hpp"
#include "nsa/testbed.hpp"
#include "popper/binding.hpp"
#include "popper/error.hpp"

namespace {

using namespace popper::nsa;
namespace tb = popper::nsa::testbed;

struct Sequence {
  int n_q = 0, n_k = 0;
  std::vector<bf16> q, k, v;
  std::vector<float> scores;          // [n_q, G, stride] (block mode)
  std::vector<std::int64_t> offsets;  // [n_q G + 1] (span mode)
  std::vector<Span> spans;
};

struct Case {
  HeadLayout layout;
  bool block_mode = true;
  SelectionConfig cfg;
  int stride = 0;
  std::vector<Sequence> seqs;
};

Case make_case(std::mt19937_64& rng, int index) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Case c;
  const int head_counts[] = {1, 2, 3, 9};  // 9: more heads than one task holds (tasks of 8)
  const int groups = pick(1, 2), hg = head_counts[pick(0, 3)];
  const int dims[] = {8, 24, 37, 64};
  const int d = dims[pick(0, 3)];
  c.layout = {groups * hg, groups, d, pick(0, 1) ? d : 16};
  c.block_mode = index % 2 == 0;
  const int block_sizes[] = {2, 4, 8, 16};
  c.cfg = {block_sizes[pick(0, 3)], pick(3, 8), 1, 2};
  const int count = pick(2, 6);
  const int empty_at = pick(0, count - 1), single_at = (empty_at + 1 + pick(0, count - 2)) % count;
  for (int b = 0; b < count; ++b) {
    Sequence s;
    if (b == empty_at) {
      s.n_q = s.n_k = 0;
    } else if (b == single_at) {
      s.n_q = s.n_k = 1;
    } else {
      s.n_k = pick(1, 150);
      const int kind = pick(0, 2);  // decode, prefill, in between
      s.n_q = kind == 0 ? 1 : kind == 1 ? s.n_k : pick(1, s.n_k);
    }
    c.seqs.push_back(std::move(s));
  }
  for (const auto& s : c.seqs) c.stride = std::max(c.stride, block_count(s.n_k, c.cfg.block_size));
  c.stride = std::max(c.stride, 1);
  std::uint64_t seed = rng();
  for (auto& s : c.seqs) {
    const HeadLayout& l = c.layout;
    s.q = tb::bf16_uniform(static_cast<std::size_t>(s.n_q) * l.heads * l.dim, ++seed);
    s.k = tb::bf16_uniform(static_cast<std::size_t>(s.n_k) * l.groups * l.dim, ++seed);
    s.v = tb::bf16_uniform(static_cast<std::size_t>(s.n_k) * l.groups * l.dim_v, ++seed);
    if (c.block_mode) {  // alternating high/low block scores: non-adjacent selections, many fragments
      s.scores.resize(static_cast<std::size_t>(s.n_q) * l.groups * c.stride);
      for (std::size_t i = 0; i < s.scores.size(); ++i) s.scores[i] = float((i % 2 == 0 ? 10 : 0) + pick(0, 3));
    } else {  // single-token spans over a random subset of the keys
      s.offsets.push_back(0);
      for (int t = 0; t < s.n_q * l.groups; ++t) {
        for (int j = 0; j < s.n_k; ++j)
          if (pick(0, 2) == 0) s.spans.push_back({j, j + 1});
        s.offsets.push_back(static_cast<std::int64_t>(s.spans.size()));
      }
    }
  }
  return c;
}

// Spans of a batch made of `seqs` (in order), packed the way the case says.
SpanPack pack_for(const Case& c, const VarlenBatch& batch, const std::vector<const Sequence*>& seqs, int threads) {
  if (c.block_mode) {
    std::vector<float> scores;
    for (const auto* s : seqs) scores.insert(scores.end(), s->scores.begin(), s->scores.end());
    return pack_block_selection(batch, select_blocks(batch, c.layout.groups, c.cfg, scores, c.stride, threads));
  }
  std::vector<std::int64_t> offsets{0};
  std::vector<Span> spans;
  for (const auto* s : seqs) {
    for (std::size_t i = 1; i < s->offsets.size(); ++i)
      offsets.push_back(offsets.back() + s->offsets[i] - s->offsets[i - 1]);
    spans.insert(spans.end(), s->spans.begin(), s->spans.end());
  }
  return pack_explicit_spans(batch, c.layout.groups, offsets, spans);
}

struct Outputs {
  std::vector<float> o, lse;
};

template <class Run>
Outputs run_on(const Case& c, const PackedBatch& packed, const SpanPack& pack, Run run) {
  Outputs out;
  out.o.assign(static_cast<std::size_t>(packed.cu_seqlens_q.back()) * c.layout.heads * c.layout.dim_v, -3.0f);
  out.lse.assign(static_cast<std::size_t>(packed.cu_seqlens_q.back()) * c.layout.heads, -3.0f);
  run(SelectionProblem{c.layout, packed.batch(), &pack, packed.q, packed.k, packed.v}, SelectionOutput{out.o, out.lse});
  return out;
}

}  // namespace

POPPER_FALSIFIER("FALSIFY-NSA-006", [](const popper::Params& p) {
  std::mt19937_64 rng(p.seed());
  const int cases = static_cast<int>(p.integer("cases"));
  const bool forced = popper::forced_paths_allowed();
  for (int ci = 0; ci < cases; ++ci) {
    const Case c = make_case(rng, ci);
    std::vector<SequenceInput> inputs;
    std::vector<const Sequence*> all;
    for (const auto& s : c.seqs) {
      inputs.push_back({s.n_q, s.n_k, s.q, s.k, s.v});
      all.push_back(&s);
    }
    const PackedBatch packed = pack_sequences(c.layout, inputs);
    ASSERT_EQ(packed.cu_seqlens_q.size(), c.seqs.size() + 1);
    // Every path: the packed batch with 1, 2, 3 threads against each sequence alone (1 thread).
    struct Path {
      std::string name;
      std::function<RunInfo(const SelectionProblem&, SelectionOutput, int)> run;
      popper::Dispatch how;
    };
    std::vector<Path> paths;
    for (const auto& hp : tb::hand_paths(1, forced))
      paths.push_back({std::string("hand ") + popper::cpu::to_string(hp.options.isa) +
                           (hp.options.bf16_dot ? "" : " (no bf16 dot)"),
                       [hp](const SelectionProblem& pr, SelectionOutput out, int threads) {
                         auto o = hp.options;
                         o.threads = threads;
                         return selection_attention_hand(pr, out, o);
                       },
                       hp.forced ? popper::Dispatch::Forced : popper::Dispatch::Auto});
    paths.push_back({"fallback",
                     [](const SelectionProblem& pr, SelectionOutput out, int threads) {
                       return selection_attention_fallback(pr, out, FallbackOptions{threads});
                     },
                     popper::Dispatch::Auto});
    for (const auto& path : paths) {
      std::vector<Outputs> alone;
      for (std::size_t b = 0; b < c.seqs.size(); ++b) {
        const auto& s = c.seqs[b];
        const PackedBatch one = pack_sequences(c.layout, std::span<const SequenceInput>(&inputs[b], 1));
        const SpanPack pack = pack_for(c, one.batch(), {&s}, 1);
        alone.push_back(
            run_on(c, one, pack, [&](const SelectionProblem& pr, SelectionOutput out) { path.run(pr, out, 1); }));
      }
      for (const int threads : {1, 2, 3}) {
        const SpanPack pack = pack_for(c, packed.batch(), all, threads);
        const auto got = run_on(c, packed, pack, [&](const SelectionProblem& pr, SelectionOutput out) {
          popper::record_backend(path.run(pr, out, threads).backend, path.how);
        });
        for (std::size_t b = 0; b < c.seqs.size(); ++b) {
          const std::size_t row0 = static_cast<std::size_t>(packed.cu_seqlens_q[b]),
                            nq = static_cast<std::size_t>(c.seqs[b].n_q);
          const std::size_t ho = static_cast<std::size_t>(c.layout.heads) * c.layout.dim_v,
                            hl = static_cast<std::size_t>(c.layout.heads);
          // An empty sequence has nothing to compare (and memcmp must not see its null data()).
          if (nq == 0) continue;
          ASSERT_EQ(std::memcmp(got.o.data() + row0 * ho, alone[b].o.data(), nq * ho * sizeof(float)), 0)
              << path.name << ", case " << ci << " (" << (c.block_mode ? "block selection" : "single-token spans")
              << "), threads " << threads << ": sequence " << b << " (n_q " << c.seqs[b].n_q << ", n_k "
              << c.seqs[b].n_k << ") packed differs from alone; seed " << p.seed();
          ASSERT_EQ(std::memcmp(got.lse.data() + row0 * hl, alone[b].lse.data(), nq * hl * sizeof(float)), 0)
              << path.name << ", case " << ci << ", threads " << threads << ": lse of sequence " << b << " differs";
        }
      }
    }
  }
});

namespace {

struct SmallProblem {
  HeadLayout layout{4, 2, 8, 4};
  std::vector<std::int32_t> cu_q{0, 2, 5}, cu_k{0, 6, 9};
  SpanPack pack;
  std::vector<bf16> q, k, v;
  SmallProblem() {
    std::vector<std::int64_t> offsets;
    std::vector<Span> spans;
    for (int i = 0; i <= 10; ++i) offsets.push_back(i);  // 5 rows x 2 groups, one span each
    for (int i = 0; i < 10; ++i) spans.push_back({0, 2});
    pack = pack_explicit_spans({cu_q, cu_k}, 2, offsets, spans);
    q = tb::bf16_uniform(5 * 4 * 8, 1);
    k = tb::bf16_uniform(9 * 2 * 8, 2);
    v = tb::bf16_uniform(9 * 2 * 4, 3);
  }
};

}  // namespace

POPPER_FALSIFIER("FALSIFY-NSA-008", [](const popper::Params&) {
  const SmallProblem sp;
  RouterConfig cfg;
  cfg.entries = {{2, 8, 0}};
  cfg.origin = "test";
  RouteDiagnostics diag;
  using Entry = std::function<void(const SelectionProblem&, SelectionOutput)>;
  const std::vector<std::pair<std::string, Entry>> entries = {
      {"hand", [](const SelectionProblem& pr, SelectionOutput out) { selection_attention_hand(pr, out); }},
      {"fallback", [](const SelectionProblem& pr, SelectionOutput out) { selection_attention_fallback(pr, out); }},
      {"routed",
       [&](const SelectionProblem& pr, SelectionOutput out) {
         selection_attention_routed(pr, out, cfg, {1, &diag});
       }},
      {"cuda", [](const SelectionProblem& pr, SelectionOutput out) { selection_attention_cuda(pr, out); }},
  };
  const VarlenBatch batch{sp.cu_q, sp.cu_k};
  for (const auto& entry : entries) {
    // Named, not structured bindings: the lambdas below capture them (clang 14 cannot).
    const auto& name = entry.first;
    const auto& run = entry.second;
    // Valid call first (the checks do not reject good input).
    std::vector<float> o(5 * 4 * 4), lse(5 * 4);
    EXPECT_NO_THROW(run({sp.layout, batch, &sp.pack, sp.q, sp.k, sp.v}, {o, lse})) << name;
    for (const std::string operand : {"q", "k", "v", "o", "lse"}) {
      std::vector<float> o2(o.size(), 42.0f), lse2(lse.size(), 42.0f);
      auto shorter = [&](auto& vec, const std::string& which) {
        return std::span(vec.data(), vec.size() - (which == operand ? 1 : 0));
      };
      const SelectionProblem pr{sp.layout, batch, &sp.pack, shorter(sp.q, "q"), shorter(sp.k, "k"), shorter(sp.v, "v")};
      try {
        run(pr, {shorter(o2, "o"), shorter(lse2, "lse")});
        ADD_FAILURE() << name << ": short " << operand << " accepted";
      } catch (const popper::BufferTooSmall& e) {
        EXPECT_EQ(e.operand(), operand) << name << ": " << e.what();
        EXPECT_EQ(e.actual() + 1, e.required()) << name << ": " << e.what();
      }
      EXPECT_TRUE(std::all_of(o2.begin(), o2.end(), [](float x) { return x == 42.0f; }))
          << name << ": o written before the " << operand << " check";
    }
    auto rejects = [&](std::vector<std::int32_t> cq, std::vector<std::int32_t> ck, HeadLayout lay, const char* what) {
      std::vector<float> o2(o.size(), 42.0f);
      EXPECT_THROW(run({lay, {cq, ck}, &sp.pack, sp.q, sp.k, sp.v}, {o2, {}}), popper::InvalidArgument)
          << name << ": " << what;
      EXPECT_TRUE(std::all_of(o2.begin(), o2.end(), [](float x) { return x == 42.0f; })) << name << ": " << what;
    };
    rejects({1, 2, 5}, sp.cu_k, sp.layout, "cu_seqlens_q[0] != 0");
    rejects({0, 3, 2}, {0, 6, 5}, sp.layout, "decreasing cu_seqlens");
    rejects({0, 4, 5}, {0, 3, 9}, sp.layout, "n_q > n_k");
    rejects({0, 2, 5}, {0, 6}, sp.layout, "cu_seqlens of different lengths");
    rejects(sp.cu_q, sp.cu_k, HeadLayout{3, 2, 8, 4}, "heads not a multiple of groups");
    std::vector<float> o3(o.size());
    EXPECT_THROW(run({sp.layout, batch, nullptr, sp.q, sp.k, sp.v}, {o3, {}}), popper::InvalidArgument)
        << name << ": no pack";
  }
  // The other packing entry points check too.
  const SequenceInput bad{2, 3, std::span(sp.q.data(), 2 * 4 * 8 - 1), std::span(sp.k.data(), 3 * 2 * 8),
                          std::span(sp.v.data(), 3 * 2 * 4)};
  EXPECT_THROW(pack_sequences(sp.layout, std::span(&bad, 1)), popper::BufferTooSmall);
  std::vector<float> scores(10);
  EXPECT_THROW(select_blocks(batch, 2, SelectionConfig{4, 2, 1, 2}, scores, 2), popper::InvalidArgument)
      << "n < n_init + n_local";
  EXPECT_THROW(select_blocks(batch, 2, SelectionConfig{4, 3, 1, 2}, scores, 2), popper::BufferTooSmall)
      << "short scores";
});
