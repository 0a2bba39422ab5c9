// Statistics on data whose answers are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <cmath>

#include "bench/compare.hpp"
#include "bench/stats.hpp"
#include "popper/error.hpp"

namespace pb = popper::bench;

TEST(BenchStats, MedianOddEvenAndEmpty) {
  EXPECT_DOUBLE_EQ(pb::median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(pb::median({4, 1, 3, 2}), 2.5);
  EXPECT_THROW(pb::median({}), popper::InvalidArgument);
}

TEST(BenchStats, MeanStddevCv) {
  // {2,4,4,4,5,5,7,9}: mean 5, sum of squared deviations 32, sample sd sqrt(32/7).
  const std::vector<double> v{2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(pb::mean(v), 5);
  EXPECT_NEAR(pb::stddev(v), std::sqrt(32.0 / 7.0), 1e-12);
  EXPECT_NEAR(pb::coefficient_of_variation(v), std::sqrt(32.0 / 7.0) / 5, 1e-12);
  EXPECT_EQ(pb::stddev({1.5}), 0);
}

TEST(BenchStats, MedianAbsoluteDeviation) {
  // median 2; |x-2| = 1,1,0,0,2,4,7 -> sorted 0,0,1,1,2,4,7 -> 1.
  EXPECT_DOUBLE_EQ(pb::median_abs_deviation({1, 1, 2, 2, 4, 6, 9}), 1);
}

TEST(BenchStats, MannWhitneyExactExtremes) {
  // Every x above every y: U = 9, and only 1 of C(6,3) = 20 orderings reaches it.
  const auto hi = pb::mann_whitney_greater({4, 5, 6}, {1, 2, 3});
  EXPECT_TRUE(hi.exact);
  EXPECT_DOUBLE_EQ(hi.u, 9);
  EXPECT_NEAR(hi.p_value, 1.0 / 20, 1e-12);
  const auto lo = pb::mann_whitney_greater({1, 2, 3}, {4, 5, 6});
  EXPECT_DOUBLE_EQ(lo.u, 0);
  EXPECT_NEAR(lo.p_value, 1.0, 1e-12);
}

TEST(BenchStats, MannWhitneyExactInterleaved) {
  // x = {1,3,5}, y = {2,4,6}: pairs with x > y are (3,2) (5,2) (5,4): U = 3.
  // Null counts for m = n = 3, U = 0..9: 1 1 2 3 3 3 3 2 1 1 (sum 20); P(U >= 3) = 16/20.
  const auto r = pb::mann_whitney_greater({1, 3, 5}, {2, 4, 6});
  EXPECT_DOUBLE_EQ(r.u, 3);
  EXPECT_NEAR(r.p_value, 16.0 / 20, 1e-12);
}

TEST(BenchStats, MannWhitneyFiveVersusFive) {
  // The smallest exact p with 5 repetitions each: 1 / C(10,5) = 1/252.
  const auto r = pb::mann_whitney_greater({11, 12, 13, 14, 15}, {1, 2, 3, 4, 5});
  EXPECT_NEAR(r.p_value, 1.0 / 252, 1e-12);
}

TEST(BenchStats, MannWhitneyTiesUseNormalApproximation) {
  // All values equal: U = mean = 2 and the tie-corrected variance is 0 -> p = 1.
  const auto same = pb::mann_whitney_greater({1, 1}, {1, 1});
  EXPECT_FALSE(same.exact);
  EXPECT_DOUBLE_EQ(same.u, 2);
  EXPECT_DOUBLE_EQ(same.p_value, 1);
  // 25 vs 25 fully separated (beyond the exact table): U = 625, mean 312.5,
  // var = 625/12 * 51 = 2656.25, z = (625 - 312.5 - 0.5)/51.54 = 6.05 -> p ~ 7e-10.
  std::vector<double> x, y;
  for (int i = 0; i < 25; ++i) {
    x.push_back(100 + i);
    y.push_back(i);
  }
  const auto sep = pb::mann_whitney_greater(x, y);
  EXPECT_FALSE(sep.exact);
  EXPECT_NEAR(sep.p_value, 0.5 * std::erfc(312.0 / std::sqrt(2656.25) / std::sqrt(2.0)), 1e-15);
  EXPECT_LT(sep.p_value, 1e-8);
}

TEST(BenchCompareBudget, AnotherTrialOnlyIfItFits) {
  // Two trials are always run: one can never reach a verdict.
  EXPECT_TRUE(pb::trial_fits_budget(5000, 0, 600));
  EXPECT_TRUE(pb::trial_fits_budget(5000, 1, 600));
  // Two trials in 400 s: a third ends near 600 s (fits); in 401 s it would not.
  EXPECT_TRUE(pb::trial_fits_budget(400, 2, 600));
  EXPECT_FALSE(pb::trial_fits_budget(401, 2, 600));
  // Three in 450 s: a fourth ends near 600 s.
  EXPECT_TRUE(pb::trial_fits_budget(450, 3, 600));
  EXPECT_FALSE(pb::trial_fits_budget(451, 3, 600));
  // No budget: never stops.
  EXPECT_TRUE(pb::trial_fits_budget(1e9, 10, 0));
}
