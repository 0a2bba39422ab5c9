// Producer output ingestion, family descriptors, claims, reports, callgrind parsing.
#include <cmath>
#include <cstdio>
#include <regex>
#include <gtest/gtest.h>

#include "bench/claims.hpp"
#include "bench/family.hpp"
#include "bench/gate.hpp"
#include "bench/ingest.hpp"
#include "bench/interval.hpp"
#include "bench/report.hpp"
#include "popper/error.hpp"

namespace pb = popper::bench;

TEST(BenchIngest, GoogleBenchmarkJsonPerRepetition) {
  const std::string json = R"({
    "context": {"popper_backend_hand": "cpu:avx2"},
    "benchmarks": [
      {"name": "gemm/hand/small_64/f32/threads:1/real_time", "run_name": "gemm/hand/small_64/f32/threads:1/real_time",
       "run_type": "iteration", "repetition_index": 0, "iterations": 100, "real_time": 2.0, "time_unit": "ms",
       "flop": 524288, "bytes": 49152, "label": "verified", "pace_seconds": 0.0071},
      {"name": "gemm/hand/small_64/f32/threads:1/real_time", "run_name": "gemm/hand/small_64/f32/threads:1/real_time",
       "run_type": "iteration", "repetition_index": 1, "iterations": 100, "real_time": 4000.0, "time_unit": "us",
       "flop": 524288, "bytes": 49152, "read_bytes_per_second": 3.5e10, "label": "verified"},
      {"name": "gemm/hand/small_64/f32/threads:1/real_time_mean", "run_name": "gemm/hand/small_64/f32/threads:1/real_time",
       "run_type": "aggregate", "aggregate_name": "mean", "real_time": 3.0, "time_unit": "ms"},
      {"name": "gemm/wrapped/small_64/f32/threads:1/real_time", "run_name": "gemm/wrapped/small_64/f32/threads:1/real_time",
       "run_type": "iteration", "error_occurred": true, "error_message": "incorrect: max err 1 > bound 0.1"}
    ]})";
  const auto rows = pb::rows_from_gbench_json(json, "x.json", "flop");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].key.backend, "cpu:avx2");
  ASSERT_EQ(rows[0].samples.size(), 2u);  // the aggregate is not a sample
  EXPECT_DOUBLE_EQ(rows[0].samples[0], 0.002);
  EXPECT_DOUBLE_EQ(rows[0].samples[1], 0.004);
  EXPECT_EQ(rows[0].sample_pace, (std::vector<double>{0.0071, 0}));  // the second repetition was not probed
  EXPECT_DOUBLE_EQ(rows[0].work_per_iter, 524288);
  EXPECT_DOUBLE_EQ(rows[0].read_bound, 3.5e10);  // the suite's read probe, where it gave one
  EXPECT_EQ(rows[1].read_bound, 0);
  EXPECT_EQ(rows[1].key.backend, "wrapped");  // no context entry: tier name
  EXPECT_TRUE(rows[1].samples.empty());
  EXPECT_EQ(rows[1].verdict.kind, pb::VerdictKind::Incorrect);
  EXPECT_THROW(pb::rows_from_gbench_json("{not json", "x.json", "flop"), pb::BenchFileError);
}

TEST(BenchIngest, DeclinedRunIsNotRunNotIncorrect) {
  const std::string json = R"({"benchmarks": [
      {"name": "sae/wrapped/apply_p5120/f64/threads:1/real_time", "run_name": "sae/wrapped/apply_p5120/f64/threads:1/real_time",
       "run_type": "iteration", "error_occurred": true, "error_message": "not_run: dense route needs 800 GiB"},
      {"name": "sae/wrapped/apply_p5120/f64/threads:1/real_time", "run_name": "sae/wrapped/apply_p5120/f64/threads:1/real_time",
       "run_type": "iteration", "repetition_index": 1, "iterations": 1, "real_time": 2.0, "time_unit": "ms",
       "flop": 1, "label": "verified"}]})";
  const auto rows = pb::rows_from_gbench_json(json, "x.json", "flop");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].verdict.label, "not_run: dense route needs 800 GiB");
  EXPECT_TRUE(rows[0].samples.empty()) << "a later repetition must not revive a declined row";
}

namespace {
// The ceiling CSV header a program built before the pace column writes.
const std::string kCeilingHeader =
    "family,tier,backend,shape,precision,threads,rep,iterations,seconds_per_iter,flop_per_iter,bytes_per_iter,"
    "verdict";
}  // namespace

TEST(BenchIngest, CeilingCsvGroupsRepetitions) {
  const std::string csv = kCeilingHeader +
                          "\n"
                          "gemm,ceiling,openblas:Zen,small_64,f32,1,0,1000,1.0e-05,524288,49152,not_verified\n"
                          "gemm,ceiling,openblas:Zen,small_64,f32,1,1,1000,3.0e-05,524288,49152,not_verified\n"
                          "gemm,ceiling,openblas:Zen,small_64,f64,1,0,1000,2.0e-05,524288,98304,not_verified\n";
  const auto rows = pb::rows_from_ceiling_csv(csv, "c");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].samples.size(), 2u);
  EXPECT_DOUBLE_EQ(rows[0].median(), 2.0e-05);
  EXPECT_THROW(pb::rows_from_ceiling_csv(csv + "gemm,ceiling,x,small_64,f32,1,2,1000,abc,1,1,nv\n", "c"),
               pb::BenchFileError);
  EXPECT_EQ(rows[0].sample_pace, (std::vector<double>{0, 0}));  // a program that writes no pace column
}

TEST(BenchIngest, CeilingCsvCarriesEachRepetitionsPace) {
  const std::string csv = kCeilingHeader +
                          ",pace_seconds\n"
                          "gemm,ceiling,openblas:Zen,small_64,f64,1,0,1000,1.5e-05,524288,98304,verified,7.1e-03\n"
                          "gemm,ceiling,openblas:Zen,small_64,f64,1,1,1000,1.8e-05,524288,98304,verified,9.4e-03\n";
  const auto rows = pb::rows_from_ceiling_csv(csv, "c");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].sample_pace, (std::vector<double>{7.1e-3, 9.4e-3}));
  // Each row has the header's column count.
  EXPECT_THROW(pb::rows_from_ceiling_csv(csv + "gemm,ceiling,x,small_64,f64,1,2,1000,1e-5,1,1,verified\n", "c"),
               pb::BenchFileError);
}

TEST(BenchIngest, ACeilingRowFailsWhenAnyOfItsRepetitionsFailed) {
  // The second repetition left a thread running (popper/ceiling_cli.h ceiling_row_verdict).
  const std::string csv = kCeilingHeader +
                          ",pace_seconds\n"
                          "gemm,ceiling,openblas:Zen,small_64,f64,2,0,1000,1.5e-05,524288,98304,verified,0\n"
                          "gemm,ceiling,openblas:Zen,small_64,f64,2,1,1000,1.4e-05,524288,98304,invalid: a thread "
                          "ran,0\n"
                          "gemm,ceiling,openblas:Zen,small_64,f64,2,2,1000,1.4e-05,524288,98304,verified,0\n";
  const auto rows = pb::rows_from_ceiling_csv(csv, "c");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].verdict.kind, popper::bench::VerdictKind::Invalid) << rows[0].verdict.label;
  EXPECT_EQ(rows[0].samples.size(), 3u);
}

TEST(BenchIngest, FamilyDescriptor) {
  const auto f = pb::parse_family_yaml(
      "family: gemm\nceilings: [cblas_gemm_raw]\nblas_core_types: true\nwork_unit: flop\n"
      "peak: {f32: fp32, f64: fp64}\ngate: {shapes: [small_64], iterations: 3}\n",
      "family.yaml");
  EXPECT_EQ(f.executable, "bench_gemm");
  EXPECT_EQ(f.peak.at("f64"), "fp64");
  EXPECT_EQ(f.gate.iterations, 3);
  EXPECT_THROW(pb::parse_family_yaml("family: gemm\nceilngs: []\n", "family.yaml"), popper::Error);
  EXPECT_THROW(pb::parse_family_yaml("family: gemm\npeak: {f32: marketing}\n", "family.yaml"), popper::Error);
}

TEST(BenchIngest, CallgrindTotals) {
  EXPECT_DOUBLE_EQ(pb::callgrind_total_ir("version: 1\nevents: Ir\nfn=foo\n1 2\ntotals: 123456\n"), 123456);
  EXPECT_LT(pb::callgrind_total_ir("garbage"), 0);
}

namespace {

// Six trials (the fewest a ratio is judged on: sign_test_trials) of two
// samples each, within +-0.05% of `seconds` (tight intervals).
pb::BenchRow timed(const std::string& tier, const std::string& shape, double seconds, double trial_spread = 0.0005) {
  pb::BenchRow r;
  r.key = {"gemm", pb::tier_from(tier, "test"), tier == "ceiling" ? "openblas:Zen" : tier, shape, "f32", 1, "warm"};
  const double level[6] = {1.0, 1.0 + trial_spread, 1.0 - trial_spread, 1.0, 1.0 + trial_spread, 1.0 - trial_spread};
  for (int t = 0; t < 6; ++t)
    for (int i = 0; i < 2; ++i) {
      r.samples.push_back(seconds * level[t]);
      r.trials.push_back(t);
    }
  r.work_per_iter = 1e9;
  r.verdict = pb::Verdict::parse("verified");
  return r;
}

popper::Contract contract_with(popper::BenchmarkClaim c) {
  popper::Contract k;
  k.stem = "gemm-v1";
  k.benchmarks.push_back(std::move(c));
  return k;
}

}  // namespace

TEST(BenchClaims, TimeRatioMetNotMetNotMeasured) {
  popper::BenchmarkClaim claim;
  claim.id = "BENCH-GEMM-001";
  claim.family = "gemm";
  claim.metric = "time_ratio";
  claim.numerator = "wrapped";
  claim.denominator = "ceiling";
  claim.op = "<";
  claim.threshold = 1.02;
  pb::BenchTable t;
  t.rows = {timed("ceiling", "a", 1.0), timed("wrapped", "a", 1.01), timed("ceiling", "b", 1.0),
            timed("wrapped", "b", 1.013)};
  const std::vector<std::string> ab = {"a", "b"};
  auto res = pb::evaluate_claims({contract_with(claim)}, "gemm", t, nullptr, {}, ab);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::Met) << res[0].detail;
  EXPECT_NE(res[0].detail.find("b/f32/threads:1: 1.013"), std::string::npos) << res[0].detail;
  // "shapes: all" is the family's whole list: a shape not run leaves it partially measured.
  res = pb::evaluate_claims({contract_with(claim)}, "gemm", t, nullptr, {}, {"a", "b", "x"});
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::PartiallyMeasured) << res[0].detail;
  // Only verified rows count.
  auto unverified = t;
  unverified.rows[3].verdict = pb::Verdict::parse("not_verified: no oracle");
  res = pb::evaluate_claims({contract_with(claim)}, "gemm", unverified, nullptr, {}, ab);
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::PartiallyMeasured) << res[0].detail;
  // An interval that straddles the threshold decides nothing.
  auto straddle = t;
  straddle.rows[3] = timed("wrapped", "b", 1.02, 0.03);
  res = pb::evaluate_claims({contract_with(claim)}, "gemm", straddle, nullptr, {}, ab);
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::Inconclusive) << res[0].detail;
  ASSERT_EQ(res[0].inconclusive_groups.size(), 1u);
  EXPECT_EQ(res[0].inconclusive_groups[0].trials, 6);  // paired over the 6 trials
  EXPECT_GT(res[0].inconclusive_groups[0].trials_to_decide, 6);
  t.rows.push_back(timed("ceiling", "c", 1.0));
  t.rows.push_back(timed("wrapped", "c", 1.05));
  res = pb::evaluate_claims({contract_with(claim)}, "gemm", t, nullptr, {}, {"a", "b", "c"});
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::NotMet);
  EXPECT_NE(res[0].detail.find("c/f32"), std::string::npos) << res[0].detail;
  claim.shapes = {"d"};
  res = pb::evaluate_claims({contract_with(claim)}, "gemm", t, nullptr, {}, ab);
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::NotMeasured);
  claim.family = "arrow";
  EXPECT_TRUE(pb::evaluate_claims({contract_with(claim)}, "gemm", t, nullptr, {}, ab).empty());
}

TEST(BenchClaims, ThroughputRatioAndPeakFraction) {
  popper::BenchmarkClaim claim;
  claim.id = "BENCH-GEMM-002";
  claim.family = "gemm";
  claim.metric = "throughput_ratio";
  claim.numerator = "hand";
  claim.denominator = "ceiling";
  claim.op = ">=";
  claim.threshold = 0.9;
  pb::BenchTable t;
  t.rows = {timed("ceiling", "a", 1.0), timed("hand", "a", 2.0)};  // hand at half the throughput
  auto res = pb::evaluate_claims({contract_with(claim)}, "gemm", t, nullptr, {}, {"a"});
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::NotMet);
  EXPECT_NE(res[0].detail.find("a/f32/threads:1: 0.5 ["), std::string::npos) << res[0].detail;
  claim.metric = "peak_fraction";
  claim.denominator.clear();
  claim.threshold = 0.4;
  pb::PeakResult peak;
  peak.cores = 2;
  peak.fp32_avx2_core = 1e9;  // hand: 1e9 FLOP per 2 s = 0.5e9 FLOP/s = 0.5 of this peak
  res = pb::evaluate_claims({contract_with(claim)}, "gemm", t, &peak, {{"f32", "fp32"}}, {"a"});
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::Met) << res[0].detail;
  res = pb::evaluate_claims({contract_with(claim)}, "gemm", t, nullptr, {{"f32", "fp32"}}, {"a"});
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::NotMeasured);
}

// A device claim: judged only on the rows of the named backend, not_measured
// where that device did not run (a Vulkan row on a CPU device is no CUDA row).
TEST(BenchClaims, ThroughputAndNumeratorBackend) {
  popper::BenchmarkClaim claim;
  claim.id = "BENCH-MBP-003";
  claim.family = "gemm";
  claim.metric = "throughput";
  claim.numerator = "device";
  claim.numerator_backend = "cuda";
  claim.op = ">=";
  claim.threshold = 1e9;  // work units per second
  auto device = [](const std::string& backend, double seconds) {
    pb::BenchRow r = timed("device", "a", seconds);
    r.key.backend = backend;
    return r;
  };
  pb::BenchTable t;
  t.rows = {device("vulkan:llvmpipe", 1.0)};  // 1e9 per second, but not on CUDA
  auto res = pb::evaluate_claims({contract_with(claim)}, "gemm", t, nullptr, {}, {"a"});
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::NotMeasured) << res[0].detail;
  t.rows.push_back(device("cuda:sm_90", 2.0));  // 0.5e9 per second
  res = pb::evaluate_claims({contract_with(claim)}, "gemm", t, nullptr, {}, {"a"});
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::NotMet) << res[0].detail;
  EXPECT_NE(res[0].detail.find("a/f32/threads:1: 5e+08 ["), std::string::npos) << res[0].detail;
  t.rows.back() = device("cuda:sm_90", 0.25);
  res = pb::evaluate_claims({contract_with(claim)}, "gemm", t, nullptr, {}, {"a"});
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::Met) << res[0].detail;
  // A ratio between two backends of one tier: vulkan / cuda throughput.
  claim.metric = "throughput_ratio";
  claim.numerator_backend = "vulkan";
  claim.denominator = "device";
  claim.denominator_backend = "cuda";
  claim.threshold = 0.5;
  res = pb::evaluate_claims({contract_with(claim)}, "gemm", t, nullptr, {}, {"a"});
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::NotMet) << res[0].detail;  // 1 s against 0.25 s: 0.25
  EXPECT_NE(res[0].detail.find("a/f32/threads:1: 0.25 ["), std::string::npos) << res[0].detail;
}

TEST(BenchReport, MarkdownAndSvgShowTiersAndPeak) {
  pb::BenchTable t;
  t.set_meta("fingerprint", "fp");
  t.rows = {timed("ceiling", "square_1k", 0.025), timed("wrapped", "square_1k", 0.0255),
            timed("hand", "square_1k", 0.05)};
  t.rows[1].key.backend = "openblas:Zen";  // the wrapped tier's configuration, as its ceiling's
  const auto md = pb::render_markdown(t, "gemm");
  EXPECT_NE(md.find("| square_1k | 40.00 (openblas:Zen) | 39.22 | 20.00 | 0.500× | 1.020× | 0.980× |"),
            std::string::npos)
      << md;
  pb::PeakResult peak;
  peak.cores = 2;
  peak.fp32_avx2_core = 100e9;
  const auto svg = pb::render_svg(t, "gemm", &peak, "fp32", "fp64");
  EXPECT_NE(svg.find("measured peak 100.0 GFLOP/s"), std::string::npos);
  EXPECT_NE(svg.find(">square_1k<"), std::string::npos);
  EXPECT_NE(svg.find(">hand<"), std::string::npos);
  EXPECT_EQ(svg.rfind("</svg>"), svg.size() - 7);
  // Each bar carries its error bar: a wider spread between trials draws a longer one.
  const auto bar_length = [&](double spread) {
    pb::BenchTable u;
    u.rows = {timed("hand", "s", 0.05, spread)};
    const auto s = pb::render_svg(u, "gemm", nullptr, "fp32", "fp64");
    const auto at = s.find("<path d=\"M");
    EXPECT_NE(at, std::string::npos) << s;
    double x0, y_low, h, x1, y1, y_high;  // M x0 y_low H .. M x1 y_low V y_high
    EXPECT_EQ(std::sscanf(s.c_str() + at, "<path d=\"M%lf %lfH%lfM%lf %lfV%lf", &x0, &y_low, &h, &x1, &y1, &y_high), 6);
    return y_low - y_high;
  };
  EXPECT_GT(bar_length(0.2), 10 * bar_length(0.005));
}

// The numbers of the SVG's <text class="`cls`"> elements, in document order.
std::vector<double> numbers_of_class(const std::string& svg, const std::string& cls) {
  std::vector<double> out;
  const std::regex text("<text class=\"" + cls + "\"[^>]*>([^<]*)<");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator(); ++it)
    out.push_back(std::stod((*it)[1].str()));
  return out;
}

TEST(BenchReport, AxisTicksAreNiceStepsUpToTheMaxRoundedUp) {
  const std::vector<double> expected = {0, 25, 50, 75, 100, 125, 150};
  const auto ticks = pb::axis_ticks(129.4);
  ASSERT_EQ(ticks.size(), expected.size());
  for (std::size_t i = 0; i < ticks.size(); ++i) EXPECT_NEAR(ticks[i], expected[i], 1e-9);
  // Over many maxima: 0 first, a step of 1, 2, 2.5 or 5 x 10^k, at most 6
  // intervals, the last tick the first multiple of the step at or above the max.
  for (const double max : {0.037, 0.9, 1.0, 7.0, 26.0, 103.0, 114.5, 129.4, 999.0, 1e6 + 1}) {
    const auto t = pb::axis_ticks(max);
    ASSERT_GE(t.size(), 2u) << max;
    EXPECT_EQ(t.front(), 0.0);
    const double step = t[1] - t[0];
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    EXPECT_TRUE(std::fabs(mantissa - 1) < 1e-6 || std::fabs(mantissa - 2) < 1e-6 || std::fabs(mantissa - 2.5) < 1e-6 ||
                std::fabs(mantissa - 5) < 1e-6)
        << "max " << max << ": step " << step;
    EXPECT_LE(t.size() - 1, 6u) << max;
    EXPECT_GE(t.back(), max * (1 - 1e-12)) << max;
    EXPECT_LT(t.back() - step, max) << max;
  }
  // The chart's axis: a 129.4 GFLOP/s bar gets the ticks 0, 25, ..., 150.
  pb::BenchTable tbl;
  tbl.rows = {timed("hand", "s", 1 / 129.4)};
  const auto shown = numbers_of_class(pb::render_svg(tbl, "gemm", nullptr, "fp32", "fp64"), "tick");
  ASSERT_EQ(shown.size(), expected.size());
  for (std::size_t i = 0; i < shown.size(); ++i) EXPECT_NEAR(shown[i], expected[i], 1e-9);
}

TEST(BenchReport, ChartShowsShapesSmallestFirstTiesByName) {
  auto row = [](const std::string& shape, double flop) {
    auto r = timed("hand", shape, 0.01);
    r.work_per_iter = flop;
    return r;
  };
  pb::BenchTable t;
  t.rows = {row("big", 8e9), row("small", 1e6), row("tie_b", 1e7), row("mid", 1e8), row("tie_a", 1e7)};  // run order
  const std::vector<std::string> by_size = {"small", "tie_a", "tie_b", "mid", "big"};
  EXPECT_EQ(pb::shapes_by_size(t), by_size);
  const auto svg = pb::render_svg(t, "gemm", nullptr, "fp32", "fp64");
  std::size_t previous = 0;
  for (const auto& shape : by_size) {
    const auto at = svg.find(">" + shape + "<");
    ASSERT_NE(at, std::string::npos) << shape;
    EXPECT_GT(at, previous) << shape << " is drawn out of size order";
    previous = at;
  }
}

TEST(BenchReport, ValueLabelsOfNeighbouringBarsDoNotOverlap) {
  // The figures that overlapped when lying flat: 114.5 and 113.1 on bars 18 px apart.
  pb::BenchTable t;
  t.rows = {timed("ceiling", "square_1k", 1 / 114.5), timed("wrapped", "square_1k", 1 / 113.1),
            timed("hand", "square_1k", 1 / 114.0)};
  const auto svg = pb::render_svg(t, "gemm", nullptr, "fp32", "fp64");
  // Each label's box from its placement, with generous sans-serif metrics (a
  // character 0.65 em long, a line 1.2 em thick: more than DejaVu Sans or
  // Helvetica take), whether it lies flat (text-anchor start) or is turned a
  // quarter turn and centred on its point (dominant-baseline central).
  struct Box {
    double x0, y0, x1, y1;
  };
  std::vector<Box> boxes;
  const std::regex label(
      "<text class=\"value\" transform=\"translate\\(([-0-9.e+]+),([-0-9.e+]+)\\)( rotate\\((-?[0-9]+)\\))?\"[^>]*"
      "font-size=\"([0-9.]+)\"[^>]*>([^<]*)<");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), label); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    const double x = std::stod(m[1].str()), y = std::stod(m[2].str()), size = std::stod(m[5].str());
    const double along = 0.65 * size * double(m[6].str().size()), across = 1.2 * size;
    const int turn = m[4].matched ? std::stoi(m[4].str()) : 0;
    ASSERT_TRUE(turn == 0 || turn == -90) << "a label turned by " << turn << " degrees: no box model for it";
    boxes.push_back(turn == -90 ? Box{x - across / 2, y - along, x + across / 2, y}
                                : Box{x, y - size, x + along, y - size + across});
  }
  ASSERT_EQ(boxes.size(), 3u) << svg;
  for (std::size_t i = 0; i < boxes.size(); ++i)
    for (std::size_t j = i + 1; j < boxes.size(); ++j) {
      const Box &a = boxes[i], &b = boxes[j];
      const bool apart = a.x1 <= b.x0 || b.x1 <= a.x0 || a.y1 <= b.y0 || b.y1 <= a.y0;
      EXPECT_TRUE(apart) << "labels " << i << " and " << j << " overlap: [" << a.x0 << ", " << a.x1 << "] and [" << b.x0
                         << ", " << b.x1 << "]";
    }
}

TEST(BenchInterval, MedianIntervalCoversTheMedianAndWidensWithTrialSpread) {
  const auto row = timed("hand", "s", 2.0, 0.1);
  const auto ci = pb::median_interval(pb::TrialSamples{&row.samples, &row.trials});
  EXPECT_DOUBLE_EQ(ci.ratio, 2.0);
  EXPECT_LE(ci.lo, 2.0);
  EXPECT_GE(ci.hi, 2.0);
  EXPECT_LT(ci.lo, 1.95);  // the 10% trial spread shows
  EXPECT_GT(ci.hi, 2.05);
  EXPECT_EQ(ci.df, 5);
}

TEST(BenchReport, ARowJustAboveTheLlcFasterThanItsDramBoundIsCacheResident) {
  // Peaks: 100 GFLOP/s, 10 GB/s, measured LLC 16 MiB. At 1 flop/B the DRAM bound is 10 GFLOP/s.
  pb::BenchTable t;
  t.set_meta("roofline_peaks", "fp32=100/200 fp64=50/100 bw=10/20 llc_mib=16 cores=2");
  auto row = [](double bytes, double gflops) {
    auto r = timed("hand", "s", bytes / (gflops * 1e9));
    r.bytes_per_iter = r.work_per_iter = bytes;
    return r;
  };
  const double mib24 = 24.0 * 1024 * 1024;
  t.rows = {row(mib24, 5)};  // half the DRAM bound: DRAM
  auto f = pb::table_figures(t);
  ASSERT_TRUE(f[0].shapes[0].bound);
  EXPECT_EQ(f[0].shapes[0].bound->limit, "DRAM");
  EXPECT_NEAR(f[0].shapes[0].hand_pct_of_bound, 50.0, 0.5);
  t.rows = {row(mib24, 20)};  // twice what DRAM can feed, 24 MiB: from cache, 20% of the compute peak
  f = pb::table_figures(t);
  EXPECT_NE(f[0].shapes[0].bound->limit.find("cache-resident"), std::string::npos) << f[0].shapes[0].bound->limit;
  EXPECT_NEAR(f[0].shapes[0].hand_pct_of_bound, 20.0, 0.5);
  t.rows = {row(1e9, 20)};  // 1 GB cannot be cached: the bound's bandwidth is wrong, so the bound is invalid
  f = pb::table_figures(t);
  EXPECT_EQ(f[0].shapes[0].bound->limit, "DRAM");
  EXPECT_TRUE(std::isnan(f[0].shapes[0].hand_pct_of_bound));
  EXPECT_NE(f[0].shapes[0].bound_invalid.find("hand measured at 200.0% of its DRAM bound"), std::string::npos)
      << f[0].shapes[0].bound_invalid;
  EXPECT_NE(pb::bound_cell(f[0].shapes[0], pb::throughput_scale(t)).find("(invalid: hand measured at 200.0%"),
            std::string::npos);
  t.rows = {row(1e9, 9.9)};  // just within it: valid
  EXPECT_TRUE(pb::table_figures(t)[0].shapes[0].bound_invalid.empty());
}

TEST(BenchReport, ItemRatesGetAPrefixThatShowsThemAndOtherTiersAreListed) {
  // Decode: 8 tokens per iteration in 0.15 s is 53 tokens/s, which "G items/s" would print as 0.00.
  pb::BenchTable t;
  auto hand = timed("hand", "canary_t8", 0.15);
  auto device = timed("device", "canary_t8", 8.0);
  for (auto* r : {&hand, &device}) r->work_per_iter = 8, r->work_unit = "items";
  device.key.backend = "vulkan:llvmpipe";
  t.rows = {hand, device};
  const auto sc = pb::throughput_scale(t);
  EXPECT_EQ(sc.unit, "items/s");
  EXPECT_DOUBLE_EQ(sc.factor, 1.0);
  const auto md = pb::render_markdown(t, "decode");
  EXPECT_NE(md.find("| 53.33 |"), std::string::npos) << md;
  const auto other = md.find("## Other tiers");
  ASSERT_NE(other, std::string::npos) << md;
  EXPECT_NE(md.find("| device | vulkan:llvmpipe | canary_t8 | f32 | 1 | 1 |", other), std::string::npos) << md;
  t.rows[0].work_per_iter = 8e6;  // 53 M items/s
  EXPECT_EQ(pb::throughput_scale(t).unit, "M items/s");
  t.rows = {timed("hand", "s", 1.0)};  // flop rows stay in GFLOP/s
  EXPECT_EQ(pb::throughput_scale(t).unit, "GFLOP/s");
}

TEST(BenchReport, RatiosCompareTimePerUnitOfWorkSoABatchedRowMeetsASingleCall) {
  // The device suite times a batch of 8 GEMMs an iteration, the ceiling one:
  // the hand kernel at 0.8x the ceiling's throughput takes 8 / 0.8 = 10x its time.
  pb::BenchTable t;
  auto ceiling = timed("ceiling", "s", 1.0);
  auto hand = timed("hand", "s", 10.0);
  auto wrapped = timed("wrapped", "s", 8.0);
  hand.work_per_iter = wrapped.work_per_iter = 8 * ceiling.work_per_iter;
  wrapped.key.backend = ceiling.key.backend;
  t.rows = {ceiling, hand, wrapped};
  const auto f = pb::table_figures(t);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].shapes[0].hand_vs_ceiling, 0.8, 1e-12);
  EXPECT_NEAR(f[0].shapes[0].wrapped_vs_ceiling, 1.0, 1e-12);
  EXPECT_NEAR(f[0].shapes[0].ffi, 1.0, 1e-12);
}

TEST(BenchReport, WithoutARooflineTheBoundIsTheRowsMeasuredPeak) {
  // A device table carries no host roofline: the bound is the peak its rows'
  // pct_of_peak divides by, and % bound is that pct_of_peak.
  pb::BenchTable t;
  t.set_meta("device_peaks", "popper peak --device; f32: device_fp32");
  auto ceiling = timed("ceiling", "s", 1.0);
  auto hand = timed("hand", "s", 2.0);
  ceiling.pct_of_peak = 80, hand.pct_of_peak = 40;
  t.rows = {ceiling, hand};
  const auto f = pb::table_figures(t);
  EXPECT_FALSE(f[0].shapes[0].bound);
  EXPECT_NEAR(f[0].shapes[0].hand_pct_of_bound, 40, 1e-12);
  EXPECT_NEAR(f[0].shapes[0].ceiling_pct_of_bound, 80, 1e-12);
  EXPECT_NEAR(f[0].shapes[0].peak, hand.throughput() / 0.4, 1e-6 * f[0].shapes[0].peak);
  const auto md = pb::render_markdown(t, "gemm");
  EXPECT_NE(md.find("(measured peak)"), std::string::npos) << md;
  EXPECT_NE(md.find("Bound = the device's measured peak"), std::string::npos) << md;
  // A ceiling above that peak (the q4k GEMV reading a footprint in the LLC faster than the triad): invalid.
  t.rows[0] = timed("ceiling", "s", 2.0 / 3.75);  // 3.75x the hand row's 40%
  t.rows[0].pct_of_peak = 150;
  const auto over = pb::table_figures(t)[0].shapes[0];
  EXPECT_NE(over.bound_invalid.find("ceiling measured at 150.0% of its measured peak bound"), std::string::npos)
      << over.bound_invalid;
  EXPECT_TRUE(std::isnan(over.hand_pct_of_bound));
  EXPECT_TRUE(std::isnan(over.ceiling_pct_of_bound));
}

// A table that counts items (decode: tokens) shows its bound in the unit of its
// throughput columns, not in giga-units that round a 60 tokens/s bound to 0.0.
TEST(BenchReport, AnItemsTableShowsItsBoundInItsOwnUnit) {
  pb::BenchTable t;
  auto hand = timed("hand", "canary", 8.0 / 40);  // 8 tokens in 0.2 s: 40 tokens/s
  hand.work_per_iter = 8;
  hand.work_unit = "items";
  hand.pct_of_peak = 50;
  t.rows = {hand};
  const auto scale = pb::throughput_scale(t);
  EXPECT_EQ(scale.unit, "items/s");
  EXPECT_EQ(pb::bound_cell(pb::table_figures(t)[0].shapes[0], scale), "80.0 (measured peak)");
  EXPECT_NE(pb::render_markdown(t, "decode").find("| 80.0 (measured peak) |"), std::string::npos);
}

// Where the suite read an items row's own footprint (decode: one token's
// weights), that read bounds the row, not the triad behind its pct_of_peak:
// one Zen 4 thread decoded the canary at 110% of the triad.
TEST(BenchReport, AnItemsRowIsBoundedByTheReadOfItsFootprint) {
  auto table = [](double tokens_per_second) {
    pb::BenchTable t;
    auto hand = timed("hand", "canary", 8.0 / tokens_per_second);
    hand.work_per_iter = 8;
    hand.work_unit = "items";
    hand.bytes_per_iter = 8e9;                        // 1 GB a token
    hand.pct_of_peak = 100 * tokens_per_second / 36;  // a triad of 36 GB/s
    hand.read_bound = 50e9;                           // 50 tokens/s
    t.rows = {hand};
    t.set_footprint_reads();
    return t;
  };
  const pb::BenchTable t = table(40);  // 111% of the triad
  const auto f = pb::table_figures(t)[0].shapes[0];
  EXPECT_TRUE(f.bound_invalid.empty()) << f.bound_invalid;
  EXPECT_NEAR(f.peak, 50, 1e-9);
  EXPECT_NEAR(f.hand_pct_of_bound, 80, 1e-9);
  EXPECT_EQ(pb::bound_cell(f, pb::throughput_scale(t)), "50.0 (read of its footprint)");
  // A row above its read is above a bound, and is said to be.
  const auto over = pb::table_figures(table(60))[0].shapes[0];
  EXPECT_NE(over.bound_invalid.find("120.0% of its footprint's read bound"), std::string::npos) << over.bound_invalid;
  EXPECT_TRUE(std::isnan(over.hand_pct_of_bound));
}

TEST(BenchReport, FfiOverheadComparesTheSameOpenBlasCore) {
  // Haswell ceiling is faster, but the wrapped tier ran on Zen: FFI overhead is
  // measured against the Zen ceiling (1.01), not the best core (1.5).
  pb::BenchTable t;
  auto zen = timed("ceiling", "s", 1.5);
  zen.key.backend = "openblas:Zen";
  auto haswell = timed("ceiling", "s", 1.0);
  haswell.key.backend = "openblas:Haswell";
  auto wrapped = timed("wrapped", "s", 1.515);
  wrapped.key.backend = "openblas:Zen";
  t.rows = {zen, haswell, wrapped};
  EXPECT_EQ(pb::best_row(t, pb::Tier::Ceiling, "s", "f32", 1)->key.backend, "openblas:Haswell");
  const auto md = pb::render_markdown(t, "gemm");
  EXPECT_NE(md.find("(openblas:Haswell) | 0.66 | — | — | 1.010× | 0.660× |"), std::string::npos) << md;
  popper::BenchmarkClaim claim;
  claim.id = "BENCH-GEMM-001";
  claim.family = "gemm";
  claim.metric = "time_ratio";
  claim.numerator = "wrapped";
  claim.denominator = "ceiling";
  claim.op = "<";
  claim.threshold = 1.02;
  const auto res = pb::evaluate_claims({contract_with(claim)}, "gemm", t, nullptr, {}, {"s"});
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::Met) << res[0].detail;
  // No ceiling of the wrapped tier's configuration (the train family's wrapped
  // step over OpenBLAS, its ceiling libtorch): no FFI figure, not one against the best.
  t.rows = {haswell, wrapped};
  EXPECT_TRUE(std::isnan(pb::table_figures(t)[0].shapes[0].ffi));
}

// A tier whose result failed verification makes its claim not_met, however
// fast it was, and the detail says which row.
TEST(BenchClaims, AnIncorrectRowMakesTheClaimNotMet) {
  popper::BenchmarkClaim claim;
  claim.id = "BENCH-GEMM-001";
  claim.family = "gemm";
  claim.metric = "throughput_ratio";
  claim.numerator = "hand";
  claim.denominator = "ceiling";
  claim.op = ">=";
  claim.threshold = 0.5;
  pb::BenchTable t;
  t.rows = {timed("ceiling", "a", 1.0), timed("hand", "a", 1.0), timed("ceiling", "b", 1.0), timed("hand", "b", 0.5)};
  ASSERT_EQ(pb::evaluate_claims({contract_with(claim)}, "gemm", t, nullptr, {}, {"a", "b"})[0].verdict,
            pb::ClaimVerdict::Met);
  t.rows[3].verdict =
      pb::Verdict::parse("incorrect: max err 1.0e+00 > bound 1.0e-05");  // as ingested: skipped, no samples
  t.rows[3].samples.clear();
  t.rows[3].trials.clear();
  const auto res = pb::evaluate_claims({contract_with(claim)}, "gemm", t, nullptr, {}, {"a", "b"});
  EXPECT_EQ(res[0].verdict, pb::ClaimVerdict::NotMet) << res[0].detail;
  EXPECT_NE(res[0].detail.find("incorrect"), std::string::npos) << res[0].detail;
}

TEST(BenchFamily, DeviceBlockGivesTheDeviceRun) {
  const auto f = pb::parse_family_yaml(
      "family: gemm\nceilings: [cblas_gemm_raw]\nblas_core_types: true\npeak: {f32: fp32}\n"
      "device:\n  env: {POPPER_BENCH_DEVICE: cuda}\n  ceilings: [cublas_gemm_raw]\n"
      "  peak: {f32: device_fp32, bf16: device_bf16}\n",
      "family.yaml");
  const auto d = pb::on_device(f);
  EXPECT_EQ(d.ceilings, std::vector<std::string>{"cublas_gemm_raw"});
  EXPECT_FALSE(d.blas_core_types);
  EXPECT_EQ(d.peak.at("bf16"), "device_bf16");
  ASSERT_EQ(d.device->env.size(), 1u);
  EXPECT_EQ(d.device->env[0].second, "cuda");
  EXPECT_THROW(pb::on_device(pb::parse_family_yaml("family: q4k\n", "q4k.yaml")), popper::Error);
  EXPECT_THROW(pb::parse_family_yaml("family: g\ndevice:\n  peak: {f32: warp}\n", "g.yaml"), popper::Error);
}

// The host CPU's pace and link set trials aside (pace.hpp); rows the device
// times with its own events must not lose trials to the host's noise.
TEST(BenchFamily, OnlyRowsTheHostTimedAreJudgedByTheHostsPace) {
  const auto f = pb::parse_family_yaml(
      "family: gemm\nceilings: [cblas_gemm_raw]\ndevice:\n  ceilings: [cublas_gemm_raw]\n  peak: {f16: device_f16}\n",
      "family.yaml");
  EXPECT_TRUE(pb::host_timed(f, pb::Tier::Hand));
  EXPECT_FALSE(pb::host_timed(f, pb::Tier::Device));
  EXPECT_FALSE(pb::host_timed(pb::on_device(f), pb::Tier::Hand));  // a cuBLAS ceiling or hand CUDA kernel
}

// Work accounting: fewer instructions a call than the declared FLOP over the
// widest vector instruction of the precision is implausible; at or above it,
// or work not counted in FLOP, nothing is said.
TEST(BenchGate, AGateRowRetiringFewerInstructionsThanItsWorkNeedsIsImplausible) {
  pb::BenchRow r = timed("hand", "cpu:avx512", 1.0);
  r.work_per_iter = 2.0 * 64 * 64 * 64;  // small_64: 524288 FLOP, f32: at least 16384 512-bit FMAs
  EXPECT_EQ(pb::implausibly_few_instructions(r, 16384), "");
  EXPECT_NE(pb::implausibly_few_instructions(r, 200).find("200 instructions a call for 5.243e+05 FLOP"),
            std::string::npos);
  r.key.precision = "f64";
  EXPECT_NE(pb::implausibly_few_instructions(r, 16384), "");  // f64 needs 32768
  r.work_unit = "items";
  EXPECT_EQ(pb::implausibly_few_instructions(r, 1), "");
}
