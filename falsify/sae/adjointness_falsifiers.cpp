// FALSIFY-SAE-001/002: <J x, u> = <x, J^T u> and <L u, v> = <u, L^T v>.
// Both sides of each identity sum the same products in different orders, so
// |lhs - rhs| <= 2 gamma_{N+1} sum |products| (Higham 3.1), N = m p or q p.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cmath>
#include <limits>

#include "popper/binding.hpp"
#include "impl/sae/sae.hpp"
#include "testbed.hpp"

namespace {
using namespace popper::sae;

double gamma_n(double n) {
  const double u = std::numeric_limits<double>::epsilon() / 2;
  return n * u / (1 - n * u);
}

POPPER_FALSIFIER("FALSIFY-SAE-001", [](const popper::Params& prm) {
  const double tol = prm.number("rel_tol");
  const auto max_p = static_cast<std::size_t>(prm.integer("max_p"));
  const auto max_k = static_cast<std::size_t>(prm.integer("max_k"));
  const auto max_m = static_cast<std::size_t>(prm.integer("max_m"));
  // The contract's tolerance must cover the derived bound at the largest size.
  ASSERT_LE(2 * gamma_n(static_cast<double>(max_m * max_p + 1)), tol);
  const bool ok = rc::check("gather/scatter adjoint", [&] {
    testbed::Shape s;
    s.rows = 1;
    s.p = *rc::gen::inRange<std::size_t>(1, max_p + 1);
    s.K = *rc::gen::inRange<std::size_t>(1, max_k + 1);
    s.max_m = *rc::gen::inRange<std::size_t>(0, max_m + 1);
    s.max_q = 0;
    s.zero_weight_prob = 0.3;
    std::mt19937_64 rng(*rc::gen::arbitrary<std::uint64_t>());
    const auto pr = testbed::random_problem(s, rng);
    const auto rows = pr.make_rows();
    const auto x = testbed::random_vector(rows.beta_dim(), rng);
    const auto u = testbed::random_vector(s.p, rng);
    std::vector<double> jx(s.p), jtu(rows.beta_dim(), 0.0);
    rows.apply_jbeta(0, x, jx);
    rows.scatter_jbeta_t(0, u, jtu);
    double lhs = 0, rhs = 0, scale = 0;
    for (std::size_t j = 0; j < s.p; ++j) lhs += jx[j] * u[j];
    for (std::size_t e = 0; e < rows.beta_dim(); ++e) rhs += x[e] * jtu[e];
    const auto& ph = *rows.a_phi();
    for (std::size_t e = 0; e < ph.weight.size(); ++e)
      for (std::size_t j = 0; j < s.p; ++j) scale += std::abs(ph.weight[e] * x[ph.block[e] * s.p + j] * u[j]);
    RC_ASSERT(std::abs(lhs - rhs) <= tol * scale);
  });
  EXPECT_TRUE(ok) << "seed " << prm.seed();
  if (!::testing::Test::HasFailure()) testbed::record_cpu_path();
});

POPPER_FALSIFIER("FALSIFY-SAE-002", [](const popper::Params& prm) {
  const double tol = prm.number("rel_tol");
  const auto max_p = static_cast<std::size_t>(prm.integer("max_p"));
  const auto max_q = static_cast<std::size_t>(prm.integer("max_q"));
  const auto nrows = static_cast<std::size_t>(prm.integer("rows"));
  ASSERT_LE(2 * gamma_n(static_cast<double>(max_q * max_p + 1)), tol);
  const bool ok = rc::check("L / L^T adjoint, heterogeneous q_i", [&] {
    testbed::Shape s;
    s.rows = nrows;
    s.p = *rc::gen::inRange<std::size_t>(1, max_p + 1);
    s.K = 1;
    s.max_m = 1;
    s.max_q = max_q;
    std::mt19937_64 rng(*rc::gen::arbitrary<std::uint64_t>());
    const auto pr = testbed::random_problem(s, rng);
    const auto rows = pr.make_rows();
    for (std::size_t i = 0; i < nrows; ++i) {
      const std::size_t q = rows.q(i);
      RC_ASSERT(q == pr.q[i]);
      const auto u = testbed::random_vector(s.p, rng);
      auto v = testbed::random_vector(q, rng);
      if (q > 0) v[0] = 0.0;  // a zero entry is skipped by L^T
      std::vector<double> lu(q), ltv(s.p, 0.0);
      rows.apply_l(i, u, lu);
      rows.apply_l_t(i, v, ltv);
      double lhs = 0, rhs = 0, scale = 0;
      for (std::size_t c = 0; c < q; ++c) lhs += lu[c] * v[c];
      for (std::size_t j = 0; j < s.p; ++j) rhs += u[j] * ltv[j];
      const auto& lj = *rows.local_jac();
      for (std::size_t c = 0; c < q; ++c)
        for (std::size_t j = 0; j < s.p; ++j) scale += std::abs(lj.values[lj.row_ptr[i] + c * s.p + j] * u[j] * v[c]);
      RC_ASSERT(std::abs(lhs - rhs) <= tol * scale);
    }
  });
  EXPECT_TRUE(ok) << "seed " << prm.seed();
  if (!::testing::Test::HasFailure()) testbed::record_cpu_path();
});

}  // namespace
