#include <cstdlib>
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
