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
