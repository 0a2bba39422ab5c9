#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "popper/binding.hpp"

TEST(Params, TypedGettersAndDefaults) {
  popper::Params p("FALSIFY-X-001", {{"tol", 1e-6}, {"n", 7}, {"shapes", {{{"m", 2}}}}});
  EXPECT_DOUBLE_EQ(p.number("tol"), 1e-6);
  EXPECT_EQ(p.integer("n"), 7);
  EXPECT_EQ(p.integer("absent", 3), 3);
  EXPECT_THROW(p.integer("absent"), popper::ParamError);
  EXPECT_THROW(p.string("n"), popper::ParamError);
  ASSERT_EQ(p.list("shapes").size(), 1u);
  EXPECT_EQ(p.list("shapes")[0].integer("m"), 2);
}

// Each build proves its own branch: make test the native one, make asan the sanitizer one.
TEST(Params, EmulatedOverridesApplyOnlyUnderAnEmulatedCpuOrASanitizerBuild) {
  const popper::Params p("FALSIFY-X-002", {{"l", {64, 4096}}, {"n", 3}, {"emulated", {{"l", {64}}}}});
  ::unsetenv("POPPER_CPU_MODEL");
  if (popper::sanitizer_build()) EXPECT_EQ(p.integers("l"), (std::vector<std::int64_t>{64}));
  else EXPECT_EQ(p.integers("l"), (std::vector<std::int64_t>{64, 4096}));
  ::setenv("POPPER_CPU_MODEL", "Nehalem", 1);
  EXPECT_EQ(p.integers("l"), (std::vector<std::int64_t>{64}));
  EXPECT_EQ(p.integer("n"), 3) << "keys the emulated map does not name keep their value";
  ::unsetenv("POPPER_CPU_MODEL");
}

// The site a result names: an ISA cap is said, and is no emulator; the
// CPU path it picks is recorded as forced.
TEST(ExecutionSite, NamesTheEmulatorAndTheIsaCap) {
  const char* cap = std::getenv("POPPER_ISA_MAX");
  const std::string saved = cap ? cap : "";
  ::unsetenv("POPPER_CPU_MODEL");
  ::unsetenv("POPPER_ISA_MAX");
  EXPECT_EQ(popper::execution_site(), "native");
  ::setenv("POPPER_ISA_MAX", "scalar", 1);
  EXPECT_EQ(popper::execution_site(), "native:isa-max=scalar");
  const popper::Params p("FALSIFY-X-002", {{"l", {64, 4096}}, {"emulated", {{"l", {64}}}}});
  if (!popper::sanitizer_build()) {
    EXPECT_EQ(p.integers("l"), (std::vector<std::int64_t>{64, 4096})) << "a cap is not an emulator";
  }
  popper::take_evidence();
  popper::record_backend("cpu:scalar");
  popper::record_backend("openblas:Haswell");
  const auto ev = popper::take_evidence();
  EXPECT_EQ(popper::format_backends(ev.backends), "cpu:scalar=forced,openblas:Haswell=auto")
      << "under a cap the CPU path is the cap's choice, a library's is still its own";
  ::setenv("POPPER_CPU_MODEL", "Haswell", 1);
  EXPECT_EQ(popper::execution_site(), "emulated:Haswell:isa-max=scalar");
  ::unsetenv("POPPER_ISA_MAX");
  EXPECT_EQ(popper::execution_site(), "emulated:Haswell");
  ::unsetenv("POPPER_CPU_MODEL");
  if (cap) ::setenv("POPPER_ISA_MAX", saved.c_str(), 1);
}
