// Accuracy of NSA selection attention against the FP64 reference
// (contracts/nsa/nsa-selection-v1.yaml: FALSIFY-NSA-001, -002, -003, -011):
// MAE <= 1e-3 and the derived elementwise bound over the seed's grid, the
// scale applied exactly once, and pass 2 reusing pass 1's lse.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

#include "impl/nsa/nsa.hpp"
#include "nsa/testbed.hpp"
#include "popper/binding.hpp"

namespace {

using namespace popper::nsa;
namespace tb = popper::nsa::testbed;

popper::Dispatch how(bool forced) { return forced ? popper::Dispatch::Forced : popper::Dispatch::Auto; }

// Runs one path and checks it on `rows`; returns the accuracy.
// Seconds spent in the kernels and in the reference comparison (printed: the test must stay fast).
struct Clock {
  double kernels = 0, checks = 0;
  static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
};
Clock g_clock;

// Runs one path and judges it against `x`.
template <class Run>
tb::Accuracy run_and_check(const tb::Workload& w, const tb::Expected& x, Run run) {
  std::vector<float> o(w.o_size(), -7.0f), lse(w.lse_size(), -7.0f);
  const double t0 = Clock::now();
  run(w.problem(), SelectionOutput{o, lse});
  const double t1 = Clock::now();
  auto acc = tb::check(w.problem(), x, o, lse);
  g_clock.kernels += t1 - t0;
  g_clock.checks += Clock::now() - t1;
  return acc;
}

tb::Expected timed_expected(const tb::Workload& w, std::span<const std::int64_t> rows, double f) {
  const double t0 = Clock::now();
  auto x = tb::expected(w.problem(), rows, f);
  g_clock.checks += Clock::now() - t0;
  return x;
}

}  // namespace

POPPER_FALSIFIER("FALSIFY-NSA-001", [](const popper::Params& p) {
  const double mae_max = p.number("mae_max"), f = p.number("tol_factor");
  const int threads = static_cast<int>(p.integer("threads"));
  const auto check_rows = p.integer("check_rows"), forced_rows = p.integer("forced_rows");
  const bool forced = popper::forced_paths_allowed();
  std::map<int, double> worst_mae_by_l;  // the hand kernel's, for the printed summary
  for (const auto& dist : p.strings("dists"))
    for (const auto n : p.integers("n"))
      for (const auto h : p.integers("h"))
        for (const auto d : p.integers("d"))
          for (const auto l : p.integers("l")) {
            const auto shape = tb::grid_shape(dist.c_str(), int(n), int(h), int(d), int(l));
            const auto w = tb::make_workload(shape);
            const auto x = timed_expected(w, tb::spread_rows(w.cu_q.back(), check_rows), f);
            char where[96];
            std::snprintf(where, sizeof where, "%s N=%d H=%d D=%d L=%d", dist.c_str(), int(n), int(h), int(d), int(l));
            const auto hand = run_and_check(w, x, [&](const SelectionProblem& pr, SelectionOutput out) {
              popper::record_backend(selection_attention_hand(pr, out, HandOptions{threads}).backend);
            });
            EXPECT_LE(hand.mae, mae_max) << "hand " << where << ": " << hand.describe();
            EXPECT_TRUE(hand.within_bound) << "hand " << where << ": " << hand.describe();
            EXPECT_GT(hand.out_abs_sum, 0.0) << "hand " << where << ": all-zero output";
            worst_mae_by_l[int(l)] = std::max(worst_mae_by_l[int(l)], hand.mae);
            if (n != p.integers("n").front()) continue;  // the fallback and the narrower paths once per (dist, H, D, L)
            const auto fb = run_and_check(w, x, [&](const SelectionProblem& pr, SelectionOutput out) {
              popper::record_backend(selection_attention_fallback(pr, out, FallbackOptions{threads}).backend);
            });
            EXPECT_LE(fb.mae, mae_max) << "fallback " << where << ": " << fb.describe();
            EXPECT_TRUE(fb.within_bound) << "fallback " << where << ": " << fb.describe();
            if (!forced) continue;
            // The narrower CPU paths on a few rows of the same grid point (every row checked; N plays no part).
            const auto small =
                tb::make_workload(tb::grid_shape(dist.c_str(), int(4 * forced_rows), int(h), int(d), int(l)));
            const auto xs = timed_expected(small, tb::spread_rows(small.cu_q.back(), small.cu_q.back()), f);
            for (const auto& path : tb::hand_paths(1, true)) {
              if (!path.forced) continue;
              const auto acc = run_and_check(small, xs, [&](const SelectionProblem& pr, SelectionOutput out) {
                popper::record_backend(selection_attention_hand(pr, out, path.options).backend, how(true));
              });
              EXPECT_LE(acc.mae, mae_max)
                  << popper::cpu::to_string(path.options.isa) << " " << where << ": " << acc.describe();
              EXPECT_TRUE(acc.within_bound)
                  << popper::cpu::to_string(path.options.isa) << " " << where << ": " << acc.describe();
            }
          }
  // Peaky rows: Q amplified 8x at the longest L (scores spread over ~+-20).
  const auto peaky = tb::make_workload(tb::grid_shape("few", 64, 8, 128, 4096), p.number("amplified_q"));
  const auto xp = timed_expected(peaky, tb::spread_rows(peaky.cu_q.back(), check_rows), f);
  const auto acc = run_and_check(peaky, xp, [&](const SelectionProblem& pr, SelectionOutput out) {
    selection_attention_hand(pr, out, HandOptions{threads});
  });
  EXPECT_LE(acc.mae, mae_max) << "amplified q: " << acc.describe();
  EXPECT_TRUE(acc.within_bound) << "amplified q: " << acc.describe();
  std::printf("  time: kernels %.2f s, reference checks %.2f s\n", g_clock.kernels, g_clock.checks);
  for (const auto& [l, mae] : worst_mae_by_l)
    std::printf("  hand kernel, L = %4d: worst MAE over the grid %.3e\n", l, mae);
  std::printf("  amplified q (x%.0f), L = 4096: %s\n", p.number("amplified_q"), acc.describe().c_str());
});

namespace {

// One row, two keys: k_0 = e_0, k_1 = 0, q = a e_0, v_0 = 1, v_1 = 0  =>  o = sigmoid(a / sqrt(D)).
tb::Workload two_keys(double a, int d) {
  tb::Workload w;
  w.layout = {1, 1, d, d};
  w.cu_q = {0, 1};
  w.cu_k = {0, 2};
  const std::vector<std::int64_t> offsets{0, 1};
  const std::vector<Span> spans{{0, 2}};
  w.pack = pack_explicit_spans(w.batch(), 1, offsets, spans);
  w.q.assign(static_cast<std::size_t>(d), 0);
  w.q[0] = bf16_from_float(static_cast<float>(a));
  w.k.assign(2 * static_cast<std::size_t>(d), 0);
  w.k[0] = bf16_from_float(1.0f);
  w.v.assign(2 * static_cast<std::size_t>(d), 0);
  for (int e = 0; e < d; ++e) w.v[static_cast<std::size_t>(e)] = bf16_from_float(1.0f);
  return w;
}

}  // namespace

POPPER_FALSIFIER("FALSIFY-NSA-002", [](const popper::Params& p) {
  const bool forced = popper::forced_paths_allowed();
  for (const double a : p.numbers("a"))
    for (const auto d : p.integers("d")) {
      const auto w = two_keys(a, int(d));
      const double expected = 1.0 / (1.0 + std::exp(-a / std::sqrt(double(d))));
      const auto all = tb::spread_rows(1, 1);
      auto check = [&](const char* who, auto run) {
        std::vector<float> o(w.o_size()), lse(w.lse_size());
        run(w.problem(), SelectionOutput{o, lse});
        const auto acc = tb::compare(w.problem(), o, lse, all, 2.0);
        EXPECT_TRUE(acc.within_bound) << who << " a=" << a << " D=" << d << ": " << acc.describe();
        EXPECT_NEAR(o[0], expected, 1e-6)
            << who << " a=" << a << " D=" << d << ": scale not applied exactly once (twice gives "
            << 1.0 / (1.0 + std::exp(-a / double(d))) << ", none " << 1.0 / (1.0 + std::exp(-a)) << ")";
      };
      for (const auto& path : tb::hand_paths(1, forced))
        check(popper::cpu::to_string(path.options.isa), [&](const SelectionProblem& pr, SelectionOutput out) {
          popper::record_backend(selection_attention_hand(pr, out, path.options).backend, how(path.forced));
        });
      check("fallback", [&](const SelectionProblem& pr, SelectionOutput out) {
        popper::record_backend(selection_attention_fallback(pr, out).backend);
      });
    }
});

namespace {

// One query attending to L keys; tile i (64 keys) is aligned with head 0's
// query by a factor that changes from tile to tile, so tile maxima differ
// by up to ~30. `unit_values`: V = 1 everywhere.
tb::Workload tiled_maxima(int len, int d, int heads, std::uint64_t seed, bool unit_values) {
  tb::Workload w;
  w.layout = {heads, 1, d, d};
  w.cu_q = {0, 1};
  w.cu_k = {0, len};
  const std::vector<std::int64_t> offsets{0, 1};
  const std::vector<Span> spans{{0, len}};
  w.pack = pack_explicit_spans(w.batch(), 1, offsets, spans);
  w.q = tb::bf16_uniform(static_cast<std::size_t>(heads * d), seed);
  const auto noise = tb::bf16_uniform(static_cast<std::size_t>(len) * d, seed + 1);
  const double factors[] = {0.0, 3.0, 11.0, 6.0, 1.5, 9.0};
  w.k.resize(static_cast<std::size_t>(len) * d);
  for (int j = 0; j < len; ++j) {
    const double a = factors[(j / 64) % 6];
    for (int e = 0; e < d; ++e) {
      const std::size_t i = static_cast<std::size_t>(j) * d + e;
      w.k[i] = bf16_from_float(
          static_cast<float>(a * float_from_bf16(w.q[static_cast<std::size_t>(e)]) + 0.1 * float_from_bf16(noise[i])));
    }
  }
  w.v = unit_values ? std::vector<bf16>(static_cast<std::size_t>(len) * d, bf16_from_float(1.0f))
                    : tb::bf16_uniform(static_cast<std::size_t>(len) * d, seed + 2);
  return w;
}

}  // namespace

POPPER_FALSIFIER("FALSIFY-NSA-003", [](const popper::Params& p) {
  const int d = static_cast<int>(p.integer("d")), heads = static_cast<int>(p.integer("heads"));
  const double f = p.number("tol_factor");
  const bool forced = popper::forced_paths_allowed();
  for (const auto len : p.integers("l"))
    for (const bool unit : {true, false}) {
      const auto w = tiled_maxima(int(len), d, heads, p.seed(), unit);
      const auto all = tb::spread_rows(1, 1);
      auto check = [&](const std::string& who, auto run) {
        std::vector<float> o(w.o_size()), lse(w.lse_size());
        run(w.problem(), SelectionOutput{o, lse});
        const auto acc = tb::compare(w.problem(), o, lse, all, f);
        EXPECT_TRUE(acc.within_bound) << who << " L=" << len << (unit ? " V=1" : " random V") << ": " << acc.describe();
        if (unit) {  // the weights of the whole selection sum to one
          for (std::size_t e = 0; e < o.size(); ++e) {
            ASSERT_NEAR(o[e], 1.0, 4 * tb::gamma(double(len)) + 1e-5)
                << who << " L=" << len << ": sum of weights " << o[e] << " (per-tile normalization gives ~"
                << (len + 63) / 64 << ")";
          }
        }
      };
      for (const auto& path : tb::hand_paths(1, forced))
        check(popper::cpu::to_string(path.options.isa), [&](const SelectionProblem& pr, SelectionOutput out) {
          popper::record_backend(selection_attention_hand(pr, out, path.options).backend, how(path.forced));
        });
      check("fallback", [&](const SelectionProblem& pr, SelectionOutput out) {
        popper::record_backend(selection_attention_fallback(pr, out).backend);
      });
    }
});

POPPER_FALSIFIER("FALSIFY-NSA-011", [](const popper::Params& p) {
  const double f = p.number("tol_factor"), mae_max = p.number("mae_max");
  for (const auto l : p.integers("l"))
    for (const char* dist : {"few", "many"}) {
      const auto w = tb::make_workload(tb::grid_shape(dist, 256, 8, 128, int(l)));
      std::vector<float> o(w.o_size()), lse(w.lse_size());
      const auto info = selection_attention_cuda(w.problem(), {o, lse});
      if (!info.decline.empty()) {
        popper::record_decline("cuda", info.decline);
        continue;
      }
      popper::record_backend(info.backend);
      const auto acc = tb::compare(w.problem(), o, lse, tb::spread_rows(w.cu_q.back(), 16), f);
      EXPECT_LE(acc.mae, mae_max) << dist << " L=" << l << ": " << acc.describe();
      EXPECT_TRUE(acc.within_bound) << dist << " L=" << l << ": " << acc.describe();
    }
});
