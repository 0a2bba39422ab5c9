// The order a trial runs its steps in (bench/trials.hpp).
#include "bench/trials.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace pb = popper::bench;

namespace {
// Every tier, and a ceiling, of each shape at 1 and 2 threads, warm, and one cold shape.
std::vector<pb::Step> steps() {
  std::vector<pb::Step> out;
  for (const std::string shape : {"small_64", "small_128", "wide_640"})
    for (const int threads : {1, 2}) {
      out.push_back({shape, pb::Tier::Ceiling, "", threads, "cblas_gemm_raw"});
      for (const pb::Tier tier : {pb::Tier::Hand, pb::Tier::Wrapped})
        for (const std::string prec : {"f32", "f64"}) out.push_back({shape, tier, prec, threads, ""});
    }
  out.push_back({"gemv_1k", pb::Tier::Hand, "f32", 1, "", pb::CacheMode::Cold});
  out.push_back({"gemv_1k", pb::Tier::Ceiling, "", 1, "cblas_gemm_raw", pb::CacheMode::Cold});
  return out;
}

std::tuple<std::string, int, pb::CacheMode> block_of(const pb::Step& s) { return {s.shape, s.threads, s.cache}; }
}  // namespace

// Rule: a trial runs each step once; the steps of one shape, thread count and
// cache mode run one after another, so the two sides of a ratio run seconds
// apart; the blocks and the steps within them are shuffled, differently from
// one trial's seed to the next.
TEST(BenchTrials, StepsOfOneShapeAndThreadCountRunTogetherInShuffledOrder) {
  const auto all = steps();
  std::vector<std::size_t> which(all.size());
  std::iota(which.begin(), which.end(), 0);
  std::set<std::vector<std::size_t>> orders;
  std::set<std::size_t> first_steps;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const auto order = pb::trial_order(all, which, seed);
    auto sorted = order;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted, which) << "each step exactly once";
    std::set<std::tuple<std::string, int, pb::CacheMode>> closed;
    for (std::size_t at = 0; at < order.size(); ++at) {
      const auto block = block_of(all[order[at]]);
      EXPECT_EQ(closed.count(block), 0u) << "a block resumed after another began: step " << at << ", seed " << seed;
      if (at + 1 < order.size() && block_of(all[order[at + 1]]) != block) closed.insert(block);
    }
    orders.insert(order);
    first_steps.insert(order.front());
  }
  EXPECT_EQ(orders.size(), 20u) << "the order changes from one trial to the next";
  EXPECT_GT(first_steps.size(), 5u) << "any block, and any step in it, may come first";
  // A subset (a top-up or remeasure trial) keeps only what it was given.
  const auto some = pb::trial_order(all, {0, 5, 7}, 3);
  EXPECT_EQ(std::set<std::size_t>(some.begin(), some.end()), (std::set<std::size_t>{0, 5, 7}));
}

// Rule: a re-measure of some rows runs the suite steps of those rows and the
// ceiling steps of their shape, thread count and cache mode, nothing else.
TEST(BenchTrials, ARemeasureRunsOnlyTheStepsThatTimeItsRows) {
  auto key = [](pb::Tier tier, const std::string& backend, const std::string& shape, const std::string& prec,
                int threads,
                const std::string& cache) { return pb::BenchKey{"gemm", tier, backend, shape, prec, threads, cache}; };
  const std::vector<pb::BenchKey> rows{key(pb::Tier::Wrapped, "openblas:Cooperlake", "small_64", "f64", 2, "warm"),
                                       key(pb::Tier::Ceiling, "openblas:Cooperlake", "small_64", "f64", 2, "warm"),
                                       key(pb::Tier::Ceiling, "openblas:Cooperlake", "gemv_1k", "f32", 1, "cold")};
  std::vector<pb::Step> kept;
  for (const auto& s : steps())
    if (pb::step_times_any(s, rows)) kept.push_back(s);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].tier, pb::Tier::Ceiling);
  EXPECT_EQ(kept[0].shape, "small_64");
  EXPECT_EQ(kept[0].threads, 2);
  EXPECT_EQ(kept[1].tier, pb::Tier::Wrapped);
  EXPECT_EQ(kept[1].precision, "f64");
  EXPECT_EQ(kept[1].threads, 2);
  EXPECT_EQ(kept[2].shape, "gemv_1k");
  EXPECT_EQ(kept[2].tier, pb::Tier::Ceiling) << "the cold ceiling, not the cold hand row nor a warm one";
}

// Rule: a ceiling step of a re-measure runs only the configurations and the
// precision its rows name; the full run (no rows) runs every configuration
// for every precision.
TEST(BenchTrials, ARemeasuredCeilingRunsOnlyItsRowsConfigurationAndPrecision) {
  auto key = [](const std::string& backend, const std::string& prec) {
    return pb::BenchKey{"gemm", pb::Tier::Ceiling, backend, "small_64", prec, 2, "warm"};
  };
  const pb::Step step{"small_64", pb::Tier::Ceiling, "", 2, "cblas_gemm_raw"};
  EXPECT_EQ(pb::ceiling_precision(step, "openblas:Cooperlake", {}), "");
  const std::vector<pb::BenchKey> one{key("openblas:Cooperlake", "f64")};
  EXPECT_EQ(pb::ceiling_precision(step, "openblas:Cooperlake", one), "f64");
  EXPECT_EQ(pb::ceiling_precision(step, "openblas:SkylakeX", one), std::nullopt) << "another configuration";
  const pb::Step other{"small_128", pb::Tier::Ceiling, "", 2, "cblas_gemm_raw"};
  EXPECT_EQ(pb::ceiling_precision(other, "openblas:Cooperlake", one), std::nullopt) << "another shape";
  const std::vector<pb::BenchKey> layout{key("ggml-cpu:zen4+repack", "q4k")};
  EXPECT_EQ(pb::ceiling_precision(step, "ggml-cpu:zen4", layout), "q4k") << "a layout's row is its configuration's";
  const std::vector<pb::BenchKey> both{key("openblas:Cooperlake", "f64"), key("openblas:Cooperlake", "f32")};
  EXPECT_EQ(pb::ceiling_precision(step, "openblas:Cooperlake", both), "");
}

// Rule: processes in turns on a warm step get OpenBLAS's short worker spin
// (OPENBLAS_THREAD_TIMEOUT=20), so a turn does not wait ~0.1 s for workers to
// sleep; a cold step, a launch that sets it and a caller who set it keep theirs.
TEST(BenchTrials, AWarmStepInTurnsShortensOpenBlasWorkerSpinUnlessSetAlready) {
  auto timeouts = [](const popper::Launch& l) {
    std::vector<std::string> v;
    for (const auto& [k, val] : l.env_set)
      if (k == pb::kThreadTimeoutVar) v.push_back(val);
    return v;
  };
  popper::Launch warm{{"bench_gemm"}, {{"OPENBLAS_NUM_THREADS", "2"}}, {}, {0, 1}};
  pb::shorten_worker_spin(warm, pb::CacheMode::Warm, nullptr);
  EXPECT_EQ(timeouts(warm), std::vector<std::string>{pb::kTurnThreadTimeout});
  pb::shorten_worker_spin(warm, pb::CacheMode::Warm, nullptr);  // once only
  EXPECT_EQ(timeouts(warm).size(), 1u);

  popper::Launch cold{{"bench_gemm"}, {}, {}, {0, 1}};
  pb::shorten_worker_spin(cold, pb::CacheMode::Cold, nullptr);
  EXPECT_TRUE(timeouts(cold).empty());

  popper::Launch own{{"ceiling_cblas_gemm_raw"}, {{pb::kThreadTimeoutVar, "26"}}, {}, {0, 1}};
  pb::shorten_worker_spin(own, pb::CacheMode::Warm, nullptr);
  EXPECT_EQ(timeouts(own), std::vector<std::string>{"26"});

  popper::Launch inherits{{"bench_gemm"}, {}, {}, {0, 1}};
  pb::shorten_worker_spin(inherits, pb::CacheMode::Warm, "28");
  EXPECT_TRUE(timeouts(inherits).empty());
}
