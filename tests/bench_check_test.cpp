// Regression classification: boundaries, significance, MISSING, re-run,
// missing baseline, and the different-fingerprint (normalized) mode.
#include <gtest/gtest.h>

#include <cmath>

#include "popper/bench/check.hpp"

namespace pb = popper::bench;

namespace {

pb::BenchRow row(const std::string& tier, const std::string& backend, std::vector<double> samples,
                 const std::string& unit = pb::kUnitSeconds, const std::string& shape = "small_64") {
  pb::BenchRow r;
  r.key = {"gemm", tier, backend, shape, "f32", 1, "warm"};
  r.unit = unit;
  r.samples = std::move(samples);
  r.work_per_iter = 1e6;
  r.verdict = "verified";
  return r;
}

pb::BenchTable table(const std::string& fp, std::vector<pb::BenchRow> rows) {
  pb::BenchTable t;
  t.set_meta("fingerprint", fp);
  t.rows = std::move(rows);
  return t;
}

// One instruction-count row per table: deterministic, so the ratio alone decides.
pb::Change classify_counts(double base, double cur) {
  const auto b = table("m", {row("hand", "cpu", {base}, pb::kUnitInstructions)});
  const auto c = table("m", {row("hand", "cpu", {cur}, pb::kUnitInstructions)});
  const auto rep = pb::check_tables(b, c);
  EXPECT_EQ(rep.rows.size(), 1u);
  return rep.rows.at(0).change;
}

std::vector<double> spread(double center, int n = 5) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(center * (1 + 0.002 * (i - n / 2)));
  return v;
}

}  // namespace

TEST(BenchCheck, RatioBoundaries) {
  EXPECT_EQ(classify_counts(1000, 1049), pb::Change::Unchanged);    // 4.9% slower
  EXPECT_EQ(classify_counts(1000, 1051), pb::Change::Warning);      // 5.1%
  EXPECT_EQ(classify_counts(1000, 1099), pb::Change::Warning);      // 9.9%
  EXPECT_EQ(classify_counts(1000, 1101), pb::Change::Regression);   // 10.1%
  EXPECT_EQ(classify_counts(1000, 951), pb::Change::Unchanged);     // 4.9% faster
  EXPECT_EQ(classify_counts(1000, 949), pb::Change::Improvement);   // 5.1% faster
}

TEST(BenchCheck, ClassifyRatioNeedsSignificanceForRegression) {
  EXPECT_EQ(pb::classify_ratio(1.101, true), pb::Change::Regression);
  EXPECT_EQ(pb::classify_ratio(1.101, false), pb::Change::Warning);
  EXPECT_EQ(pb::classify_ratio(1.5, false), pb::Change::Warning);
}

TEST(BenchCheck, TimedRegressionNeedsSeparatedSamples) {
  const auto base = table("m", {row("hand", "cpu", spread(1.0))});
  // 20% slower with tight spread: every current sample beats 1.1 x every baseline one -> p = 1/252.
  const auto slow = pb::check_tables(base, table("m", {row("hand", "cpu", spread(1.2))}));
  EXPECT_EQ(slow.rows[0].change, pb::Change::Regression);
  EXPECT_NEAR(slow.rows[0].p_value, 1.0 / 252, 1e-12);
  EXPECT_EQ(slow.exit_code(), 1);
  // Median 15% slower but the samples straddle 1.1 x baseline: not significant -> WARNING.
  const auto noisy = pb::check_tables(base, table("m", {row("hand", "cpu", {0.9, 1.0, 1.15, 1.3, 1.4})}));
  EXPECT_NEAR(noisy.rows[0].ratio, 1.15, 1e-12);
  EXPECT_EQ(noisy.rows[0].change, pb::Change::Warning);
  EXPECT_EQ(noisy.exit_code(), 0);
}

TEST(BenchCheck, MissingRowFailsTheCheck) {
  const auto base = table("m", {row("hand", "cpu", spread(1.0)), row("wrapped", "openblas:Zen", spread(1.0))});
  const auto cur = table("m", {row("hand", "cpu", spread(1.0))});
  const auto rep = pb::check_tables(base, cur);
  EXPECT_EQ(rep.count(pb::Change::Missing), 1);
  EXPECT_EQ(rep.count(pb::Change::Unchanged), 1);
  EXPECT_EQ(rep.exit_code(), 1);
  // A row present but without samples (e.g. incorrect) is missing too.
  auto empty = row("wrapped", "openblas:Zen", {});
  empty.verdict = "incorrect: max err";
  const auto rep2 = pb::check_tables(base, table("m", {row("hand", "cpu", spread(1.0)), empty}));
  EXPECT_EQ(rep2.count(pb::Change::Missing), 1);
}

TEST(BenchCheck, RerunConfirmsOrClears) {
  const auto base = table("m", {row("hand", "cpu", spread(1.0))});
  const auto cur = table("m", {row("hand", "cpu", spread(1.3))});
  int calls = 0;
  const auto cleared = pb::check_tables(base, cur, {}, [&](const pb::BenchRow& r) {
    ++calls;
    auto again = r;
    again.samples = spread(1.01);
    return std::optional<pb::BenchRow>(again);
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(cleared.rows[0].change, pb::Change::Unchanged);
  EXPECT_NE(cleared.rows[0].note.find("not confirmed"), std::string::npos);
  const auto confirmed = pb::check_tables(base, cur, {}, [&](const pb::BenchRow& r) { return std::optional<pb::BenchRow>(r); });
  EXPECT_EQ(confirmed.rows[0].change, pb::Change::Regression);
  EXPECT_NE(confirmed.rows[0].note.find("confirmed on re-run"), std::string::npos);
}

TEST(BenchCheck, NoBaselineIsAnErrorThatSaysHowToCreateOne) {
  try {
    pb::read_baseline("/nonexistent/baselines/x/gemm.csv");
    FAIL() << "a missing baseline must be an error";
  } catch (const pb::NoBaseline& e) {
    EXPECT_NE(std::string(e.what()).find("popper bench baseline save"), std::string::npos) << e.what();
  }
}

TEST(BenchCheck, DifferentFingerprintComparesOnlyNormalizedRatios) {
  // Machine B is twice as fast in absolute terms, but hand/ceiling is the same: UNCHANGED.
  const auto base = table("machine-a", {row("ceiling", "openblas:Haswell", spread(1.0)), row("hand", "cpu", spread(2.0))});
  const auto same_ratio = table("machine-b", {row("ceiling", "openblas:Zen", spread(0.5)), row("hand", "cpu", spread(1.0))});
  const auto rep = pb::check_tables(base, same_ratio);
  EXPECT_EQ(rep.mode, pb::CheckMode::Normalized);
  ASSERT_EQ(rep.rows.size(), 1u);  // the ceiling is the normalizer, not a compared row
  EXPECT_EQ(rep.rows[0].change, pb::Change::Unchanged);
  EXPECT_NEAR(rep.rows[0].ratio, 1.0, 1e-9);
  // Absolutely faster (1.2 < 2.0) yet 20% worse relative to its ceiling: REGRESSION.
  const auto worse = table("machine-b", {row("ceiling", "openblas:Zen", spread(0.5)), row("hand", "cpu", spread(1.2))});
  const auto rep2 = pb::check_tables(base, worse);
  EXPECT_EQ(rep2.rows[0].change, pb::Change::Regression);
  EXPECT_NEAR(rep2.rows[0].ratio, 1.2, 1e-9);
  // Same fingerprint: absolute mode.
  EXPECT_EQ(pb::check_tables(base, base).mode, pb::CheckMode::Absolute);
}
