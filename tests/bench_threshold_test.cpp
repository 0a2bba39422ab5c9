// `popper bench threshold`: shape parameters, the "smallest axis value from
// which every larger one wins" rule, never, unmeasured rows, the spread flag,
// and the router config it writes.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "bench/threshold.hpp"

namespace pb = popper::bench;

namespace {

pb::BenchRow row(const std::string& tier, const std::string& shape, std::vector<double> samples, int threads = 1) {
  pb::BenchRow r;
  r.key = {"nsa",
           pb::tier_from(tier, "test"),
           tier == "hand" ? "cpu:avx512bf16" : "openblas:Haswell",
           shape,
           "bf16",
           threads,
           "warm"};
  r.samples = std::move(samples);
  r.work_per_iter = 1e6;
  r.verdict = pb::Verdict::parse("verified");
  return r;
}

// hand at 1 ms, wrapped at ratio x 1 ms, five tight samples each.
void pair(pb::BenchTable& t, const std::string& shape, double ratio, int threads = 1) {
  t.rows.push_back(row("hand", shape, {1.0e-3, 1.001e-3, 0.999e-3, 1.0e-3, 1.0e-3}, threads));
  t.rows.push_back(
      row("wrapped", shape, {ratio * 1e-3, ratio * 1.001e-3, ratio * 0.999e-3, ratio * 1e-3, ratio * 1e-3}, threads));
}

const pb::ThresholdGroup& group(const pb::ThresholdResult& r, long h, long d) {
  for (const auto& g : r.groups)
    if (g.key.at("h") == h && g.key.at("d") == d) return g;
  throw std::runtime_error("no group");
}

pb::ThresholdOptions nsa_options() {
  pb::ThresholdOptions o;
  o.family = "nsa";
  o.margin = 1.2;
  return o;
}

}  // namespace

TEST(BenchThreshold, ShapeParametersComeFromTheName) {
  const auto p = pb::shape_parameters("many_n1024_h8_d128_l4096");
  EXPECT_EQ(p.at("n"), 1024);
  EXPECT_EQ(p.at("h"), 8);
  EXPECT_EQ(p.at("d"), 128);
  EXPECT_EQ(p.at("l"), 4096);
  EXPECT_EQ(p.count("many"), 0u);
  EXPECT_TRUE(pb::shape_parameters("small_64").empty());  // digits without letters
  EXPECT_EQ(pb::shape_parameters("x_l12a").count("l"), 0u);
}

TEST(BenchThreshold, SmallestValueFromWhichEveryLargerOneWins) {
  pb::BenchTable t;
  // h4 d64: loses at 64, wins from 128 on (two dists, two thread counts).
  for (const char* dist : {"few", "many"})
    for (int th : {1, 2}) {
      pair(t, std::string(dist) + "_n256_h4_d64_l64", 1.1, th);
      pair(t, std::string(dist) + "_n256_h4_d64_l128", 1.3, th);
      pair(t, std::string(dist) + "_n256_h4_d64_l256", 2.0, th);
    }
  // h4 d128: wins at 64, loses at 128, wins at 256: the threshold is 256, not 64.
  pair(t, "few_n256_h4_d128_l64", 1.5);
  pair(t, "few_n256_h4_d128_l128", 1.19);
  pair(t, "few_n256_h4_d128_l256", 1.5);
  // h8 d64: loses at the largest value: never.
  pair(t, "few_n256_h8_d64_l64", 3.0);
  pair(t, "few_n256_h8_d64_l256", 1.0);
  // h8 d128: one row at the top loses: never, whatever the others say.
  pair(t, "few_n256_h8_d128_l256", 5.0);
  pair(t, "many_n256_h8_d128_l256", 1.1);
  const auto r = pb::derive_thresholds(t, nsa_options());
  ASSERT_EQ(r.groups.size(), 4u);
  EXPECT_EQ(group(r, 4, 64).min_axis, 128);
  EXPECT_EQ(group(r, 4, 64).rows.size(), 12u);
  EXPECT_EQ(group(r, 4, 128).min_axis, 256);
  EXPECT_FALSE(group(r, 8, 64).min_axis.has_value());
  EXPECT_NE(group(r, 8, 64).reason.find("never"), std::string::npos);
  EXPECT_FALSE(group(r, 8, 128).min_axis.has_value());
  EXPECT_NE(group(r, 8, 128).reason.find("many_n256_h8_d128_l256"), std::string::npos) << group(r, 8, 128).reason;
  // A ratio exactly at the margin wins.
  pb::BenchTable edge;
  pair(edge, "few_n1_h1_d1_l8", 1.2);
  EXPECT_EQ(pb::derive_thresholds(edge, nsa_options()).groups.at(0).min_axis, 8);
}

TEST(BenchThreshold, UnmeasuredRowsNeverWin) {
  pb::BenchTable t;
  pair(t, "few_n256_h4_d64_l64", 2.0);
  pair(t, "few_n256_h4_d64_l128", 2.0);
  t.rows.push_back(row("hand", "few_n256_h4_d64_l256", {}));
  t.rows.back().verdict = pb::Verdict::parse("incorrect: MAE 0.1 > 1e-3");
  t.rows.push_back(row("wrapped", "few_n256_h4_d64_l256", {2e-3, 2e-3, 2e-3}));
  t.rows.push_back(row("wrapped", "few_n256_h4_d64_l512", {2e-3}));  // no hand row at all
  const auto r = pb::derive_thresholds(t, nsa_options());
  const auto& g = group(r, 4, 64);
  EXPECT_FALSE(g.min_axis.has_value()) << g.reason;
  ASSERT_EQ(g.rows.size(), 4u);
  EXPECT_FALSE(g.rows[2].measured);
  EXPECT_NE(g.rows[2].note.find("incorrect"), std::string::npos) << g.rows[2].note;
  EXPECT_NE(g.rows[3].note.find("no hand row"), std::string::npos) << g.rows[3].note;
}

TEST(BenchThreshold, FiltersAndSpread) {
  pb::BenchTable t;
  pair(t, "gate_few_n16_h4_d64_l64", 0.5);
  pair(t, "few_n256_h4_d64_l64", 1.5, 1);
  pair(t, "few_n256_h4_d64_l64", 0.9, 2);
  t.rows.push_back(row("hand", "few_n256_h4_d64_l128", {1e-3, 1e-3, 2e-3, 2e-3}));
  t.rows.push_back(row("wrapped", "few_n256_h4_d64_l128", {2.2e-3, 2.2e-3, 2.2e-3, 2.2e-3}));
  auto o = nsa_options();
  o.exclude_shapes = {"gate_few_n16_h4_d64_l64"};
  o.threads = {1};
  const auto r = pb::derive_thresholds(t, o);
  const auto& g = group(r, 4, 64);
  EXPECT_EQ(g.min_axis, 64) << g.reason;
  ASSERT_EQ(g.rows.size(), 2u);
  // hand median 1.5 ms (ratio 1.47, wins) but q75 2 ms: the low end of the spread, 1.1, is below the margin.
  EXPECT_TRUE(g.rows[1].wins);
  EXPECT_NE(g.rows[1].note.find("noisy"), std::string::npos) << g.rows[1].ratio_low;
  EXPECT_THROW(pb::derive_thresholds(pb::BenchTable{}, o), popper::Error);
}

TEST(BenchThreshold, RouterConfigIsYamlTheRouterCanRead) {
  pb::BenchTable t;
  t.set_meta("commit", "abc123");
  t.set_meta("fingerprint", "machine-x");
  pair(t, "few_n256_h4_d64_l64", 2.0);
  pair(t, "few_n256_h8_d128_l64", 1.0);
  const auto r = pb::derive_thresholds(t, nsa_options());
  const auto text = pb::render_router_config(r, t, "reports/bench-nsa.csv");
  const YAML::Node y = YAML::Load(text);
  EXPECT_EQ(y["family"].as<std::string>(), "nsa");
  EXPECT_DOUBLE_EQ(y["margin"].as<double>(), 1.2);
  EXPECT_EQ(y["source"]["commit"].as<std::string>(), "abc123");
  ASSERT_EQ(y["thresholds"].size(), 2u);
  EXPECT_EQ(y["thresholds"][0]["h"].as<int>(), 4);
  EXPECT_EQ(y["thresholds"][0]["min_l"].as<int>(), 64);
  EXPECT_EQ(y["thresholds"][1]["min_l"].as<std::string>(), "never");
  const auto report = pb::render_threshold_report(r);
  EXPECT_NE(report.find("h=8 d=128: min l = never"), std::string::npos) << report;
  EXPECT_NE(report.find("few_n256_h4_d64_l64"), std::string::npos) << report;
}
