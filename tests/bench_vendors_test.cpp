// The vendor check's mis-detection finding (bench/vendors.hpp): a library whose
// own CPU detection picks slower kernels than one it can run here is reported
// with the factor and the fix, whichever library it is (Debian's OpenBLAS
// 0.3.21, for one, takes a Sapphire Rapids Xeon for a Prescott).
#include <gtest/gtest.h>

#include <map>

#include "bench/vendors.hpp"

namespace pb = popper::bench;

namespace {

pb::VendorConfig openblas(std::optional<std::string> value, bool inherited, const std::string& selected, double f32,
                          double f64) {
  pb::VendorConfig c;
  c.vendor = "openblas";
  c.program = "cblas_gemm_raw";
  c.variable = "OPENBLAS_CORETYPE";
  c.value = std::move(value);
  c.inherited = inherited;
  c.requested = c.value.value_or("");
  c.selected = selected;
  c.check_seconds[0] = f32;
  c.check_seconds[1] = f64;
  return c;
}

}  // namespace

TEST(BenchVendors, OpenBlasPrescottOnAnAvx512XeonIsReportedWithTheFix) {
  const std::vector<pb::VendorConfig> configs = {
      openblas(std::nullopt, true, "Prescott", 0.030, 0.060),  // what a user gets: detection unset
      openblas("Haswell", false, "Haswell", 0.012, 0.024), openblas("SkylakeX", false, "SkylakeX", 0.008, 0.016)};
  const auto found = pb::find_misdetections(configs, "square_1k");
  ASSERT_EQ(found.size(), 1u);
  const auto& m = found[0];
  EXPECT_EQ(m.vendor, "openblas");
  EXPECT_EQ(m.selected, "Prescott");
  EXPECT_EQ(m.best, "SkylakeX");
  EXPECT_NEAR(m.factor, 3.75, 1e-9);
  EXPECT_NE(m.message.find("OpenBLAS picks its Prescott kernels by itself"), std::string::npos) << m.message;
  EXPECT_NE(m.message.find("Fix: export OPENBLAS_CORETYPE=SkylakeX"), std::string::npos) << m.message;
}

TEST(BenchVendors, NoWarningWhenTheDetectedKernelsAreWithinTheThreshold) {
  const std::vector<pb::VendorConfig> configs = {openblas(std::nullopt, true, "SkylakeX", 0.0081, 0.0160),
                                                 openblas("Haswell", false, "Haswell", 0.012, 0.024),
                                                 openblas("SkylakeX", false, "SkylakeX", 0.0080, 0.0161)};
  EXPECT_TRUE(pb::find_misdetections(configs, "square_1k").empty());
}

TEST(BenchVendors, AnEnvironmentSettingIsNamedAsTheCause) {
  const std::vector<pb::VendorConfig> configs = {openblas("Prescott", true, "Prescott", 0.030, 0.060),
                                                 openblas(std::nullopt, false, "SkylakeX", 0.008, 0.016)};
  const auto found = pb::find_misdetections(configs, "square_1k");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].message.find("because OPENBLAS_CORETYPE=Prescott is set in this environment"), std::string::npos)
      << found[0].message;
  EXPECT_NE(found[0].message.find("Fix: unset OPENBLAS_CORETYPE"), std::string::npos) << found[0].message;
}

// Screening keeps the configurations that can win a row (vendors.hpp step 4):
// the wrapped tier's inherited one, each vendor's fastest, and any other more
// than the margin faster than all of those somewhere: on an AVX-512 Xeon a
// plain 1.5x screen keeps nine configurations, four of them BLIS builds within
// 2% of each other, and the default gemm run spends three quarters of its 5-6
// minutes in ceiling processes.
namespace {

pb::VendorConfig screened(const std::string& vendor, const std::string& name, bool inherited,
                          std::map<std::string, double> seconds) {
  pb::VendorConfig c;
  c.vendor = vendor;
  c.program = vendor == "blis" ? "blis_gemm_raw" : "cblas_gemm_raw";
  c.variable = vendor == "blis" ? "BLIS_ARCH_TYPE" : "OPENBLAS_CORETYPE";
  c.inherited = inherited;
  c.requested = c.selected = name;
  if (!inherited) c.value = name;
  c.screen_seconds = std::move(seconds);
  return c;
}

std::map<std::string, pb::ConfigStatus> statuses(const std::vector<pb::VendorConfig>& cs) {
  std::map<std::string, pb::ConfigStatus> out;
  for (const auto& c : cs) out[c.backend()] = c.status;
  return out;
}

}  // namespace

TEST(BenchVendors, ScreeningKeepsOneOfConfigurationsThatTimeAlikeAndEachThatWinsARow) {
  const std::string small = pb::screen_row("small_128", "f32", 2), wide = pb::screen_row("wide_640", "f32", 1);
  std::vector<pb::VendorConfig> cs = {
      screened("openblas", "SkylakeX", true, {{small, 2.0}, {wide, 1.0}}),
      screened("openblas", "Cooperlake", false, {{small, 1.99}, {wide, 1.01}}),  // SkylakeX's kernels: no row to win
      screened("blis", "haswell", false, {{small, 1.02}, {wide, 1.5}}),
      screened("blis", "zen3", false, {{small, 1.00}, {wide, 1.52}}),  // fastest BLIS
      screened("blis", "zen2", false, {{small, 1.01}, {wide, 1.51}}),
      screened("blis", "skx", false, {{small, 1.9}, {wide, 0.9}}),  // wins wide_640 by 10%
  };
  pb::screen_for_wins(cs, "openblas", 1.05);
  const auto st = statuses(cs);
  EXPECT_EQ(st.at("openblas:SkylakeX"), pb::ConfigStatus::Run) << "the wrapped tier's reference";
  EXPECT_EQ(st.at("blis:zen3"), pb::ConfigStatus::Run) << "BLIS's fastest";
  EXPECT_EQ(st.at("blis:skx"), pb::ConfigStatus::Run) << "10% faster than every kept one on wide_640";
  EXPECT_EQ(st.at("openblas:Cooperlake"), pb::ConfigStatus::ScreenedOut);
  EXPECT_EQ(st.at("blis:haswell"), pb::ConfigStatus::ScreenedOut);
  EXPECT_EQ(st.at("blis:zen2"), pb::ConfigStatus::ScreenedOut);
  for (const auto& c : cs) {
    if (c.backend() == "blis:zen2") {
      EXPECT_NE(c.reason.find("at best 1.01x their time, on small_128 f32 2t"), std::string::npos) << c.reason;
    }
  }
}

TEST(BenchVendors, ScreeningKeepsEveryVendorsFastestAndTheWrappedReferenceWhateverTheirSpeed) {
  const std::string row = pb::screen_row("small_64", "f64", 1);
  std::vector<pb::VendorConfig> cs = {
      screened("openblas", "Prescott", true, {{row, 9.0}}),  // misdetected, but the wrapped tier calls it
      screened("openblas", "Haswell", false, {{row, 3.0}}),  // OpenBLAS's fastest, 3x behind BLIS
      screened("blis", "generic", true, {{row, 5.0}}),       // inherited, the wrapped tier calls OpenBLAS
      screened("blis", "skx", false, {{row, 1.0}}),
  };
  pb::VendorConfig untimed = screened("openblas", "Zen", false, {});  // no screening timings: not judged
  cs.push_back(untimed);
  pb::screen_for_wins(cs, "openblas", 1.05);
  const auto st = statuses(cs);
  EXPECT_EQ(st.at("openblas:Prescott"), pb::ConfigStatus::Run);
  EXPECT_EQ(st.at("openblas:Haswell"), pb::ConfigStatus::Run);
  EXPECT_EQ(st.at("blis:skx"), pb::ConfigStatus::Run);
  EXPECT_EQ(st.at("blis:generic"), pb::ConfigStatus::ScreenedOut);
  EXPECT_EQ(st.at("openblas:Zen"), pb::ConfigStatus::Run);
}

TEST(BenchVendors, ScreeningKeepsAConfigurationOnlyBeyondTheMargin) {
  const std::string a = pb::screen_row("small_256", "f32", 1), b = pb::screen_row("small_256", "f32", 2);
  auto run = [&](double faster) {
    std::vector<pb::VendorConfig> cs = {screened("blis", "zen3", false, {{a, 1.0}, {b, 1.0}}),
                                        screened("blis", "skx", false, {{a, 1.2}, {b, 1.0 / faster}})};
    pb::screen_for_wins(cs, "openblas", 1.05);
    return statuses(cs).at("blis:skx");
  };
  EXPECT_EQ(run(1.04), pb::ConfigStatus::ScreenedOut) << "4% faster on one row: within the screening's noise";
  EXPECT_EQ(run(1.06), pb::ConfigStatus::Run) << "6% faster on one row: it can win it";
}

// libtorch runs its GEMMs on OpenBLAS, so the train family's peer is timed
// under every OpenBLAS kernel set too: on a Zen 5 guest whose environment set
// OPENBLAS_CORETYPE=Haswell, its step took 1.49-1.68x its time on Cooperlake.
TEST(BenchVendors, LibtorchIsTimedUnderEveryOpenBlasKernelSet) {
  const auto cands = pb::candidate_configs("torch_train_raw", true);
  ASSERT_GT(cands.size(), 3u);
  EXPECT_TRUE(cands.front().inherited);
  bool cooperlake = false;
  for (const auto& c : cands) {
    EXPECT_EQ(c.vendor, "libtorch");
    EXPECT_EQ(c.variable, "OPENBLAS_CORETYPE");
    cooperlake = cooperlake || (c.value && *c.value == "Cooperlake");
  }
  EXPECT_TRUE(cooperlake);
  EXPECT_EQ(pb::candidate_configs("torch_train_raw", false).size(), 1u);  // blas_core_types: false
  EXPECT_EQ(pb::candidate_configs("ggml_q4k_raw", true).size(), 1u);      // ggml has no such choice
}

namespace {

// A warm ceiling row of `backend` on `shape` (f32) at `threads`, `seconds` a call.
pb::BenchRow ceiling_row(const std::string& backend, const std::string& shape, int threads, double seconds) {
  pb::BenchRow r;
  r.key = {"train", pb::Tier::Ceiling, backend, shape, "f32", threads, "warm"};
  r.samples = {seconds, seconds};
  r.trials = {0, 1};
  return r;
}

// The screening on `tiny`: the inherited Cooperlake kernels 1.23x slower than SkylakeX.
pb::CeilingPlan screened_on_tiny() {
  pb::CeilingPlan plan;
  plan.configs = {openblas(std::nullopt, true, "Cooperlake", 0.0123, 0),
                  openblas("SkylakeX", false, "SkylakeX", 0.010, 0), openblas("Zen", false, "Zen", 0.0125, 0)};
  plan.warnings = pb::find_misdetections(plan.configs, "tiny");
  return plan;
}

}  // namespace

// Rule: the screening's advice is withdrawn where the run's own rows show the
// inherited kernels within the threshold of every configuration timed on
// every group (stop 84's train run: SkylakeX won `tiny`, lost `small`).
TEST(BenchVendors, AScreeningsAdviceTheTimedRowsContradictIsWithdrawn) {
  auto plan = screened_on_tiny();
  ASSERT_EQ(plan.warnings.size(), 1u);
  pb::BenchTable t;
  t.rows = {ceiling_row("openblas:Cooperlake", "small", 1, 1.00), ceiling_row("openblas:SkylakeX", "small", 1, 1.02),
            ceiling_row("openblas:Zen", "small", 1, 0.97), ceiling_row("openblas:Cooperlake", "small", 2, 0.55),
            ceiling_row("openblas:SkylakeX", "small", 2, 0.57)};
  const auto said = pb::confirm_misdetections(plan, t);
  EXPECT_TRUE(plan.warnings.empty());
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("withdrawn: on the 2 group(s) timed"), std::string::npos) << said[0];
}

// Rule: where the timed rows confirm a lag, the warning is restated from the
// group where the inherited kernels lag most, with that group's fastest
// configuration as the fix; without a timed group the screening's stands.
TEST(BenchVendors, AScreeningsAdviceTheTimedRowsConfirmIsRestatedFromThem) {
  auto plan = screened_on_tiny();
  pb::BenchTable t;
  t.rows = {ceiling_row("openblas:Cooperlake", "small", 1, 1.00), ceiling_row("openblas:Zen", "small", 1, 0.95),
            ceiling_row("openblas:Cooperlake", "small", 2, 0.80), ceiling_row("openblas:Zen", "small", 2, 0.50)};
  const auto said = pb::confirm_misdetections(plan, t);
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_EQ(plan.warnings[0].shape, "small at 2 threads");
  EXPECT_NEAR(plan.warnings[0].factor, 1.6, 1e-9);
  EXPECT_NE(plan.warnings[0].message.find("Fix: export OPENBLAS_CORETYPE=Zen"), std::string::npos)
      << plan.warnings[0].message;
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("the screening read tiny 1.23x"), std::string::npos) << said[0];

  auto untimed = screened_on_tiny();
  t.rows = {ceiling_row("openblas:Cooperlake", "small", 1, 1.00)};  // no other configuration timed
  EXPECT_TRUE(pb::confirm_misdetections(untimed, t).empty());
  ASSERT_EQ(untimed.warnings.size(), 1u);
  EXPECT_EQ(untimed.warnings[0].shape, "tiny");
}
