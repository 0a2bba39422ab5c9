// FALSIFY-SAE-006 (one backing allocation, the seed's #1033 test) and
// FALSIFY-SAE-011 (resident storage is exactly the payload).
#include <gtest/gtest.h>

#include "popper/binding.hpp"
#include "impl/sae/schur_pcg.hpp"
#include "testbed.hpp"

namespace {
using namespace popper::sae;

POPPER_FALSIFIER("FALSIFY-SAE-006", [](const popper::Params& prm) {
  const auto p = static_cast<std::size_t>(prm.integer("p"));
  // Two rows; block 2 is the seed's base offset 12 = 2 * p for p = 6.
  auto a_phi = std::make_shared<const SparsePhiRows>(SparsePhiRows::from_rows({{{0, 2.0}, {2, 1.0}}, {{0, 0.5}}}));
  auto jac = std::make_shared<const LocalJacRows>(
      LocalJacRows::from_rows({std::vector<double>(4 * p, 1.0), std::vector<double>(4 * p, 2.0)}));
  const SaeKroneckerRows host(p, 3, a_phi, jac);
  const auto fr = factor_gauss_newton_blocks(host, 1.0);
  ASSERT_TRUE(fr.ok());
  const SaeSchurSystem solver(host, fr.value(), 0.1);
  EXPECT_EQ(solver.rows().a_phi().get(), host.a_phi().get());
  EXPECT_EQ(solver.rows().local_jac().get(), host.local_jac().get());
  EXPECT_EQ(host.a_phi().get(), a_phi.get());
  EXPECT_EQ(host.local_jac().get(), jac.get());
  // original + host + solver; a deep clone anywhere would leave fewer.
  EXPECT_EQ(a_phi.use_count(), 3);
  EXPECT_EQ(jac.use_count(), 3);
  EXPECT_EQ(fr.value().use_count(), 2);  // factors: the result + the solver
  {
    const SaeKroneckerRows host_copy = host;  // copying the operator is a refcount bump
    EXPECT_EQ(jac.use_count(), 4);
    EXPECT_EQ(host_copy.local_jac().get(), jac.get());
  }
  EXPECT_EQ(jac.use_count(), 3);
  // The shared storage still serves a correct apply through the solver.
  std::vector<double> x(3 * p, 1.0), y(3 * p);
  solver.apply(x, y);
  double s = 0;
  for (double v : y) s += std::abs(v);
  EXPECT_GT(s, 0.0);
  if (!::testing::Test::HasFailure()) testbed::record_cpu_path();
});

POPPER_FALSIFIER("FALSIFY-SAE-011", [](const popper::Params& prm) {
  const auto cases = static_cast<std::size_t>(prm.integer("cases"));
  std::mt19937_64 rng(prm.seed());
  for (std::size_t c = 0; c < cases; ++c) {
    testbed::Shape s;
    s.rows = std::uniform_int_distribution<std::size_t>(0, 30)(rng);
    s.p = std::uniform_int_distribution<std::size_t>(1, 40)(rng);
    s.K = std::uniform_int_distribution<std::size_t>(1, 10)(rng);
    s.max_m = 6;
    s.max_q = 9;
    const auto pr = testbed::random_problem(s, rng);
    const auto rows = pr.make_rows();
    std::size_t scalars = 0, sum_m = 0;
    for (std::size_t i = 0; i < s.rows; ++i) {
      scalars += pr.m[i] + pr.q[i] * s.p;
      sum_m += pr.m[i];
    }
    EXPECT_EQ(rows.resident_scalars(), scalars) << "case " << c << " seed " << prm.seed();
    EXPECT_EQ(rows.resident_indices(), sum_m + 2 * (s.rows + 1)) << "case " << c << " seed " << prm.seed();
    EXPECT_EQ(rows.resident_bytes(), scalars * sizeof(double) + (sum_m + 2 * (s.rows + 1)) * sizeof(std::size_t));
  }
  if (!::testing::Test::HasFailure()) testbed::record_cpu_path();
});

}  // namespace
