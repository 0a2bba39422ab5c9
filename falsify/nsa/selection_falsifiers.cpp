// Block selection and span packing (contracts/nsa/nsa-selection-v1.yaml:
// FALSIFY-NSA-004, -005, -007, KANI-NSA-002, -003): the NSA selection rule,
// determinism and one selection per group, packing into causally clipped
// maximal runs, and clear errors for blocks past the sequence end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "impl/nsa/nsa.hpp"
#include "impl/nsa/reference.hpp"
#include "nsa/testbed.hpp"
#include "popper/binding.hpp"
#include "popper/error.hpp"

namespace {

using namespace popper::nsa;
namespace tb = popper::nsa::testbed;

struct Batch {
  std::vector<std::int32_t> cu_q{0}, cu_k{0};
  VarlenBatch view() const { return {cu_q, cu_k}; }
  void add(int n_q, int n_k) {
    cu_q.push_back(cu_q.back() + n_q);
    cu_k.push_back(cu_k.back() + n_k);
  }
};

int max_blocks(const Batch& b, int block_size) {
  int m = 0;
  for (std::size_t i = 0; i + 1 < b.cu_k.size(); ++i)
    m = std::max(m, block_count(b.cu_k[i + 1] - b.cu_k[i], block_size));
  return m;
}

std::string describe(const SelectionConfig& c) {
  return "l'=" + std::to_string(c.block_size) + " n=" + std::to_string(c.top_n) +
         " n_init=" + std::to_string(c.n_init) + " n_local=" + std::to_string(c.n_local);
}

}  // namespace

POPPER_FALSIFIER("FALSIFY-NSA-004", [](const popper::Params& p) {
  std::mt19937_64 rng(p.seed());
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int cases = static_cast<int>(p.integer("cases"));
  for (int c = 0; c < cases; ++c) {
    SelectionConfig cfg;
    const int sizes[] = {1, 2, 4, 8, 64};
    cfg.block_size = sizes[pick(0, 4)];
    cfg.n_init = pick(0, 2);
    cfg.n_local = pick(0, 3);
    cfg.top_n = pick(std::max(1, cfg.n_init + cfg.n_local), 16);
    const int groups = pick(1, 3);
    Batch b;
    const int seqs = pick(1, 4);
    for (int s = 0; s < seqs; ++s) {
      const int n_k = pick(0, cfg.block_size == 1 ? 60 : 300);
      b.add(pick(0, std::min(n_k, 40)), n_k);
    }
    const int stride = max_blocks(b, cfg.block_size) + pick(0, 2);
    const bool ties = c % 2 == 0;
    std::vector<float> scores(static_cast<std::size_t>(b.cu_q.back()) * groups * std::max(stride, 1));
    for (auto& s : scores) s = ties ? float(pick(0, 3)) : std::uniform_real_distribution<float>(-1, 1)(rng);
    const auto got = select_blocks(b.view(), groups, cfg, scores, stride, 1 + c % 2);
    const auto want = reference::select_blocks(b.view(), groups, cfg, scores, stride);
    for (std::int64_t t = 0; t < got.rows; ++t)
      for (int g = 0; g < groups; ++g) {
        const auto a = got.of(t, g), w = want.of(t, g);
        const std::int64_t cur = reference::query_position(b.view(), t) / cfg.block_size;
        const auto count = std::count_if(a.begin(), a.end(), [](std::int32_t i) { return i >= 0; });
        ASSERT_TRUE(std::equal(a.begin(), a.end(), w.begin()))
            << "case " << c << " (" << describe(cfg) << (ties ? ", tied scores" : "") << ") row " << t << " group " << g
            << ": selection differs from the NSA rule; seed " << p.seed();
        ASSERT_EQ(count, std::min<std::int64_t>(cfg.top_n, cur + 1)) << "case " << c << " row " << t;
        for (std::int64_t i = 0; i <= cur; ++i) {
          if (i < cfg.n_init || i > cur - cfg.n_local) {
            ASSERT_NE(std::find(a.begin(), a.end(), std::int32_t(i)), a.end())
                << "case " << c << " row " << t << ": forced block " << i << " missing (" << describe(cfg) << ")";
          }
        }
      }
  }
});

POPPER_FALSIFIER("FALSIFY-NSA-005", [](const popper::Params& p) {
  const int groups = static_cast<int>(p.integer("groups")), hg = static_cast<int>(p.integer("heads_per_group"));
  const int heads = groups * hg, d = 32;
  std::mt19937_64 rng(p.seed());
  Batch b;
  b.add(40, 200);
  b.add(1, 90);
  b.add(64, 64);
  SelectionConfig cfg{8, 6, 1, 2};
  const int stride = max_blocks(b, cfg.block_size);
  const std::int64_t rows = b.cu_q.back();
  std::vector<float> head_scores(static_cast<std::size_t>(rows) * heads * stride),
      group_scores(static_cast<std::size_t>(rows) * groups * stride);
  for (auto& s : head_scores) s = std::uniform_real_distribution<float>(0, 1)(rng);
  const HeadLayout layout{heads, groups, d, d};
  group_block_scores(layout, rows, stride, head_scores, group_scores);
  for (std::int64_t t = 0; t < rows; ++t)
    for (int g = 0; g < groups; ++g)
      for (int i = 0; i < stride; ++i) {
        double sum = 0;
        for (int h = g * hg; h < (g + 1) * hg; ++h)
          sum += head_scores[static_cast<std::size_t>((t * heads + h) * stride + i)];
        ASSERT_EQ(group_scores[static_cast<std::size_t>((t * groups + g) * stride + i)], static_cast<float>(sum))
            << "group score of row " << t << " group " << g << " block " << i << " is not the FP64 head sum";
      }
  const auto one = select_blocks(b.view(), groups, cfg, group_scores, stride, 1);
  const auto two = select_blocks(b.view(), groups, cfg, group_scores, stride, 2);
  const auto again = select_blocks(b.view(), groups, cfg, group_scores, stride, 1);
  ASSERT_EQ(one.blocks, two.blocks) << "selection depends on the thread count";
  ASSERT_EQ(one.blocks, again.blocks) << "selection differs between two calls";
  // Equal queries within a group (different between groups): the heads of a group must agree bitwise.
  tb::Workload w;
  w.layout = layout;
  w.cu_q = b.cu_q;
  w.cu_k = b.cu_k;
  w.pack = pack_block_selection(w.batch(), one);
  const auto qg = tb::bf16_uniform(static_cast<std::size_t>(rows) * groups * d, p.seed() + 1);
  w.q.resize(static_cast<std::size_t>(rows) * heads * d);
  for (std::int64_t t = 0; t < rows; ++t)
    for (int h = 0; h < heads; ++h)
      std::copy_n(qg.begin() + (t * groups + h / hg) * d, d, w.q.begin() + (t * heads + h) * d);
  w.k = tb::bf16_uniform(static_cast<std::size_t>(b.cu_k.back()) * groups * d, p.seed() + 2);
  w.v = tb::bf16_uniform(static_cast<std::size_t>(b.cu_k.back()) * groups * d, p.seed() + 3);
  auto check = [&](const std::string& who, auto run) {
    std::vector<float> o(w.o_size()), lse(w.lse_size());
    run(w.problem(), SelectionOutput{o, lse});
    for (std::int64_t t = 0; t < rows; ++t)
      for (int h = 0; h < heads; ++h) {
        const int first = h / hg * hg;
        ASSERT_EQ(std::memcmp(&o[static_cast<std::size_t>((t * heads + h) * d)],
                              &o[static_cast<std::size_t>((t * heads + first) * d)], sizeof(float) * d),
                  0)
            << who << ": row " << t << " head " << h << " differs from head " << first
            << " of its group although the queries are equal (a per-head selection or a wrong group)";
      }
    const auto acc = tb::compare(w.problem(), o, lse, tb::spread_rows(rows, rows), 2.0);
    EXPECT_TRUE(acc.within_bound) << who << ": " << acc.describe();
  };
  for (const auto& path : tb::hand_paths(2, popper::forced_paths_allowed()))
    check(popper::cpu::to_string(path.options.isa), [&](const SelectionProblem& pr, SelectionOutput out) {
      popper::record_backend(selection_attention_hand(pr, out, path.options).backend,
                             path.forced ? popper::Dispatch::Forced : popper::Dispatch::Auto);
    });
  check("fallback", [&](const SelectionProblem& pr, SelectionOutput out) {
    popper::record_backend(selection_attention_fallback(pr, out).backend);
  });
});

POPPER_FALSIFIER("FALSIFY-NSA-007", [](const popper::Params&) {
  Batch b;
  b.add(3, 100);  // 7 blocks of 16
  b.add(37, 37);  // 3 blocks of 16
  SelectionConfig cfg{16, 4, 1, 1};
  const int stride = 7;
  std::vector<float> scores(static_cast<std::size_t>(b.cu_q.back()) * stride, 1.0f);
  const auto valid = select_blocks(b.view(), 1, cfg, scores, stride);
  EXPECT_NO_THROW(pack_block_selection(b.view(), valid));
  auto expect_rejected = [&](BlockSelection sel, const std::string& want, const std::string& what) {
    try {
      pack_block_selection(b.view(), sel);
      ADD_FAILURE() << what << ": accepted";
    } catch (const popper::InvalidArgument& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(want), std::string::npos) << what << ": message lacks '" << want << "': " << msg;
      EXPECT_NE(msg.find("row "), std::string::npos) << msg;
      EXPECT_NE(msg.find("block "), std::string::npos) << msg;
    }
  };
  // Row 0 of sequence 0 (pos 97): slot 3 past the end (7 blocks), then far past it.
  for (const int bad : {7, 14}) {
    auto sel = valid;
    sel.blocks[3] = bad;
    std::sort(sel.blocks.begin(), sel.blocks.begin() + 4);
    expect_rejected(sel, "past the end of sequence 0 (n_k = 100", "block " + std::to_string(bad) + " of 7");
  }
  // Row 3 is sequence 1's first query (pos 0): block 1 is inside the sequence but after the query.
  {
    auto sel = valid;
    std::fill(sel.blocks.begin() + 3 * 4, sel.blocks.begin() + 4 * 4, -1);
    sel.blocks[3 * 4] = 0;
    sel.blocks[3 * 4 + 1] = 1;
    expect_rejected(sel, "after the query", "future block");
  }
  {
    auto sel = valid;
    sel.blocks[1] = sel.blocks[0];
    expect_rejected(sel, "listed once", "duplicate block");
  }
  // Explicit spans past n_k.
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(b.cu_q.back()) + 1);
  for (std::size_t i = 0; i < offsets.size(); ++i) offsets[i] = std::int64_t(i);
  std::vector<Span> spans(static_cast<std::size_t>(b.cu_q.back()), Span{0, 1});
  spans[0] = {99, 101};
  EXPECT_THROW(pack_explicit_spans(b.view(), 1, offsets, spans), popper::InvalidArgument)
      << "span [99, 101) of n_k = 100";
  // A pack built for another batch is refused by the kernel before it writes.
  Batch other;
  other.add(3, 100);
  const auto foreign = pack_block_selection(b.view(), valid);
  const HeadLayout lay{2, 1, 8, 8};
  const std::vector<bf16> q(3 * 2 * 8), k(100 * 8), v(100 * 8);
  std::vector<float> o(3 * 2 * 8, 42.0f);
  const SelectionProblem pr{lay, other.view(), &foreign, q, k, v};
  EXPECT_THROW(selection_attention_hand(pr, {o, {}}), popper::InvalidArgument);
  EXPECT_THROW(selection_attention_fallback(pr, {o, {}}), popper::InvalidArgument);
  EXPECT_TRUE(std::all_of(o.begin(), o.end(), [](float x) { return x == 42.0f; })) << "output written before the check";
});

// Exhaustive: one query with cur + 1 = 1..bound eligible blocks (l' = 1), every score vector over {0, 1, 2}.
POPPER_HARNESS("KANI-NSA-002", [](const popper::Params& p) {
  const int bound = static_cast<int>(p.bound());
  long cases = 0;
  for (int nb = 1; nb <= bound; ++nb) {
    Batch b;
    b.add(1, nb);
    int combos = 1;
    for (int i = 0; i < nb; ++i) combos *= 3;
    std::vector<float> s(static_cast<std::size_t>(nb));
    for (int code = 0; code < combos; ++code) {
      for (int i = 0, c = code; i < nb; ++i, c /= 3) s[static_cast<std::size_t>(i)] = float(c % 3);
      for (int n = 1; n <= bound; ++n)
        for (int n_init = 0; n_init <= 1; ++n_init)
          for (int n_local = 0; n_local <= 2; ++n_local) {
            if (n < n_init + n_local) continue;
            const SelectionConfig cfg{1, n, n_init, n_local};
            const auto got = select_blocks(b.view(), 1, cfg, s, nb);
            const auto want = reference::select_blocks(b.view(), 1, cfg, s, nb);
            ++cases;
            if (got.blocks != want.blocks) {
              std::string sv;
              for (float x : s) sv += std::to_string(int(x)) + " ";
              FAIL() << "scores [" << sv << "] " << describe(cfg) << ": selection differs from the NSA rule";
            }
          }
    }
  }
  std::printf("  %ld selections checked\n", cases);
});

// Exhaustive: n_k = 1..bound keys (prefill, every query position), l' = 1..3, every subset of eligible blocks.
POPPER_HARNESS("KANI-NSA-003", [](const popper::Params& p) {
  const int bound = static_cast<int>(p.bound());
  long cases = 0;
  for (int nk = 1; nk <= bound; ++nk)
    for (int l = 1; l <= 3; ++l) {
      Batch b;
      b.add(nk, nk);
      for (int pos = 0; pos < nk; ++pos) {
        const int cur = pos / l;
        for (int mask = 0; mask < (1 << (cur + 1)); ++mask) {
          BlockSelection sel;
          sel.rows = nk;
          sel.groups = 1;
          sel.top_n = cur + 1;
          sel.block_size = l;
          sel.blocks.assign(static_cast<std::size_t>(nk) * (cur + 1), -1);
          int n = 0;
          for (int i = 0; i <= cur; ++i)
            if (mask >> i & 1) sel.blocks[static_cast<std::size_t>(pos * (cur + 1) + n++)] = i;
          const auto pack = pack_block_selection(b.view(), sel);
          const auto spans = pack.of(pos, 0);
          ++cases;
          ASSERT_EQ(reference::span_tokens(spans), reference::selected_tokens(b.view(), sel, pos, 0))
              << "n_k " << nk << " l' " << l << " pos " << pos << " blocks mask " << mask
              << ": packed spans do not cover exactly the causally clipped blocks";
          for (std::size_t s = 0; s < spans.size(); ++s) {
            ASSERT_LT(spans[s].begin, spans[s].end) << "empty span";
            if (s > 0) {
              ASSERT_LT(spans[s - 1].end, spans[s].begin) << "spans not maximal or not ascending";
            }
          }
        }
      }
    }
  std::printf("  %ld packs checked\n", cases);
});
