// The claims evaluator's verdict rules (bench/claims.hpp) that no other test
// pins; the other claims tests are in
// bench_ingest_test.cpp and bench_plausibility_test.cpp. Every test names the
// rule it pins.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "bench/claims.hpp"
#include "bench/csv.hpp"
#include "bench/pace.hpp"
#include "bench/interval.hpp"

namespace pb = popper::bench;

namespace {

// Six trials (the fewest a ratio is judged on: sign_test_trials) of two
// samples each within +-spread of `seconds` (by default +-0.05%: intervals
// far narrower than any threshold below).
pb::BenchRow timed(const std::string& tier, const std::string& backend, double seconds,
                   const std::string& precision = "f32", double work = 1e9, double spread = 0.0005) {
  pb::BenchRow r;
  r.key = {"gemm", pb::tier_from(tier, "test"), backend, "a", precision, 1, "warm"};
  const double level[6] = {1.0, 1.0 + spread, 1.0 - spread, 1.0, 1.0 + spread, 1.0 - spread};
  for (int t = 0; t < 6; ++t)
    for (int i = 0; i < 2; ++i) {
      r.samples.push_back(seconds * level[t]);
      r.trials.push_back(t);
    }
  r.work_per_iter = work;
  r.verdict = pb::Verdict::parse("verified");
  return r;
}

popper::BenchmarkClaim claim(const std::string& metric, const std::string& numerator, const std::string& denominator,
                             const std::string& op, double threshold) {
  popper::BenchmarkClaim c;
  c.id = "BENCH-GEMM-009";
  c.family = "gemm";
  c.metric = metric;
  c.numerator = numerator;
  c.denominator = denominator;
  c.op = op;
  c.threshold = threshold;
  return c;
}

pb::ClaimResult judge(const popper::BenchmarkClaim& c, const std::vector<pb::BenchRow>& rows,
                      const pb::PeakResult* peak = nullptr, const std::map<std::string, std::string>& peak_kind = {},
                      double alpha = 0.05) {
  popper::Contract k;
  k.stem = "gemm-v1";
  k.benchmarks.push_back(c);
  pb::BenchTable t;
  t.rows = rows;
  const auto res = pb::evaluate_claims({k}, "gemm", t, peak, peak_kind, {"a"}, alpha);
  EXPECT_EQ(res.size(), 1u);
  return res.empty() ? pb::ClaimResult{} : res[0];
}

}  // namespace

// Rule: a tier's row is its best verified row, the one of lowest median (here
// the second of two hand backends).
TEST(BenchClaims, ATiersRowIsItsFastestVerifiedRow) {
  const auto c = claim("time_ratio", "hand", "ceiling", "<", 1.05);
  const auto res = judge(
      c, {timed("hand", "cpu:avx2", 2.0), timed("hand", "cpu:avx512", 1.0), timed("ceiling", "openblas:Zen", 1.0)});
  EXPECT_EQ(res.verdict, pb::ClaimVerdict::Met) << res.detail;
}

// Rule: a ratio to the best row of another tier is judged against each of
// its verified rows, and met only when met against every one: a row with too
// few trials to bound its median (here 3) keeps the group inconclusive,
// named, and measured again with the numerator, though another row's median
// is lower; a row it fails against is named in the verdict.
TEST(BenchClaims, ARatioToTheBestIsJudgedAgainstEachCandidateRow) {
  const auto c = claim("time_ratio", "hand", "ceiling", "<", 1.05);
  const pb::BenchRow hand = timed("hand", "cpu", 1.0), openblas = timed("ceiling", "openblas:Zen", 1.0);
  const pb::BenchRow few = pb::without_trials(timed("ceiling", "blis:zen3", 1.2), {3, 4, 5});
  const pb::BenchRow fewer = pb::without_trials(timed("ceiling", "blis:zen2", 1.3), {2, 3, 4, 5});
  const auto res = judge(c, {hand, openblas, few, fewer});
  EXPECT_EQ(res.verdict, pb::ClaimVerdict::Inconclusive) << res.detail;
  EXPECT_NE(res.detail.find("against blis:zen3 (judged on 3 trials"), std::string::npos) << res.detail;
  // The undecided rows are measured again with the numerator in the same trials,
  // until the least measured pair decides.
  ASSERT_EQ(res.inconclusive_groups.size(), 1u);
  EXPECT_EQ(res.inconclusive_groups[0].rows, (std::vector<pb::BenchKey>{hand.key, few.key, fewer.key}));
  EXPECT_EQ(res.inconclusive_groups[0].trials, 2);

  const pb::BenchRow faster = timed("ceiling", "blis:zen3", 0.8);
  const auto fails = judge(c, {hand, openblas, faster});
  EXPECT_EQ(fails.verdict, pb::ClaimVerdict::NotMet) << fails.detail;
  EXPECT_NE(fails.detail.find("1.25 [1.25, 1.25] against blis:zen3"), std::string::npos) << fails.detail;
  ASSERT_EQ(fails.failing_groups.size(), 1u);
  EXPECT_EQ(fails.failing_groups[0].rows, (std::vector<pb::BenchKey>{hand.key, faster.key}));
}

// Rule: a claim naming a precision is judged on that precision's rows only.
TEST(BenchClaims, AClaimNamingAPrecisionCoversOnlyIt) {
  auto c = claim("time_ratio", "hand", "ceiling", "<", 1.05);
  const std::vector<pb::BenchRow> rows = {
      timed("hand", "cpu", 1.0, "f32"), timed("ceiling", "openblas:Zen", 1.0, "f32"), timed("hand", "cpu", 2.0, "f64"),
      timed("ceiling", "openblas:Zen", 1.0, "f64")};
  ASSERT_EQ(judge(c, rows).verdict, pb::ClaimVerdict::NotMet);  // the premise: f64 fails it
  c.precision = "f32";
  const auto res = judge(c, rows);
  EXPECT_EQ(res.verdict, pb::ClaimVerdict::Met) << res.detail;
}

// Rule: denominator_precision names the denominator row's precision (a q4k
// GEMV against an f32 SGEMV), not the numerator's.
TEST(BenchClaims, DenominatorPrecisionPicksTheDenominatorRow) {
  auto c = claim("throughput_ratio", "hand", "ceiling", ">=", 1.5);
  c.denominator_precision = "f32";
  c.precision = "q4k";
  const auto res = judge(c, {timed("hand", "cpu", 1.0, "q4k"), timed("ceiling", "openblas:Zen", 2.0, "f32"),
                             timed("ceiling", "ggml-cpu:zen4", 0.5, "q4k")});
  EXPECT_EQ(res.verdict, pb::ClaimVerdict::Met) << res.detail;  // 2.0 / 1.0, not 0.5 / 1.0
}

// Rule: denominator_backend picks the denominator among the rows whose backend
// starts with it, even when another backend's row is faster.
TEST(BenchClaims, DenominatorBackendPicksTheDenominatorRow) {
  auto c = claim("time_ratio", "hand", "device", "<", 1.05);
  c.denominator_backend = "cuda";
  const auto res = judge(
      c, {timed("hand", "cpu", 1.0), timed("device", "vulkan:llvmpipe", 0.1), timed("device", "cuda:sm_90", 1.0)});
  EXPECT_EQ(res.verdict, pb::ClaimVerdict::Met) << res.detail;  // 1.0 / 1.0, not 1.0 / 0.1
}

// Rule: a throughput ratio is work per second over work per second: the tiers'
// work per iteration scales the time ratio.
TEST(BenchClaims, ThroughputRatioCountsEachTiersWork) {
  const auto c = claim("throughput_ratio", "hand", "ceiling", ">=", 1.5);
  const auto res = judge(c, {timed("hand", "cpu", 1.0, "f32", 2e9), timed("ceiling", "openblas:Zen", 1.0, "f32", 1e9)});
  EXPECT_EQ(res.verdict, pb::ClaimVerdict::Met) << res.detail;  // twice the work in the same time: 2.0
}

// Rule: a fraction of a bandwidth peak compares the row's bytes per second with
// it, not its work per second.
TEST(BenchClaims, PeakFractionOfABandwidthPeakCountsBytes) {
  pb::PeakResult peak;
  peak.cores = 2;
  peak.bandwidth_core = 10e9;  // bytes/s
  auto row = timed("hand", "cpu", 1.0, "f32", 1e9);
  row.bytes_per_iter = 8e9;  // 8e9 bytes/s: 0.8 of the peak (its 1e9 work/s would read 0.1)
  auto c = claim("peak_fraction", "hand", "", ">=", 0.5);
  const auto res = judge(c, {row}, &peak, {{"f32", "bandwidth"}});
  EXPECT_EQ(res.verdict, pb::ClaimVerdict::Met) << res.detail;
}

// Rule: no claim is judged against a bound the row beats: a peak fraction
// above 1 leaves the group not measured, saying why.
TEST(BenchClaims, APeakFractionAboveItsBoundIsNotJudged) {
  pb::PeakResult peak;
  peak.cores = 2;
  peak.bandwidth_core = 10e9;
  auto row = timed("hand", "cpu", 1.0, "f32", 1e9);
  row.bytes_per_iter = 11.1e9;  // 111% of the bandwidth
  const auto res = judge(claim("peak_fraction", "hand", "", ">=", 0.7), {row}, &peak, {{"f32", "bandwidth"}});
  EXPECT_EQ(res.verdict, pb::ClaimVerdict::NotMeasured) << res.detail;
  EXPECT_NE(res.detail.find("its bound is invalid: measured at 111.0% of it"), std::string::npos) << res.detail;
}

// Rule: a bandwidth claim is judged against the read of the row's own
// footprint, of its cache mode, where the suite probed one: a single core
// reads faster than its triad, so the triad would be no bound there.
TEST(BenchClaims, ABandwidthClaimIsJudgedAgainstItsFootprintsRead) {
  pb::PeakResult peak;
  peak.cores = 2;
  peak.bandwidth_core = 10e9;  // the triad
  auto row = timed("hand", "cpu", 1.0, "f32", 1e9);
  row.bytes_per_iter = 12e9;  // 120% of the triad
  row.key.cache_mode = "cold";
  row.read_bound = 16e9;  // its footprint read cold: 75%
  auto warm = row;        // a warm probe of the same footprint, partly from cache: not this claim's bound
  warm.key.cache_mode = "warm";
  warm.key.tier = pb::Tier::Wrapped;
  warm.read_bound = 40e9;
  popper::Contract k;
  k.stem = "gemm-v1";
  k.benchmarks.push_back(claim("peak_fraction", "hand", "", ">=", 0.7));
  k.benchmarks.back().cache = "cold";
  pb::BenchTable t;
  t.rows = {row, warm};
  t.set_footprint_reads();
  auto res = pb::evaluate_claims({k}, "gemm", t, &peak, {{"f32", "bandwidth"}}, {"a"});
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::Met) << res[0].detail;
  EXPECT_NE(res[0].detail.find("0.75"), std::string::npos) << res[0].detail;
  // Without the probe, the triad: a bound the row beats, so nothing is judged.
  t.rows = {row};
  t.rows[0].read_bound = 0;
  t.metadata.clear();
  t.set_footprint_reads();
  res = pb::evaluate_claims({k}, "gemm", t, &peak, {{"f32", "bandwidth"}}, {"a"});
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::NotMeasured) << res[0].detail;
}

// Rule: where the suite probed the read in every process of a row, a bandwidth
// claim pairs each process's time with its own read. Here the host placed the
// processes' CPUs alternately where memory reads at 40 and at 20 GB/s, and the
// kernel streams at 80% of either: judged against the fastest read, the
// slow-placed half pulls the median to 0.53, and a 0.7 bar is not met.
TEST(BenchClaims, ABandwidthClaimPairsEachProcessWithItsOwnRead) {
  pb::PeakResult peak;
  peak.cores = 2;
  peak.bandwidth_core = 10e9;
  auto row = timed("hand", "cpu", 1.0, "f32", 1e9);
  row.bytes_per_iter = 16e9;
  row.samples.clear(), row.trials.clear();
  row.key.threads = 2;
  for (int t = 0; t < 6; ++t) {
    const double read = t % 2 ? 20e9 : 40e9;  // two CPUs far apart (two CCDs' links) read faster
    row.read[t] = read;
    row.link[t] = t % 2 ? 5e-8 : 3e-7;
    row.read_bound = std::max(row.read_bound, read);
    for (int i = 0; i < 3; ++i) {
      row.samples.push_back(row.bytes_per_iter / (0.8 * read) * (1 + 0.001 * i));
      row.trials.push_back(t);
    }
  }
  popper::Contract k;
  k.stem = "gemm-v1";
  k.benchmarks.push_back(claim("peak_fraction", "hand", "", ">=", 0.7));
  pb::BenchTable t;
  t.rows = {row};
  t.set_footprint_reads();
  auto res = pb::evaluate_claims({k}, "gemm", t, &peak, {{"f32", "bandwidth"}}, {"a"});
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::Met) << res[0].detail;
  EXPECT_NE(res[0].detail.find("each process against its own read; CPUs far apart in 3 of 6"), std::string::npos)
      << res[0].detail;
  EXPECT_NE(res[0].detail.find("0.79"), std::string::npos) << res[0].detail;
  // The same kernel at half of its own read in every process fails the bar.
  for (auto& s : t.rows[0].samples) s *= 1.6;
  res = pb::evaluate_claims({k}, "gemm", t, &peak, {{"f32", "bandwidth"}}, {"a"});
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::NotMet) << res[0].detail;
  // Read back from its CSV, each process keeps its own read.
  for (auto& s : t.rows[0].samples) s /= 1.6;
  res = pb::evaluate_claims({k}, "gemm", t, &peak, {{"f32", "bandwidth"}}, {"a"});
  const auto back = pb::parse_bench_csv(pb::format_bench_csv(t), "back.csv");
  const auto res_back = pb::evaluate_claims({k}, "gemm", back, &peak, {{"f32", "bandwidth"}}, {"a"});
  EXPECT_EQ(res_back[0].verdict, pb::ClaimVerdict::Met) << res_back[0].detail;
  EXPECT_EQ(res_back[0].figures, res[0].figures);
  // A trial without its own read (a CSV of the older schema): the fastest
  // read bounds every trial again, and the slow half shows.
  t.rows[0].read.erase(5);
  res = pb::evaluate_claims({k}, "gemm", t, &peak, {{"f32", "bandwidth"}}, {"a"});
  EXPECT_EQ(res[0].detail.find("each process against its own read"), std::string::npos) << res[0].detail;
  EXPECT_NE(res[0].verdict, pb::ClaimVerdict::Met) << res[0].detail;
}

// Rule: one group not met makes the claim not_met, even when another group is
// inconclusive (the claim is false where it was shown false).
TEST(BenchClaims, NotMetOutranksInconclusive) {
  const auto c = claim("time_ratio", "hand", "ceiling", "<", 1.02);
  const auto res =
      judge(c, {timed("hand", "cpu", 1.10, "f32"), timed("ceiling", "openblas:Zen", 1.0, "f32"),
                timed("hand", "cpu", 1.02, "f64", 1e9, 0.03), timed("ceiling", "openblas:Zen", 1.0, "f64")});
  EXPECT_EQ(res.verdict, pb::ClaimVerdict::NotMet) << res.detail;
  EXPECT_NE(res.detail.find("inconclusive: a/f64"), std::string::npos) << res.detail;  // the premise: f64 straddles
}

// Rule: an inconclusive group makes the claim inconclusive even when another
// group is met and a third was not measured (partially_measured needs every
// measured group met).
TEST(BenchClaims, InconclusiveOutranksPartiallyMeasured) {
  const auto c = claim("time_ratio", "hand", "ceiling", "<", 1.02);
  const auto res = judge(c, {timed("hand", "cpu", 1.0, "f32"), timed("ceiling", "openblas:Zen", 1.0, "f32"),
                             timed("hand", "cpu", 1.02, "f64", 1e9, 0.03), timed("ceiling", "openblas:Zen", 1.0, "f64"),
                             timed("hand", "cpu", 1.0, "bf16")});  // bf16: no ceiling row, not measured
  EXPECT_EQ(res.verdict, pb::ClaimVerdict::Inconclusive) << res.detail;
  EXPECT_NE(res.detail.find("inconclusive: a/f64"), std::string::npos) << res.detail;
  EXPECT_NE(res.detail.find("not measured (or not verified): a/bf16"), std::string::npos) << res.detail;
}

// Rule of the detail: it opens with the worst group's figure; a list that
// starts with that group names it again by name alone, then counts its groups
// and names the others; the threshold reads as the contract writes it.
TEST(BenchClaims, TheDetailGivesTheWorstGroupsFigureOnceAndNamesTheOthers) {
  const auto c = claim("time_ratio", "hand", "ceiling", "<", 1.02);
  std::vector<pb::BenchRow> rows;
  for (const std::string prec : {"f32", "f64", "bf16"}) {
    rows.push_back(timed("hand", "cpu", prec == "f32" ? 1.025 : 1.015, prec, 1e9, 0.03));
    rows.push_back(timed("ceiling", "openblas:Zen", 1.0, prec));
  }
  const auto res = judge(c, rows);
  ASSERT_EQ(res.verdict, pb::ClaimVerdict::Inconclusive) << res.detail;
  EXPECT_EQ(res.detail.rfind("worst a/f32/threads:1: 1.02", 0), 0u) << res.detail;
  EXPECT_NE(res.detail.find("; inconclusive on 3 groups: a/f32/threads:1 (the worst) straddles < 1.02; also "),
            std::string::npos)
      << res.detail;
  EXPECT_EQ(res.detail.find("a/f32/threads:1:"), res.detail.rfind("a/f32/threads:1:")) << res.detail;  // once
  EXPECT_NE(res.detail.find("a/f64/threads:1"), std::string::npos) << res.detail;
  EXPECT_NE(res.detail.find("a/bf16/threads:1"), std::string::npos) << res.detail;
}

// Rules of the comparison: at exactly the threshold (identical samples: the
// value and its whole interval are 1), '<=' and '>=' hold, '<' and '>' do not.
TEST(BenchClaims, ComparisonAtTheThresholdFollowsTheOperator) {
  const std::vector<pb::BenchRow> rows = {timed("hand", "cpu", 1.0, "f32", 1e9, 0.0),
                                          timed("ceiling", "openblas:Zen", 1.0, "f32", 1e9, 0.0)};
  EXPECT_EQ(judge(claim("time_ratio", "hand", "ceiling", "<=", 1.0), rows).verdict, pb::ClaimVerdict::Met);
  EXPECT_EQ(judge(claim("time_ratio", "hand", "ceiling", ">=", 1.0), rows).verdict, pb::ClaimVerdict::Met);
  EXPECT_EQ(judge(claim("time_ratio", "hand", "ceiling", "<", 1.0), rows).verdict, pb::ClaimVerdict::NotMet);
  EXPECT_EQ(judge(claim("time_ratio", "hand", "ceiling", ">", 1.0), rows).verdict, pb::ClaimVerdict::NotMet);
}

namespace {
// A row of `tier` on `threads` threads, 1e9 flop in `seconds`.
pb::BenchRow on_threads(const std::string& tier, const std::string& backend, double seconds, int threads) {
  pb::BenchRow r = timed(tier, backend, seconds);
  r.key.threads = threads;
  return r;
}

// A claim that the hand row is at least 1.5x the ceiling's throughput, where
// that takes at most 85% of a peak of 100 GFLOP/s a core.
popper::BenchmarkClaim scoped_claim() {
  auto c = claim("throughput_ratio", "hand", "ceiling", ">=", 1.5);
  c.scope = popper::ClaimScope{0.85, "the peer runs near the peak"};
  return c;
}

pb::PeakResult peak_of_100_gflops_a_core() {
  pb::PeakResult peak;
  peak.cores = 2;
  peak.fp32_avx2_core = 100e9, peak.fp32_avx2_all = 200e9;
  return peak;
}
}  // namespace

// Rule: a scoped claim leaves out, and names with its figures, a group where
// threshold x the denominator's throughput is over the attainable fraction of
// the peak (1 thread: the ceiling at 64 GFLOP/s, 1.5x of it 96% of the peak);
// the groups inside are judged (2 threads: 26%, 1.5x of it 39%).
TEST(BenchClaims, AScopedClaimLeavesOutTheGroupsWhereItWouldNeedMoreThanTheAttainablePeak) {
  const auto peak = peak_of_100_gflops_a_core();
  const std::vector<pb::BenchRow> rows = {
      on_threads("hand", "openblas:Zen", 1 / 73.0, 1), on_threads("ceiling", "openblas:Zen", 1 / 64.0, 1),
      on_threads("hand", "openblas:Zen", 1 / 104.0, 2), on_threads("ceiling", "openblas:Zen", 1 / 52.0, 2)};
  auto unscoped = scoped_claim();
  unscoped.scope.reset();
  ASSERT_EQ(judge(unscoped, rows, &peak, {{"f32", "fp32"}}).verdict, pb::ClaimVerdict::NotMet);  // 1 t: 1.14x

  const auto res = judge(scoped_claim(), rows, &peak, {{"f32", "fp32"}});
  EXPECT_EQ(res.verdict, pb::ClaimVerdict::Met) << res.detail;  // 2 t: 2.0x
  EXPECT_EQ(res.figures.at("a/f32/threads:1"),
            "out of scope: the ceiling runs at 64.0% of the peak; 1.5x of it needs 96.0%, over the 85% attainable");
  EXPECT_NE(res.detail.find("(the peer runs near the peak)"), std::string::npos) << res.detail;
  EXPECT_EQ(res.figures.count("a/f32/threads:2"), 1u);
}

// Rule: a scoped claim with no group in its scope is not_measured, never met;
// and where no peak was measured its groups are judged, saying so.
TEST(BenchClaims, AScopedClaimWithoutAGroupInScopeIsNotMeasured) {
  const auto peak = peak_of_100_gflops_a_core();
  const std::vector<pb::BenchRow> rows = {on_threads("hand", "openblas:Zen", 1 / 73.0, 1),
                                          on_threads("ceiling", "openblas:Zen", 1 / 64.0, 1)};
  const auto res = judge(scoped_claim(), rows, &peak, {{"f32", "fp32"}});
  EXPECT_EQ(res.verdict, pb::ClaimVerdict::NotMeasured) << res.detail;
  EXPECT_EQ(res.detail.rfind("no group in the claim's scope", 0), 0u) << res.detail;

  const auto unchecked = judge(scoped_claim(), rows);
  EXPECT_EQ(unchecked.verdict, pb::ClaimVerdict::NotMet) << unchecked.detail;
  EXPECT_NE(unchecked.detail.find("scope not checked"), std::string::npos) << unchecked.detail;
}

namespace {
// One sample per trial: trial t of the row takes seconds[t].
pb::BenchRow per_trial(const std::string& tier, const std::string& backend, const std::vector<double>& seconds) {
  pb::BenchRow r = timed(tier, backend, 1.0);
  r.samples = seconds;
  r.trials.clear();
  for (std::size_t t = 0; t < seconds.size(); ++t) r.trials.push_back(static_cast<int>(t));
  return r;
}
}  // namespace

// Rule: the sign test's interval of the per-trial ratios: [min, max] up to 8
// trials at alpha 0.05 (P(B <= 1) = 9/256 > 0.025), the second-smallest to
// the second-largest from 10 (P(B <= 1) = 11/1024); nothing without shared trials.
TEST(BenchInterval, TrialRatioSpanIsTheSignTestIntervalOfPerTrialRatios) {
  const auto span_of = [](const std::vector<double>& num) {
    const pb::BenchRow n = per_trial("hand", "cpu", num), d = per_trial("ceiling", "c", std::vector(num.size(), 1.0));
    return pb::trial_ratio_span({&n.samples, &n.trials}, {&d.samples, &d.trials});
  };
  const auto eight = span_of({1.3, 1.0, 1.1, 0.9, 1.2, 1.05, 0.95, 1.15});
  EXPECT_EQ(eight.trials, 8);
  EXPECT_DOUBLE_EQ(eight.lo, 0.9);
  EXPECT_DOUBLE_EQ(eight.hi, 1.3);
  const auto ten = span_of({1.3, 1.0, 1.1, 0.9, 1.2, 1.05, 0.95, 1.15, 0.8, 1.4});
  EXPECT_DOUBLE_EQ(ten.lo, 0.9);
  EXPECT_DOUBLE_EQ(ten.hi, 1.3);
  const pb::BenchRow a = per_trial("hand", "cpu", {1.0}), b = per_trial("ceiling", "c", {});
  EXPECT_EQ(pb::trial_ratio_span({&a.samples, &a.trials}, {&b.samples, &b.trials}).trials, 0);
}

// Rule: a paired ratio is the median of the trials' own ratios. With trial
// effects larger than the kernels' difference (a host that placed whole
// processes near or far), each side's pooled median is the mid-pack trial's,
// and a ratio of them would be that one trial's ratio.
TEST(BenchInterval, APairedRatioIsTheMedianOfTheTrialsOwnRatios) {
  const pb::BenchRow den = per_trial("ceiling", "c", {1, 2, 3, 4, 5});
  const pb::BenchRow num = per_trial("wrapped", "openblas", {1, 2, 3.3, 4, 5});  // trial 2 reads 1.1
  const auto iv = pb::paired_ratio_interval({&num.samples, &num.trials}, {&den.samples, &den.trials});
  EXPECT_DOUBLE_EQ(iv.ratio, 1.0);
  EXPECT_EQ(iv.df, 4);
  EXPECT_LE(iv.lo, 1.0);
  EXPECT_GE(iv.hi, 1.0);
  // Every trial 1.1: so is the ratio, and the bootstrap has nothing to vary.
  const pb::BenchRow slower = per_trial("wrapped", "openblas", {1.1, 2.2, 3.3, 4.4, 5.5});
  const auto all = pb::paired_ratio_interval({&slower.samples, &slower.trials}, {&den.samples, &den.trials});
  EXPECT_NEAR(all.ratio, 1.1, 1e-12);
  EXPECT_NEAR(all.lo, 1.1, 1e-12);
  EXPECT_NEAR(all.hi, 1.1, 1e-12);
}

// Rule: a trial whose two sides kept as many repetitions is judged on the
// ratios of its repetitions in order (run in turns, the k-th of each ran next
// to the other); with unequal counts, on the ratio of the medians. A host
// that slowed the first three of one side and the first of the other 1.6x
// reads 1.6 in the medians' ratio and 1.3 in the pairs'.
TEST(BenchInterval, ATrialRunInTurnsIsJudgedOnItsRepetitionPairs) {
  const std::vector<double> num{1.6, 1.6, 1.0, 1.0}, den{1.6, 1.6, 1.0, 1.0};
  EXPECT_DOUBLE_EQ(pb::trial_ratio(num, den), 1.0);
  EXPECT_DOUBLE_EQ(pb::trial_ratio({1.6, 1.6, 1.6, 1.0}, {1.6, 1.0, 1.0, 1.0}), 1.3);
  EXPECT_DOUBLE_EQ(pb::trial_ratio({1.6, 1.6, 1.0}, {1.0, 1.0}), 1.6);  // unequal counts: medians
  // The span and the paired interval take the same per-trial ratio.
  pb::BenchRow n = per_trial("wrapped", "openblas", {}), d = per_trial("ceiling", "c", {});
  for (int t = 0; t < 8; ++t)
    for (std::size_t k = 0; k < num.size(); ++k) {
      n.samples.push_back(num[k] * (t % 2 ? 1.02 : 0.99)), n.trials.push_back(t);
      d.samples.push_back(den[k]), d.trials.push_back(t);
    }
  const auto span = pb::trial_ratio_span({&n.samples, &n.trials}, {&d.samples, &d.trials});
  EXPECT_NEAR(span.lo, 0.99, 1e-12);
  EXPECT_NEAR(span.hi, 1.02, 1e-12);
  const auto iv = pb::paired_ratio_interval({&n.samples, &n.trials}, {&d.samples, &d.trials});
  EXPECT_GE(iv.lo, 0.99 - 1e-12);
  EXPECT_LE(iv.hi, 1.02 + 1e-12);
}

// Rule: the trials it takes for the sign test's interval to leave out m
// ratios on one side: k = m + 1 at alpha 0.05, so 6, 9, 12 and 15 for m = 0..3
// (P(B = 0) at 6 trials 1/64, at 5 1/32; P(B <= 1) at 9 trials 10/512;
// P(B <= 2) at 12 79/4096, at 11 67/2048); 8, 11, 15 at 0.0125.
TEST(BenchInterval, SignTestTrialsOutvoteTheTrialsOnOneSide) {
  EXPECT_EQ(pb::sign_test_trials(0), 6);
  EXPECT_EQ(pb::sign_test_trials(0, 0.0125), 8);
  EXPECT_EQ(pb::sign_test_trials(1, 0.0125), 11);
  EXPECT_EQ(pb::sign_test_trials(2, 0.0125), 15);
  EXPECT_EQ(pb::sign_test_trials(1), 9);
  EXPECT_EQ(pb::sign_test_trials(2), 12);
  EXPECT_EQ(pb::sign_test_trials(3), 15);
  for (int n = 6; n < 40; ++n) EXPECT_LE(pb::sign_test_trials(pb::sign_test_rank(n) - 1), n) << n;
}

// Rule: a group whose bootstrap interval is off the threshold, but whose span
// reaches across it by one trial, is decided in 9 trials (the sign test
// outvotes one trial there), not left hopeless: every 1-thread gate group of
// BENCH-GEMM-001 that one trial of six took over 1.02 was left inconclusive
// with rounds and budget to spare.
TEST(BenchClaims, OneTrialAcrossTheThresholdIsDecidedByNineTrials) {
  const auto c = claim("time_ratio", "wrapped", "ceiling", "<", 1.02);
  const pb::BenchRow wrapped = per_trial("wrapped", "openblas:Zen", {1.0, 1.002, 0.998, 1.08, 1.001, 0.999});
  const pb::BenchRow ceiling = per_trial("ceiling", "openblas:Zen", std::vector(6, 1.0));
  const auto res = judge(c, {wrapped, ceiling});
  ASSERT_EQ(res.verdict, pb::ClaimVerdict::Inconclusive) << res.detail;
  ASSERT_EQ(res.inconclusive_groups.size(), 1u);
  EXPECT_EQ(res.inconclusive_groups[0].trials, 6);
  EXPECT_EQ(res.inconclusive_groups[0].trials_to_decide, 9);
  // Three more trials at the wrapper's own pace: the one trial is outvoted.
  const pb::BenchRow more =
      per_trial("wrapped", "openblas:Zen", {1.0, 1.002, 0.998, 1.08, 1.001, 0.999, 1.003, 0.997, 1.0});
  const auto decided = judge(c, {more, per_trial("ceiling", "openblas:Zen", std::vector(9, 1.0))});
  EXPECT_EQ(decided.verdict, pb::ClaimVerdict::Met) << decided.detail;
  // At a stricter alpha (0.0125), the sign test keeps the trial until 11 outvote it.
  const auto strict = judge(c, {more, per_trial("ceiling", "openblas:Zen", std::vector(9, 1.0))}, nullptr, {}, 0.0125);
  EXPECT_EQ(strict.verdict, pb::ClaimVerdict::Inconclusive) << strict.detail;
  EXPECT_EQ(strict.alpha, 0.0125) << "the result says the level it was judged at";
  EXPECT_EQ(decided.alpha, 0.05);
  ASSERT_EQ(strict.inconclusive_groups.size(), 1u);
  EXPECT_EQ(strict.inconclusive_groups[0].trials_to_decide, 11);
}

// Rule: a trial disturbed on one side keeps a ratio group inconclusive, to be
// measured again, where the bootstrap of medians alone would call it not_met
// (the wrapped tier at 2 threads read 2.04x [1.09, 2.15] in one run of a build
// and 0.96-1.05x in the next).
TEST(BenchClaims, ATrialDisturbedOnOneSideIsInconclusiveNotNotMet) {
  const auto c = claim("time_ratio", "wrapped", "ceiling", "<", 1.02);
  const pb::BenchRow wrapped = per_trial("wrapped", "openblas:Zen", {1.5, 1.0, 1.5, 1.5, 1.5, 1.5});
  const pb::BenchRow ceiling = per_trial("ceiling", "openblas:Zen", std::vector(6, 1.0));
  const auto boot = pb::paired_ratio_interval({&wrapped.samples, &wrapped.trials}, {&ceiling.samples, &ceiling.trials});
  EXPECT_GT(boot.lo, 1.02);  // the premise: the bootstrap alone says not met
  const auto res = judge(c, {wrapped, ceiling});
  EXPECT_EQ(res.verdict, pb::ClaimVerdict::Inconclusive) << res.detail;
  EXPECT_NE(res.detail.find("6 trials' own ratios span [1, 1.5]"), std::string::npos) << res.detail;
  // Every trial slower: not met, whatever the span.
  const auto slow = judge(c, {per_trial("wrapped", "openblas:Zen", {1.5, 1.1, 1.5, 1.5, 1.4, 1.5}), ceiling});
  EXPECT_EQ(slow.verdict, pb::ClaimVerdict::NotMet) << slow.detail;
}

namespace {
// The row with the pace probe's seconds around each trial's process (pace.hpp).
pb::BenchRow paced(pb::BenchRow r, const std::vector<double>& pace) {
  for (std::size_t t = 0; t < pace.size(); ++t) r.pace[static_cast<int>(t)] = pace[t];
  return r;
}
}  // namespace

// Rule: a ratio sets aside the trials in which one side's process ran on a
// slow CPU and the other's did not, and is inconclusive ("disturbed") when
// fewer than 2 are left; trials at one pace, slow or not, are judged. On the
// 2-vCPU EPYC guest the FMA throughput of the host's cores fell 1.5x for tens
// of seconds, and a wrapped side drawn in that period read 1.2x its ceiling.
TEST(BenchClaims, ARatioSetsAsideTrialsInWhichOneSideRanOnASlowCpu) {
  const auto c = claim("time_ratio", "wrapped", "ceiling", "<", 1.02);
  const pb::BenchRow ceiling = paced(per_trial("ceiling", "openblas:Zen", std::vector(8, 1.0)), std::vector(8, 2e-3));
  const pb::BenchRow slower = per_trial("wrapped", "openblas:Zen", std::vector(8, 1.4));
  // The premise: without a pace, 1.4x in every trial is not met.
  ASSERT_EQ(judge(c, {slower, ceiling}).verdict, pb::ClaimVerdict::NotMet);

  // Every wrapped process ran slow (3 ms against 2), no ceiling one did: nothing is left to judge.
  const auto disturbed = judge(c, {paced(slower, std::vector(8, 3e-3)), ceiling});
  EXPECT_EQ(disturbed.verdict, pb::ClaimVerdict::Inconclusive) << disturbed.detail;
  EXPECT_NE(disturbed.detail.find("disturbed (8 of 8 trials set aside"), std::string::npos) << disturbed.detail;
  EXPECT_EQ(disturbed.detail.rfind("no group judged; inconclusive: a/f32/threads:1: disturbed", 0), 0u)
      << disturbed.detail;
  ASSERT_EQ(disturbed.inconclusive_groups.size(), 1u);  // so it is measured again

  // A slowdown measured at one pace stands: the set-aside cannot hide a slower kernel.
  EXPECT_EQ(judge(c, {paced(slower, std::vector(8, 2.1e-3)), ceiling}).verdict, pb::ClaimVerdict::NotMet);
  const std::vector<double> both_slow_early = {3e-3, 3e-3, 3e-3, 2e-3, 2e-3, 2e-3, 2e-3, 2e-3};
  const auto same_pace = judge(c, {paced(slower, both_slow_early), paced(ceiling, both_slow_early)});
  EXPECT_EQ(same_pace.verdict, pb::ClaimVerdict::NotMet) << same_pace.detail;
  EXPECT_EQ(same_pace.detail.find("set aside"), std::string::npos) << same_pace.detail;

  // Slow on the wrapped side in 3 trials, which read 1.5x; the other 6 read 1.0x and decide.
  const auto mixed = judge(c, {paced(per_trial("wrapped", "openblas:Zen", {1.5, 1.5, 1.5, 1, 1, 1, 1, 1, 1}),
                                     {3e-3, 3e-3, 3e-3, 2e-3, 2e-3, 2e-3, 2e-3, 2e-3, 2e-3}),
                               paced(per_trial("ceiling", "openblas:Zen", std::vector(9, 1.0)), std::vector(9, 2e-3))});
  EXPECT_EQ(mixed.verdict, pb::ClaimVerdict::Met) << mixed.detail;
  EXPECT_NE(mixed.detail.find("3 of 9 trials set aside"), std::string::npos) << mixed.detail;
  // With 5 left, even their [min, max] does not bound the median at 0.05: measured again.
  const auto five = judge(c, {paced(per_trial("wrapped", "openblas:Zen", {1.5, 1.5, 1.5, 1, 1, 1, 1, 1}),
                                    {3e-3, 3e-3, 3e-3, 2e-3, 2e-3, 2e-3, 2e-3, 2e-3}),
                              ceiling});
  EXPECT_EQ(five.verdict, pb::ClaimVerdict::Inconclusive) << five.detail;
  EXPECT_NE(five.detail.find("judged on 5 trials: 6 decide it"), std::string::npos) << five.detail;
}

// Rule: where at least kSteadyTrials trials ran steady on both sides, a ratio
// also sets aside the trials in which both sides ran slow: two slow processes
// meet the host's contention at different strengths, and their ratios
// scattered over 3.5 times the steady trials' spread on a loaded host.
TEST(BenchClaims, ARatioSetsAsideTrialsBothSlowWhenEnoughRanSteady) {
  static_assert(pb::kSteadyTrials == 6);
  const auto c = claim("time_ratio", "wrapped", "ceiling", "<", 1.02);
  const std::vector<double> scattered{1.2, 0.85, 1.2, 0.85, 1.2, 0.85};
  auto judged = [&](int steady) {
    std::vector<double> wrapped(static_cast<std::size_t>(steady), 1.0), pace(static_cast<std::size_t>(steady), 2e-3);
    wrapped.insert(wrapped.end(), scattered.begin(), scattered.end());
    pace.insert(pace.end(), scattered.size(), 3e-3);
    const auto n = wrapped.size();
    return judge(c, {paced(per_trial("wrapped", "openblas:Zen", wrapped), pace),
                     paced(per_trial("ceiling", "openblas:Zen", std::vector(n, 1.0)), pace)});
  };
  const auto six = judged(6);
  EXPECT_EQ(six.verdict, pb::ClaimVerdict::Met) << six.detail;
  EXPECT_NE(six.detail.find("6 of 12 trials set aside: a side ran on a slow CPU"), std::string::npos) << six.detail;
  const auto five = judged(5);  // too few steady: every trial at one pace is judged, and the scatter decides nothing
  EXPECT_EQ(five.verdict, pb::ClaimVerdict::Inconclusive) << five.detail;
  EXPECT_EQ(five.detail.find("set aside"), std::string::npos) << five.detail;
}

// Rule: the probes travel in the CSV, so a table read back (bench merge
// --claims over a run's shards) sets aside the trials its run set aside.
TEST(BenchClaims, ATableReadBackFromItsCsvSetsAsideWhatItsRunDid) {
  popper::Contract k;
  k.stem = "gemm-v1";
  k.benchmarks.push_back(claim("time_ratio", "wrapped", "ceiling", "<", 1.02));
  pb::BenchTable t;
  t.rows = {paced(per_trial("wrapped", "openblas:Zen", {1.5, 1.5, 1.5, 1, 1, 1, 1, 1, 1}),
                  {3e-3, 3e-3, 3e-3, 2e-3, 2e-3, 2e-3, 2e-3, 2e-3, 2e-3}),
            paced(per_trial("ceiling", "openblas:Zen", std::vector(9, 1.0)), std::vector(9, 2e-3))};
  const auto run = pb::evaluate_claims({k}, "gemm", t, nullptr, {}, {"a"});
  const auto back =
      pb::evaluate_claims({k}, "gemm", pb::parse_bench_csv(pb::format_bench_csv(t), "b.csv"), nullptr, {}, {"a"});
  ASSERT_EQ(run.size(), 1u);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(run[0].verdict, pb::ClaimVerdict::Met) << run[0].detail;  // the premise: 3 of 9 set aside
  EXPECT_EQ(back[0].verdict, run[0].verdict) << back[0].detail;
  EXPECT_EQ(back[0].detail, run[0].detail);
}

namespace {
// The row on 2 CPUs with the link probe's round trip around each trial's process (pace.hpp).
pb::BenchRow linked(pb::BenchRow r, const std::vector<double>& link) {
  r.key.threads = 2;
  for (std::size_t t = 0; t < link.size(); ++t) r.link[static_cast<int>(t)] = link[t];
  return r;
}
}  // namespace

// Rule: a ratio also sets aside the trials in which one side's CPUs were far
// apart and the other's were not. On the 2-vCPU Zen 4 guest the vCPUs sat on
// one CCD (round trip 51-79 ns) or two (312-382 ns), switching every few
// seconds, and OpenBLAS's 2-thread small_128 f64 took 52 or 95 us with them,
// called from C or through popper alike: BENCH-GEMM-001 read 1.8x in a trial
// that paired a far wrapped process with a near ceiling.
TEST(BenchClaims, ARatioSetsAsideTrialsInWhichOneSidesCpusWereFarApart) {
  const auto c = claim("time_ratio", "wrapped", "ceiling", "<", 1.02);
  constexpr double kNear = 6e-8, kFar = 3.3e-7;
  const pb::BenchRow ceiling = linked(per_trial("ceiling", "openblas:Zen", {1, 1.83, 1, 1, 1, 1, 1.83, 1, 1}),
                                      {kNear, kFar, kNear, kNear, kNear, kNear, kFar, kNear, kNear});
  const pb::BenchRow wrapped = linked(per_trial("wrapped", "openblas:Zen", {1, 1, 1.83, 1.83, 1, 1, 1.83, 1, 1}),
                                      {kNear, kNear, kFar, kFar, kNear, kNear, kFar, kNear, kNear});
  // The premise: without the links, the trials that paired far with near decide nothing good.
  pb::BenchRow unlinked_w = wrapped, unlinked_c = ceiling;
  unlinked_w.link.clear(), unlinked_c.link.clear();
  ASSERT_NE(judge(c, {unlinked_w, unlinked_c}).verdict, pb::ClaimVerdict::Met);
  // Trials 1-3 are set aside; trial 6, far on both sides, is judged as it is.
  const auto res = judge(c, {wrapped, ceiling});
  EXPECT_EQ(res.verdict, pb::ClaimVerdict::Met) << res.detail;
  EXPECT_NE(res.detail.find("3 of 9 trials set aside: the two sides' CPUs were placed apart differently"),
            std::string::npos)
      << res.detail;
  // A slower wrapper measured with both sides near stands: the set-aside cannot hide it.
  const auto slower =
      judge(c, {linked(per_trial("wrapped", "openblas:Zen", std::vector(8, 1.3)), std::vector(8, kNear)),
                linked(per_trial("ceiling", "openblas:Zen", std::vector(8, 1.0)), std::vector(8, kNear))});
  EXPECT_EQ(slower.verdict, pb::ClaimVerdict::NotMet) << slower.detail;
}

// Rule: a ratio is judged on the repetitions probed at a steady pace inside
// their process; a trial whose every repetition ran slow is a slow trial.
TEST(BenchClaims, ARatioIsJudgedOnTheRepetitionsItsCpuRanSteady) {
  const auto c = claim("time_ratio", "wrapped", "ceiling", "<", 1.02);
  // Two repetitions in each of 8 trials, each with the pace probed around it.
  auto reps = [](const std::string& tier, std::pair<double, double> seconds, std::pair<double, double> pace) {
    pb::BenchRow r = per_trial(tier, "openblas:Zen", {});
    for (int t = 0; t < 8; ++t) {
      r.samples.insert(r.samples.end(), {seconds.first, seconds.second});
      r.trials.insert(r.trials.end(), {t, t});
      r.sample_pace.insert(r.sample_pace.end(), {pace.first, pace.second});
    }
    return r;
  };
  const pb::BenchRow ceiling = reps("ceiling", {1.0, 1.0}, {2e-3, 2e-3});
  // The wrapped side's second repetition in every trial ran on a slow CPU and read 1.6x.
  pb::BenchRow wrapped = reps("wrapped", {1.0, 1.6}, {2e-3, 3e-3});
  const auto steady = judge(c, {wrapped, ceiling});
  EXPECT_EQ(steady.verdict, pb::ClaimVerdict::Met) << steady.detail;
  EXPECT_NE(steady.detail.find("8 repetitions set aside"), std::string::npos) << steady.detail;
  // The premise: unprobed, each trial's median is 1.3x, and the slow repetitions decide.
  std::fill(wrapped.sample_pace.begin(), wrapped.sample_pace.end(), 0.0);
  const auto unprobed = judge(c, {wrapped, ceiling});
  EXPECT_NE(unprobed.verdict, pb::ClaimVerdict::Met) << unprobed.detail;
  // Every wrapped repetition slow and no ceiling one: every trial is set aside, and measured again.
  const auto slow = judge(c, {reps("wrapped", {1.6, 1.6}, {3e-3, 3e-3}), ceiling});
  EXPECT_EQ(slow.verdict, pb::ClaimVerdict::Inconclusive) << slow.detail;
  EXPECT_NE(slow.detail.find("8 of 8 trials set aside"), std::string::npos) << slow.detail;
  // A slower kernel at a steady pace stays not met.
  EXPECT_EQ(judge(c, {reps("wrapped", {1.4, 1.4}, {2e-3, 2.1e-3}), ceiling}).verdict, pb::ClaimVerdict::NotMet);
}

// Rule: a claim is judged on the rows of its cache mode only: a cold claim
// never on warm rows, a warm one (the default) never on cold rows.
TEST(BenchClaims, AClaimJudgesTheRowsOfItsCacheMode) {
  auto cold = [](pb::BenchRow r) {
    r.key.cache_mode = "cold";
    return r;
  };
  const std::vector<pb::BenchRow> rows = {timed("hand", "cpu", 0.5), timed("ceiling", "ggml", 1.0),
                                          cold(timed("hand", "cpu", 1.2)), cold(timed("ceiling", "ggml", 1.0))};
  auto c = claim("time_ratio", "hand", "ceiling", "<=", 1.0);
  EXPECT_EQ(judge(c, rows).verdict, pb::ClaimVerdict::Met);
  c.cache = "cold";
  const auto res = judge(c, rows);
  EXPECT_EQ(res.verdict, pb::ClaimVerdict::NotMet) << res.detail;
  EXPECT_EQ(res.detail.rfind("cold rows: worst a/f32/threads:1: 1.2", 0), 0u) << res.detail;
  EXPECT_EQ(judge(c, {rows[0], rows[1]}).verdict, pb::ClaimVerdict::NotMeasured);
}
