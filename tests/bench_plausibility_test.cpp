// The plausibility rule of vendor rows (bench/plausibility.hpp) on the
// figures of a broken vendor run (q4k, llama_attn_4096x4096, a 2-core Zen 4:
// ggml at 1 thread 80-85 GFLOP/s, at 2 threads 4.72-4.77 GFLOP/s with cv
// 41-69%, so hand ÷ ceiling read 23.560× and the wrapped tier's FFI overhead
// 0.040×), and what every ratio does with a row it marks invalid.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "bench/claims.hpp"
#include "bench/csv.hpp"
#include "bench/plausibility.hpp"
#include "bench/report.hpp"
#include "bench/stats.hpp"

namespace pb = popper::bench;

namespace {

constexpr double kWork = 2.0 * 4096 * 4096;  // flop per iteration of a 4096x4096 GEMV
constexpr const char* kShape = "llama_attn_4096x4096";

// A row whose samples are the given throughputs (GFLOP/s), one trial each.
pb::BenchRow row_at(const std::string& tier, const std::string& backend, int threads,
                    const std::vector<double>& gflops) {
  pb::BenchRow r;
  r.key = {"gemv", pb::tier_from(tier, "test"), backend, kShape, "q4k", threads, "warm"};
  r.work_per_iter = kWork;
  r.verdict = pb::Verdict::parse("verified");
  for (std::size_t i = 0; i < gflops.size(); ++i) {
    r.samples.push_back(kWork / (gflops[i] * 1e9));
    r.trials.push_back(static_cast<int>(i));
  }
  return r;
}

// Two samples m(1 - a), m(1 + a): median m, cv = a·√2 (stddev over n - 1).
pb::BenchRow with_cv(const std::string& backend, int threads, double seconds, double cv) {
  pb::BenchRow r;
  r.key = {"gemv", pb::Tier::Ceiling, backend, kShape, "q4k", threads, "warm"};
  r.work_per_iter = kWork;
  r.verdict = pb::Verdict::parse("verified");
  const double a = cv / std::sqrt(2.0);
  r.samples = {seconds * (1 - a), seconds * (1 + a)};
  r.trials = {0, 1};
  return r;
}

double gflops(const pb::BenchRow& r) { return r.throughput() * 1e-9; }
double cv_of(const pb::BenchRow& r) { return pb::coefficient_of_variation(r.samples); }

// The broken run's table: two ggml configurations, each 80-85 GFLOP/s at one
// thread and about 4.7 GFLOP/s at two with cv 41-69%; hand and wrapped at two
// threads as fast as its ratios say (23.560× and FFI 0.040×).
pb::BenchTable broken_run_table() {
  pb::BenchTable t;
  t.rows = {
      row_at("ceiling", "ggml-cpu:avx2", 1, {80, 83, 85, 82, 81, 84}),
      row_at("ceiling", "ggml-cpu:avx2", 2, {2.2, 3.1, 4.6, 4.84, 7.9, 12.5}),
      row_at("ceiling", "ggml-cpu:zen4", 1, {81, 84, 80, 85, 83, 82}),
      row_at("ceiling", "ggml-cpu:zen4", 2, {2.0, 2.6, 4.7, 4.84, 9.8, 12.0}),
  };
  const double best = std::max(gflops(t.rows[1]), gflops(t.rows[3]));
  t.rows.push_back(row_at("hand", "cpu:avx512", 2, std::vector<double>(6, 23.56 * best)));
  t.rows.push_back(row_at("wrapped", "ggml-cpu:avx2", 2, std::vector<double>(6, gflops(t.rows[1]) / 0.040)));
  return t;
}

}  // namespace

// The fixture is the broken run's figures, or the tests below prove nothing about it.
TEST(BenchPlausibility, FixtureHoldsTheBrokenRunFigures) {
  const auto t = broken_run_table();
  for (int i : {0, 2}) {
    EXPECT_GE(gflops(t.rows[i]), 80);
    EXPECT_LE(gflops(t.rows[i]), 85);
  }
  for (int i : {1, 3}) {
    EXPECT_NEAR(gflops(t.rows[i]), 4.745, 0.03) << t.rows[i].key.to_string();
    EXPECT_GE(cv_of(t.rows[i]), 0.41) << t.rows[i].key.to_string();
    EXPECT_LE(cv_of(t.rows[i]), 0.69) << t.rows[i].key.to_string();
  }
  // Unmarked, the report takes its ratios from the broken rows: 23.560× and 0.040×.
  const auto f = pb::table_figures(t);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_NEAR(f[1].shapes[0].hand_vs_ceiling, 23.56, 0.01);
  EXPECT_NEAR(f[1].shapes[0].ffi, 0.040, 0.001);
}

TEST(BenchPlausibility, FiresOnTheIssueFigures) {
  const auto t = broken_run_table();
  const auto bad = pb::implausible_vendor_rows(t);
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_EQ(bad[0].key, t.rows[1].key);
  EXPECT_EQ(bad[1].key, t.rows[3].key);
  EXPECT_NE(bad[0].reason.find("2 threads at 0.0"), std::string::npos) << bad[0].reason;
  EXPECT_NE(bad[0].reason.find("1-thread throughput"), std::string::npos) << bad[0].reason;
  for (const auto& b : bad) EXPECT_EQ(b.reason.find_first_of(",|"), std::string::npos) << b.reason;
}

TEST(BenchPlausibility, QuietOnOrdinaryRows) {
  // Two threads at 1.8× one thread, cv 2-5%: a healthy vendor.
  pb::BenchTable t;
  t.rows = {row_at("ceiling", "openblas:Zen", 1, {80, 83, 85, 82}),
            row_at("ceiling", "openblas:Zen", 2, {144, 150, 155, 140}),
            row_at("ceiling", "blis:zen3", 1, {78, 80, 79, 81}),
            row_at("ceiling", "blis:zen3", 2, {140, 142, 150, 138})};
  for (const auto& r : t.rows) {
    EXPECT_GE(cv_of(r), 0.0);
    EXPECT_LE(cv_of(r), 0.05) << r.key.to_string();
  }
  EXPECT_NEAR(gflops(t.rows[1]) / gflops(t.rows[0]), 1.8, 0.05);
  EXPECT_TRUE(pb::implausible_vendor_rows(t).empty());
  pb::mark_invalid_vendor_rows(t);
  for (const auto& r : t.rows) EXPECT_TRUE(r.valid()) << r.key.to_string();
  EXPECT_FALSE(t.meta("invalid_vendor_rows"));
}

TEST(BenchPlausibility, ScalingBoundIsTheRulesFraction) {
  const pb::PlausibilityRule rule;
  pb::BenchTable t;
  t.rows = {with_cv("openblas:Zen", 1, 1.0, 0.02), with_cv("openblas:Zen", 2, 1.0 / (rule.min_scaling * 1.01), 0.02)};
  EXPECT_TRUE(pb::implausible_vendor_rows(t, rule).empty()) << "just above the fraction";
  t.rows[1] = with_cv("openblas:Zen", 2, 1.0 / (rule.min_scaling * 0.99), 0.02);
  EXPECT_EQ(pb::implausible_vendor_rows(t, rule).size(), 1u) << "just below it";
  // Another configuration's one-thread row is not this one's baseline.
  t.rows[0].key.backend = "blis:zen3";
  EXPECT_TRUE(pb::implausible_vendor_rows(t, rule).empty());
}

TEST(BenchPlausibility, ScatterNeedsTheFloorAndTheNeighbours) {
  const pb::PlausibilityRule rule;
  const double usual = 0.03;  // the neighbours' cv
  pb::BenchTable t;
  t.rows = {with_cv("openblas:Zen", 2, 1.0, usual), with_cv("blis:zen3", 2, 1.0, usual),
            with_cv("blis:generic", 2, 1.0, usual), with_cv("ggml-cpu:avx2", 2, 1.0, rule.cv_factor * usual * 1.05)};
  ASSERT_LT(rule.cv_factor * usual * 1.05, rule.cv_floor);
  EXPECT_TRUE(pb::implausible_vendor_rows(t, rule).empty()) << "above the neighbours but under the floor";
  t.rows[3] = with_cv("ggml-cpu:avx2", 2, 1.0, rule.cv_floor * 1.2);
  const auto bad = pb::implausible_vendor_rows(t, rule);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].key.backend, "ggml-cpu:avx2");
  EXPECT_NE(bad[0].reason.find("cv 30.0%"), std::string::npos) << bad[0].reason;
  // Neighbours as noisy as it (cv × factor above it): scatter of the machine, not of the row.
  for (int i = 0; i < 3; ++i)
    t.rows[i] = with_cv(t.rows[i].key.backend, 2, 1.0, rule.cv_floor * 1.2 / rule.cv_factor * 1.1);
  EXPECT_TRUE(pb::implausible_vendor_rows(t, rule).empty());
}

// Rule: a row's scatter is taken over the trials its neighbours ran too. A
// ceiling row measured again for a claim (mj90b: openblas:Cooperlake wide_640
// f32 at 2 threads, hundreds of trials, cv 91.9% from a few outliers, beside
// neighbours of 8 trials at 22.3%) is not implausible for the host's rare
// outliers its neighbours' few trials never met; scattered in those same
// trials, it still is.
TEST(BenchPlausibility, ScatterIsTakenOverTheTrialsTheNeighboursRanToo) {
  const pb::PlausibilityRule rule;
  pb::BenchTable t;
  t.rows = {with_cv("openblas:Cooperlake", 2, 1.0, 0.03), with_cv("openblas:SkylakeX", 2, 1.0, 0.03),
            with_cv("blis:skx", 2, 1.0, 0.03)};
  auto& again = t.rows[0];
  for (int i = 2; i < 300; ++i) {
    again.samples.push_back(i % 100 == 0 ? 12.0 : 1.0);  // three outliers at 12x
    again.trials.push_back(i);
  }
  ASSERT_GT(cv_of(again), rule.cv_floor) << "the premise: over all its trials, its cv is over the floor";
  EXPECT_TRUE(pb::implausible_vendor_rows(t, rule).empty());
  again.samples[1] = 3.0;  // in a trial the neighbours ran: scattered where they were not
  const auto bad = pb::implausible_vendor_rows(t, rule);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].key.backend, "openblas:Cooperlake");
}

// Rule: only vendor rows are judged implausible: a hand row, or a wrapped row
// of popper's own code, that scales as badly is this repository's result,
// reported as measured.
TEST(BenchPlausibility, OnlyVendorRowsAreJudged) {
  // Popper's own code slower with more threads is a finding, never "invalid".
  pb::BenchTable t;
  t.rows = {row_at("hand", "cpu:avx512", 1, {80, 83, 85, 82, 81, 84}),
            row_at("hand", "cpu:avx512", 2, {2.2, 3.1, 4.6, 4.84, 7.9, 12.5})};
  EXPECT_TRUE(pb::implausible_vendor_rows(t).empty());
  for (auto& r : t.rows) r.key.tier = pb::Tier::Ceiling;
  EXPECT_EQ(pb::implausible_vendor_rows(t).size(), 1u)
      << "the premise: as ceiling rows, the 2-thread one is implausible";
  // A wrapped tier is popper's code (fused, nsa, train) unless the family names
  // the vendor library it calls (q4k, decode: llama.cpp's CPU backend).
  for (auto& r : t.rows) r.key.tier = pb::Tier::Wrapped, r.key.backend = "ggml-cpu:zen4";
  EXPECT_TRUE(pb::implausible_vendor_rows(t).empty());
  t.set_meta("wrapped_vendor", "ggml-cpu");
  const auto bad = pb::implausible_vendor_rows(t);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].key.threads, 2);
  // Scatter judges ceilings only: a wrapped row as scattered as the broken run's
  // beside quiet ceilings of its shape is no evidence against the library.
  pb::BenchTable scattered;
  scattered.set_meta("wrapped_vendor", "ggml-cpu");
  scattered.rows = {with_cv("ggml-cpu:zen4", 2, 1.0, 0.01), with_cv("openblas:Zen", 2, 1.0, 0.01),
                    with_cv("ggml-cpu:avx2", 2, 1.0, 0.60)};
  ASSERT_EQ(pb::implausible_vendor_rows(scattered).size(), 1u) << "the premise: as a ceiling, the third is implausible";
  scattered.rows[2].key.tier = pb::Tier::Wrapped;
  EXPECT_TRUE(pb::implausible_vendor_rows(scattered).empty());
  // Scaling compares a row with its own tier: a fast 1-thread ceiling of the
  // same backend does not condemn a wrapped row that has no 1-thread row.
  pb::BenchTable mixed;
  mixed.set_meta("wrapped_vendor", "ggml-cpu");
  mixed.rows = {row_at("ceiling", "ggml-cpu:zen4", 1, {80, 83, 85, 82}),
                row_at("wrapped", "ggml-cpu:zen4", 2, {30, 31, 30, 29})};
  EXPECT_TRUE(pb::implausible_vendor_rows(mixed).empty());
}

// Rule: marking judges the table afresh: a row marked before (say before it was
// re-measured) and plausible now is valid again, and leaves the metadata.
TEST(BenchPlausibility, MarkingClearsAnOldMark) {
  pb::BenchTable t;
  t.rows = {row_at("ceiling", "openblas:Zen", 1, {80, 83, 85, 82}),
            row_at("ceiling", "openblas:Zen", 2, {144, 150, 155, 140})};
  t.rows[1].invalid_reason = "2 threads at 0.0570× its 1-thread throughput (below 0.5×)";
  t.set_meta_list("invalid_vendor_rows", {t.rows[1].key.to_string() + ": " + t.rows[1].invalid_reason});
  pb::mark_invalid_vendor_rows(t);
  EXPECT_TRUE(t.rows[1].valid()) << t.rows[1].invalid_reason;
  EXPECT_FALSE(t.meta("invalid_vendor_rows"));
}

TEST(BenchPlausibility, BestRowSkipsAnInvalidRow) {
  // The fastest ceiling by median scatters far beyond its neighbours: left out.
  pb::BenchTable t;
  t.rows = {with_cv("openblas:Zen", 2, 1.0, 0.03), with_cv("blis:zen3", 2, 1.1, 0.02),
            with_cv("blis:generic", 2, 1.2, 0.04), with_cv("ggml-cpu:avx2", 2, 0.5, 0.6)};
  const pb::BenchRow* best = pb::best_row(t, pb::Tier::Ceiling, kShape, "q4k", 2);
  ASSERT_NE(best, nullptr);
  EXPECT_EQ(best->key.backend, "ggml-cpu:avx2") << "unmarked";
  pb::mark_invalid_vendor_rows(t);
  EXPECT_FALSE(t.rows[3].valid());
  best = pb::best_row(t, pb::Tier::Ceiling, kShape, "q4k", 2);
  ASSERT_NE(best, nullptr);
  EXPECT_EQ(best->key.backend, "openblas:Zen");
  // The wrapped tier of the invalid configuration gets no FFI figure from it, nor from another configuration.
  EXPECT_EQ(pb::matching_row(t, pb::Tier::Ceiling, kShape, "q4k", 2, "ggml-cpu:avx2"), nullptr);
}

TEST(BenchPlausibility, NoRatioFromAnInvalidRow) {
  auto t = broken_run_table();
  pb::mark_invalid_vendor_rows(t);
  EXPECT_EQ(pb::best_row(t, pb::Tier::Ceiling, kShape, "q4k", 2), nullptr);
  EXPECT_EQ(pb::best_row(t, pb::Tier::Ceiling, kShape, "q4k", 1), &t.rows[0]);
  const auto f = pb::table_figures(t);
  ASSERT_EQ(f.size(), 2u);
  const auto& two = f[1].shapes[0];
  EXPECT_EQ(two.ceiling, nullptr);
  EXPECT_TRUE(std::isnan(two.hand_vs_ceiling));
  EXPECT_TRUE(std::isnan(two.ffi));
  EXPECT_TRUE(std::isnan(two.wrapped_vs_ceiling));
  EXPECT_EQ(two.invalid_ceilings.size(), 2u);
  // The Markdown shows the rows as invalid with the reason, and no 23.560× or 0.040×.
  const auto md = pb::render_markdown(t, "gemv");
  EXPECT_NE(md.find("invalid: 2 threads at"), std::string::npos) << md;
  EXPECT_EQ(md.find("23.5"), std::string::npos) << md;
  EXPECT_EQ(md.find("0.040×"), std::string::npos) << md;
}

TEST(BenchPlausibility, NoClaimFromAnInvalidRow) {
  popper::BenchmarkClaim claim;
  claim.id = "BENCH-GEMV-Q4K";
  claim.family = "gemv";
  claim.metric = "throughput_ratio";
  claim.numerator = "hand";
  claim.denominator = "ceiling";
  claim.op = ">=";
  claim.threshold = 1.0;
  claim.threads = 2;
  popper::Contract c;
  c.stem = "gemv-v1";
  c.benchmarks.push_back(claim);
  auto t = broken_run_table();
  auto res = pb::evaluate_claims({c}, "gemv", t, nullptr, {}, {kShape});
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::Met) << "unmarked, judged from the broken ceiling: " << res[0].detail;
  pb::mark_invalid_vendor_rows(t);
  res = pb::evaluate_claims({c}, "gemv", t, nullptr, {}, {kShape});
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::NotMeasured) << res[0].detail;
  EXPECT_EQ(res[0].detail.find("23.5"), std::string::npos) << res[0].detail;
}

TEST(BenchPlausibility, InvalidSurvivesTheCsv) {
  auto t = broken_run_table();
  pb::mark_invalid_vendor_rows(t);
  const auto text = pb::format_bench_csv(t);
  EXPECT_NE(text.find("# invalid_vendor_rows: gemv/ceiling/ggml-cpu:avx2/" + std::string(kShape) +
                      "/q4k/threads:2/warm: 2 threads at"),
            std::string::npos)
      << text;
  const auto back = pb::parse_bench_csv(text, "t.csv");
  ASSERT_EQ(back.rows.size(), t.rows.size());
  for (std::size_t i = 0; i < t.rows.size(); ++i)
    EXPECT_EQ(back.rows[i].invalid_reason, t.rows[i].invalid_reason) << t.rows[i].key.to_string();
  // Recomputed from the rows, not read back: a file written unmarked is marked on load.
  auto unmarked = broken_run_table();
  const auto again = pb::parse_bench_csv(pb::format_bench_csv(unmarked), "old.csv");
  EXPECT_FALSE(again.rows[1].valid());
  EXPECT_FALSE(again.rows[3].valid());
  EXPECT_TRUE(again.rows[0].valid());
  // Whether wrapped rows are vendor rows travels with the table.
  auto wrapped = broken_run_table();
  wrapped.set_meta("wrapped_vendor", "ggml-cpu");
  // A 1-thread wrapped row at 300 GFLOP/s: the 2-thread one (118) at 0.39× it.
  wrapped.rows.push_back(row_at("wrapped", "ggml-cpu:avx2", 1, {300, 310, 305, 295}));
  const auto loaded = pb::parse_bench_csv(pb::format_bench_csv(wrapped), "wrapped.csv");
  EXPECT_FALSE(loaded.rows[5].valid()) << loaded.rows[5].key.to_string();
  EXPECT_TRUE(loaded.rows[6].valid());
}

// An implausible vendor row is timed again with every row of its shape,
// precision, threads and cache mode, hand and wrapped included, and with no
// other: the gemm GEMV run where OpenBLAS alone was timed again (trials 4-9)
// while the hand row kept its disturbed trials 0-3.
TEST(BenchPlausibility, RemeasuringTakesTheWholeGroup) {
  auto t = broken_run_table();
  t.rows.push_back(row_at("hand", "cpu:avx512", 1, {90, 91, 92}));  // another thread count
  auto cold = row_at("hand", "cpu:avx512", 2, {60, 61, 62});        // another cache mode
  cold.key.cache_mode = "cold";
  t.rows.push_back(cold);
  auto other_shape = row_at("ceiling", "ggml-cpu:zen4", 2, {100, 101});
  other_shape.key.shape = "llama_ffn_11008x4096";
  t.rows.push_back(other_shape);
  auto untimed = row_at("ceiling", "ggml-cpu:avx512", 2, {});  // no samples: nothing to time again
  t.rows.push_back(untimed);

  const auto suspects = pb::implausible_vendor_rows(t);
  ASSERT_EQ(suspects.size(), 2u);  // the two 2-thread ggml rows
  const auto keys = pb::rows_to_remeasure(t, suspects);
  // The two ggml rows, the hand row and the wrapped row at 2 threads, warm, this shape: rows 1, 3, 4, 5.
  ASSERT_EQ(keys.size(), 4u);
  EXPECT_EQ(keys[0], t.rows[1].key);
  EXPECT_EQ(keys[1], t.rows[3].key);
  EXPECT_EQ(keys[2], t.rows[4].key);
  EXPECT_EQ(keys[3], t.rows[5].key);
  EXPECT_TRUE(pb::rows_to_remeasure(t, {}).empty());
}
