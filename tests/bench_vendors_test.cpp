// The vendor check's mis-detection finding (bench/vendors.hpp): a library whose
// own CPU detection picks slower kernels than one it can run here is reported
// with the factor and the fix, whichever library it is. The case that prompted
// it: Debian's OpenBLAS 0.3.21 takes a Sapphire Rapids Xeon for a Prescott.
#include <gtest/gtest.h>

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
      openblas("Haswell", false, "Haswell", 0.012, 0.024),
      openblas("SkylakeX", false, "SkylakeX", 0.008, 0.016)};
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
