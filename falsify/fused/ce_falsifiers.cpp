// FALSIFY-FUSED-001 (fused CE vs the separate reference), -016 (chunked
// log-sum-exp), -017 (ignore index), -007 (no softmax materialized).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "impl/fused/fused.hpp"
#include "impl/fused/reference.hpp"
#include "support.hpp"
#include "testbed.hpp"

namespace {

using namespace popper::fused;
using namespace popper::fused::testing;
namespace tb = popper::fused::testbed;

struct CeRef {
  std::vector<double> loss, lse, grad;
};
CeRef ce_reference(const CrossEntropyShape& s, const std::vector<float>& x, const std::vector<std::int64_t>& y) {
  CeRef r{std::vector<double>(static_cast<std::size_t>(s.rows)), std::vector<double>(static_cast<std::size_t>(s.rows)),
          std::vector<double>(x.size())};
  reference::cross_entropy(s, x, y, r.loss, r.lse, r.grad);
  return r;
}

// Worst |fused - reference| over the seed's range in the current test (printed as evidence).
double g_ce_seed_worst = 0;

// Judges one call's loss, lse and grad against the derived bound; seed_tol > 0
// additionally applies the seed's absolute bound to rows with |x| <= range.
void judge_ce(const CrossEntropyShape& s, const std::vector<float>& x, const std::vector<std::int64_t>& y,
              const CeRef& ref, const std::vector<float>& loss, const std::vector<float>& lse,
              const std::vector<float>& grad, double seed_tol, double range, const std::string& what) {
  tb::Worst wl, we, wg;
  double seed_worst = 0;
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const std::size_t ru = static_cast<std::size_t>(r);
    if (y[ru] == s.ignore_index) continue;
    const float* row = x.data() + r * s.vocab;
    const tb::CeBound b = tb::ce_bound(row, s.vocab, s.chunk, ref.loss[ru], ref.lse[ru]);
    wl.see(std::fabs(loss[ru] - ref.loss[ru]), b.loss, ru);
    we.see(std::fabs(lse[ru] - ref.lse[ru]), b.lse, ru);
    bool in_range = true;
    for (std::int64_t i = 0; i < s.vocab; ++i) in_range &= std::fabs(row[i]) <= range;
    if (in_range) seed_worst = std::max(seed_worst, std::fabs(loss[ru] - ref.loss[ru]));
    for (std::int64_t i = 0; i < s.vocab; ++i) {
      const std::size_t at = static_cast<std::size_t>(r * s.vocab + i);
      const double p = std::exp(static_cast<double>(row[i]) - ref.lse[ru]);
      const double bound = s.grad_scale * p * b.grad_rel + tb::kU * std::fabs(ref.grad[at]) + 1e-300;
      wg.see(std::fabs(grad[at] - ref.grad[at]), bound, at);
      if (in_range) seed_worst = std::max(seed_worst, std::fabs(grad[at] - ref.grad[at]));
    }
  }
  EXPECT_TRUE(wl.ok) << what << ": loss " << wl.text();
  EXPECT_TRUE(we.ok) << what << ": lse " << we.text();
  EXPECT_TRUE(wg.ok) << what << ": grad " << wg.text();
  g_ce_seed_worst = std::max(g_ce_seed_worst, seed_worst);
  if (seed_tol > 0) {
    EXPECT_LT(seed_worst, seed_tol) << what << ": the seed's absolute bound";
  }
}

POPPER_FALSIFIER("FALSIFY-FUSED-001", [](const popper::Params& p) {
  const double range = p.number("logit_range"), seed_tol = p.number("seed_tolerance");
  int cases = 0;
  g_ce_seed_worst = 0;
  for (const auto& sh : p.list("shapes")) {
    CrossEntropyShape s;
    s.rows = sh.integer("rows");
    s.vocab = sh.integer("vocab");
    auto x = tb::uniform(static_cast<std::size_t>(s.rows * s.vocab), -range, range,
                         p.seed() + static_cast<std::uint64_t>(s.vocab));
    // Row 0 holds large logits: without the max subtraction its sum overflows.
    if (s.vocab > 1)
      for (std::int64_t i = 0; i < s.vocab; ++i)
        x[static_cast<std::size_t>(i)] = 90.0f + 10.0f * static_cast<float>(i % 7) / 7.0f;
    // Row 1: logits near 1e6 a unit apart, where the shift must be exact at the
    // max (a rounded m log2(e) is off by up to 2^-4 there, far past the bound).
    // Row 2: huge, finite logits (a diverging model's): the loss M - x_y is
    // finite, and the row must not be reported non-finite.
    if (s.vocab > 1 && s.rows > 2)
      for (std::int64_t i = 0; i < s.vocab; ++i) {
        x[static_cast<std::size_t>(s.vocab + i)] = 1.0e6f + static_cast<float>(i % 7);
        x[static_cast<std::size_t>(2 * s.vocab + i)] = 1.2e10f + 4.0e8f * static_cast<float>(i % 5);
      }
    const auto y = tb::labels(s.rows, s.vocab, p.seed() + 1);
    for (const float scale : {1.0f, 1.0f / static_cast<float>(s.rows)}) {
      s.grad_scale = scale;
      const CeRef ref = ce_reference(s, x, y);
      for (const Isa isa : isas_to_test())
        for (const auto t : p.integers("threads"))
          for (const bool in_place : {false, true}) {
            std::vector<float> loss(static_cast<std::size_t>(s.rows)), lse(loss.size()), grad(x.size());
            std::vector<float> buf = x;
            const CrossEntropyResult r = in_place
                                             ? cross_entropy(s, buf, y, loss, lse, buf, opts(isa, static_cast<int>(t)))
                                             : cross_entropy(s, x, y, loss, lse, grad, opts(isa, static_cast<int>(t)));
            judge_ce(s, x, y, ref, loss, lse, in_place ? buf : grad, seed_tol, range,
                     where(isa, static_cast<int>(t)) + " V=" + std::to_string(s.vocab) + (in_place ? " in place" : ""));
            EXPECT_EQ(r.nonfinite_rows, 0);
            if (::testing::Test::HasFailure()) return;
            record(r.run, isa);
            ++cases;
          }
    }
  }
  EXPECT_GT(cases, 0);
  std::printf("  CE worst |loss|,|grad| error for logits in [-%g, %g]: %.3g (seed bound %g)\n", range, range,
              g_ce_seed_worst, seed_tol);
});

POPPER_FALSIFIER("FALSIFY-FUSED-016", [](const popper::Params& p) {
  const std::int64_t rows = p.integer("rows");
  for (const auto V : p.integers("vocabs")) {
    auto x = tb::uniform(static_cast<std::size_t>(rows * V), -4, 4, p.seed() + static_cast<std::uint64_t>(V));
    std::vector<std::int64_t> y(static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) {  // max and label in the last (partial) chunk
      x[static_cast<std::size_t>(r * V + V - 1)] = 7.5f;
      y[static_cast<std::size_t>(r)] = V - 1 - r;
    }
    CrossEntropyShape single;
    single.rows = rows, single.vocab = V, single.chunk = V;
    const CeRef ref = ce_reference(single, x, y);
    std::vector<float> l1(static_cast<std::size_t>(rows)), e1(l1.size()), g1(x.size());
    record(cross_entropy(single, x, y, l1, e1, g1).run, Isa::Auto);
    for (const auto C : p.integers("chunks")) {
      CrossEntropyShape s = single;
      s.chunk = C;
      std::vector<float> l(l1.size()), e(l1.size()), g(x.size());
      const auto r = cross_entropy(s, x, y, l, e, g);
      judge_ce(s, x, y, ref, l, e, g, 0, 0, "chunk " + std::to_string(C) + " V=" + std::to_string(V));
      for (std::int64_t row = 0; row < rows; ++row) {
        const std::size_t ru = static_cast<std::size_t>(row);
        const double tC = tb::ce_bound(x.data() + row * V, V, C, ref.loss[ru], ref.lse[ru]).theta;
        const double tV = tb::ce_bound(x.data() + row * V, V, V, ref.loss[ru], ref.lse[ru]).theta;
        EXPECT_LE(std::fabs(e[ru] - e1[ru]), tC + tV + 2 * tb::kU * std::fabs(ref.lse[ru]))
            << "chunked vs single-pass lse, chunk " << C << " V=" << V << " row " << row;
      }
      if (::testing::Test::HasFailure()) return;
      record(r.run, Isa::Auto);
    }
  }
});

POPPER_FALSIFIER("FALSIFY-FUSED-017", [](const popper::Params& p) {
  const std::int64_t rows = p.integer("rows"), V = p.integer("vocab");
  const auto x = tb::uniform(static_cast<std::size_t>(rows * V), -4, 4, p.seed());
  for (const std::int64_t ignore : {std::int64_t{-100}, std::int64_t{-1}}) {
    auto y = tb::labels(rows, V, p.seed() + 3);
    for (std::int64_t r = 0; r < rows; r += 3) y[static_cast<std::size_t>(r)] = ignore;  // rows 0, 3, 6 ignored
    CrossEntropyShape s;
    s.rows = rows, s.vocab = V, s.ignore_index = ignore;
    for (const Isa isa : isas_to_test()) {
      std::vector<float> loss(static_cast<std::size_t>(rows), -1.0f), lse(loss.size(), -1.0f), g = x;
      const auto r = cross_entropy(s, g, y, loss, lse, g, opts(isa, 2));  // in place: a left row keeps the logits
      std::int64_t expected_ignored = 0;
      for (std::int64_t row = 0; row < rows; ++row) {
        const std::size_t ru = static_cast<std::size_t>(row);
        if (y[ru] != ignore) continue;
        ++expected_ignored;
        EXPECT_EQ(loss[ru], 0.0f) << "ignored row " << row;
        EXPECT_EQ(lse[ru], 0.0f) << "ignored row " << row;
        for (std::int64_t i = 0; i < V; ++i)
          if (g[static_cast<std::size_t>(row * V + i)] != 0.0f) {
            ADD_FAILURE() << "ignored row " << row << " grad[" << i
                          << "] = " << g[static_cast<std::size_t>(row * V + i)];
            break;
          }
      }
      EXPECT_EQ(r.ignored_rows, expected_ignored);
      // The other rows equal a run on them alone.
      for (std::int64_t row = 0; row < rows; ++row) {
        const std::size_t ru = static_cast<std::size_t>(row);
        if (y[ru] == ignore) continue;
        CrossEntropyShape one = s;
        one.rows = 1;
        std::vector<float> l1(1), e1(1), g1(static_cast<std::size_t>(V));
        cross_entropy(one,
                      std::span<const float>(x).subspan(ru * static_cast<std::size_t>(V), static_cast<std::size_t>(V)),
                      std::span<const std::int64_t>(y).subspan(ru, 1), l1, e1, g1, opts(isa, 1));
        EXPECT_EQ(l1[0], loss[ru]) << "row " << row;
        EXPECT_EQ(0, std::memcmp(g1.data(), g.data() + ru * static_cast<std::size_t>(V), g1.size() * sizeof(float)))
            << "row " << row;
      }
      if (::testing::Test::HasFailure()) return;
      record(r.run, isa);
    }
  }
});

POPPER_FALSIFIER("FALSIFY-FUSED-007", [](const popper::Params& p) {
  CrossEntropyShape s;
  s.rows = p.integer("rows"), s.vocab = p.integer("vocab");
  const auto x = tb::uniform(static_cast<std::size_t>(s.rows * s.vocab), -4, 4, 7);
  const auto y = tb::labels(s.rows, s.vocab, 8);
  const std::size_t materialized = static_cast<std::size_t>(s.rows * s.vocab) * sizeof(float);
  std::vector<float> loss(static_cast<std::size_t>(s.rows)), grad(x.size());
  tb::CountingAllocator fused_alloc, sep_alloc;
  const auto r = cross_entropy(s, x, y, loss, {}, grad, opts(Isa::Auto, 2, &fused_alloc));
  separate::cross_entropy(s, x, y, loss, grad, opts(Isa::Auto, 2, &sep_alloc));
  std::printf("  fused CE peak %zu bytes (%zu requested), separate peak %zu bytes; rows*V*4 = %zu\n", fused_alloc.peak,
              fused_alloc.requested, sep_alloc.peak, materialized);
  EXPECT_LT(fused_alloc.peak, materialized) << "the fused CE allocated a rows x V buffer";
  EXPECT_GE(sep_alloc.peak, materialized) << "control: the counting allocator must see the separate path's softmax";
  EXPECT_EQ(fused_alloc.current, 0u) << "workspace not returned";
  record(r.run, Isa::Auto);
});

}  // namespace
