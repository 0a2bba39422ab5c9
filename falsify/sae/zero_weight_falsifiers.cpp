// FALSIFY-SAE-003 and KANI-SAE-001: zero weights are skipped (not multiplied),
// and gather/scatter equal the dense J_b,i exactly over every small pattern.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "popper/binding.hpp"
#include "impl/sae/reference.hpp"
#include "impl/sae/sae.hpp"
#include "testbed.hpp"

namespace {
using namespace popper::sae;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// Blocks that some nonzero weight of `row` names.
std::vector<bool> live_blocks(const SaeKroneckerRows& rows, std::size_t row) {
  std::vector<bool> live(rows.K(), false);
  const auto& ph = *rows.a_phi();
  for (std::size_t s = ph.row_ptr[row]; s < ph.row_ptr[row + 1]; ++s)
    if (ph.weight[s] != 0.0) live[ph.block[s]] = true;
  return live;
}

POPPER_FALSIFIER("FALSIFY-SAE-003", [](const popper::Params& prm) {
  const auto cases = static_cast<std::size_t>(prm.integer("cases"));
  std::mt19937_64 rng(prm.seed());
  testbed::Shape s;
  s.rows = 3;
  s.p = static_cast<std::size_t>(prm.integer("p"));
  s.K = static_cast<std::size_t>(prm.integer("K"));
  s.max_m = 4;
  s.max_q = 0;
  s.zero_weight_prob = 0.5;
  std::size_t poisoned = 0;
  for (std::size_t c = 0; c < cases; ++c) {
    const auto pr = testbed::random_problem(s, rng);
    const auto rows = pr.make_rows();
    for (std::size_t i = 0; i < rows.rows(); ++i) {
      const auto live = live_blocks(rows, i);
      const auto x = testbed::random_vector(rows.beta_dim(), rng);
      auto x_poison = x;
      for (std::size_t k = 0; k < rows.K(); ++k)
        if (!live[k]) {
          for (std::size_t j = 0; j < s.p; ++j) x_poison[k * s.p + j] = kNaN;
          ++poisoned;
        }
      std::vector<double> u(s.p), u_poison(s.p);
      rows.apply_jbeta(i, x, u);
      rows.apply_jbeta(i, x_poison, u_poison);
      EXPECT_TRUE(same_bits(u, u_poison)) << "case " << c << " row " << i << " seed " << prm.seed();
      for (double v : u_poison)
        EXPECT_TRUE(std::isfinite(v)) << "NaN leaked through a zero weight, seed " << prm.seed();
      // Scatter: dead blocks of y are untouched even when u holds Inf.
      auto y0 = testbed::random_vector(rows.beta_dim(), rng);
      auto y = y0;
      std::vector<double> u_inf(s.p, kInf);
      rows.scatter_jbeta_t(i, u_inf, y);
      for (std::size_t k = 0; k < rows.K(); ++k) {
        if (live[k]) continue;
        for (std::size_t j = 0; j < s.p; ++j) {
          EXPECT_EQ(std::memcmp(&y[k * s.p + j], &y0[k * s.p + j], sizeof(double)), 0)
              << "scatter touched dead block " << k << ", seed " << prm.seed();
        }
      }
    }
  }
  // A row made only of zero weights: gather gives exact zeros from an all-NaN x.
  auto phi = std::make_shared<const SparsePhiRows>(SparsePhiRows::from_rows({{{0, 0.0}, {1, 0.0}, {0, -0.0}}}));
  auto jac = std::make_shared<const LocalJacRows>(LocalJacRows::from_rows({{}}));
  SaeKroneckerRows zr(2, 2, phi, jac);
  std::vector<double> xn(4, kNaN), un(2, 7.0);
  zr.apply_jbeta(0, xn, un);
  EXPECT_EQ(un[0], 0.0);
  EXPECT_EQ(un[1], 0.0);
  EXPECT_GT(poisoned, 0u) << "no case had a dead block: the test would be vacuous";
  if (!::testing::Test::HasFailure()) testbed::record_cpu_path();
});

POPPER_HARNESS("KANI-SAE-001", [](const popper::Params& prm) {
  const auto max_m = static_cast<std::size_t>(prm.bound());
  const auto max_k = static_cast<std::size_t>(prm.integer("max_k"));
  const auto max_p = static_cast<std::size_t>(prm.integer("max_p"));
  const double weights[3] = {0.0, 1.0, -2.0};
  std::size_t checked = 0;
  for (std::size_t K = 1; K <= max_k; ++K)
    for (std::size_t p = 1; p <= max_p; ++p)
      for (std::size_t m = 0; m <= max_m; ++m) {
        std::size_t patterns = 1;
        for (std::size_t e = 0; e < m; ++e) patterns *= 3 * K;
        for (std::size_t code = 0; code < patterns; ++code) {
          std::vector<std::pair<std::size_t, double>> row;
          std::size_t c = code;
          for (std::size_t e = 0; e < m; ++e) {
            row.emplace_back((c % (3 * K)) / 3, weights[c % 3]);
            c /= 3 * K;
          }
          auto phi = std::make_shared<const SparsePhiRows>(SparsePhiRows::from_rows({row}));
          auto jac = std::make_shared<const LocalJacRows>(LocalJacRows::from_rows({{}}));
          const SaeKroneckerRows rows(p, K, phi, jac);
          const Eigen::MatrixXd jd = reference::dense_jbeta(rows, 0);
          std::vector<double> x(K * p), u(p), jx(p), y0(K * p), y;
          Eigen::VectorXd xe(static_cast<Eigen::Index>(K * p)), ue(static_cast<Eigen::Index>(p));
          for (std::size_t e = 0; e < K * p; ++e) {
            x[e] = static_cast<double>(static_cast<int>(e % 5) - 2);
            y0[e] = static_cast<double>(e % 3);
            xe(static_cast<Eigen::Index>(e)) = x[e];
          }
          for (std::size_t j = 0; j < p; ++j) ue(static_cast<Eigen::Index>(j)) = u[j] = static_cast<double>(j) + 1.0;
          rows.apply_jbeta(0, x, jx);
          const Eigen::VectorXd jx_ref = jd * xe;
          y = y0;
          rows.scatter_jbeta_t(0, u, y);
          const Eigen::VectorXd jtu_ref = jd.transpose() * ue;
          for (std::size_t j = 0; j < p; ++j)
            ASSERT_EQ(jx[j], jx_ref(static_cast<Eigen::Index>(j))) << "K=" << K << " p=" << p << " code=" << code;
          for (std::size_t e = 0; e < K * p; ++e)
            ASSERT_EQ(y[e], y0[e] + jtu_ref(static_cast<Eigen::Index>(e)))
                << "K=" << K << " p=" << p << " code=" << code;
          // NaN on dead blocks never reaches J x.
          const auto live = live_blocks(rows, 0);
          auto xp = x;
          for (std::size_t k = 0; k < K; ++k)
            if (!live[k])
              for (std::size_t j = 0; j < p; ++j) xp[k * p + j] = kNaN;
          std::vector<double> jxp(p);
          rows.apply_jbeta(0, xp, jxp);
          ASSERT_TRUE(same_bits(jx, jxp)) << "K=" << K << " p=" << p << " code=" << code;
          ++checked;
        }
      }
  EXPECT_GT(checked, 1000u);
  if (!::testing::Test::HasFailure()) testbed::record_cpu_path();
});

}  // namespace
