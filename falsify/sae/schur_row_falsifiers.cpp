// FALSIFY-SAE-004/005: the five-step matrix-free S_i equals the dense Eigen
// S_i, and is symmetric PSD when A_i = L_i L_i^T + lambda I (indefinite when
// A_i is undersized: the PSD condition A_i >= L_i L_i^T is necessary).
//
// Tolerance: each step is a short sum or a Cholesky solve; the error is
// O(u (m + q + p) kappa(A_i)) relative to ||phi||_1^2 ||x||_inf (Higham 3.1,
// 10.1). lambda in [0.1, 1] and |L| ~ N(0,1), p, q <= 14 keep kappa(A_i) <= ~1e3,
// so the error is ~1e-12, two orders below the contract's 1e-10.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <cmath>

#include "popper/binding.hpp"
#include "impl/sae/reference.hpp"
#include "impl/sae/sae.hpp"
#include "testbed.hpp"

namespace {
using namespace popper::sae;

testbed::Shape shape_from(const popper::Params& prm, std::mt19937_64& rng) {
  testbed::Shape s;
  s.rows = 3;
  s.p = std::uniform_int_distribution<std::size_t>(1, static_cast<std::size_t>(prm.integer("max_p")))(rng);
  s.K = std::uniform_int_distribution<std::size_t>(1, static_cast<std::size_t>(prm.integer("max_k")))(rng);
  s.max_m = static_cast<std::size_t>(prm.integer("max_m"));
  s.max_q = static_cast<std::size_t>(prm.integer("max_q"));
  return s;
}

double inf_norm(const std::vector<double>& v) {
  double m = 0;
  for (double e : v) m = std::max(m, std::abs(e));
  return m;
}

// S_i assembled from the matrix-free apply, one unit vector at a time.
Eigen::MatrixXd assemble_row(const SaeKroneckerRows& rows, const LocalFactors& f, std::size_t row) {
  const std::size_t n = rows.beta_dim();
  Eigen::MatrixXd s(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(n));
  std::vector<double> e(n, 0.0), y(n);
  for (std::size_t c = 0; c < n; ++c) {
    e[c] = 1.0;
    std::fill(y.begin(), y.end(), 0.0);
    schur_row_apply(rows, f, row, e, y);
    for (std::size_t r = 0; r < n; ++r) s(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = y[r];
    e[c] = 0.0;
  }
  return s;
}

POPPER_FALSIFIER("FALSIFY-SAE-004", [](const popper::Params& prm) {
  const double tol = prm.number("rel_tol");
  const auto cases = static_cast<std::size_t>(prm.integer("cases"));
  std::mt19937_64 rng(prm.seed());
  std::uniform_real_distribution<double> lam(0.1, 1.0);
  std::size_t nontrivial = 0, q_gt_p = 0;
  for (std::size_t c = 0; c < cases; ++c) {
    const auto s = shape_from(prm, rng);
    const auto pr = testbed::random_problem(s, rng);
    const auto rows = pr.make_rows();
    const auto fr = factor_gauss_newton_blocks(rows, lam(rng));
    ASSERT_TRUE(fr.ok()) << "seed " << prm.seed();
    const auto& f = *fr.value();
    for (std::size_t i = 0; i < rows.rows(); ++i) {
      const auto x = testbed::random_vector(rows.beta_dim(), rng);
      const auto y0 = testbed::random_vector(rows.beta_dim(), rng);
      auto y = y0;
      schur_row_apply(rows, f, i, x, y);
      Eigen::VectorXd xe = Eigen::Map<const Eigen::VectorXd>(x.data(), static_cast<Eigen::Index>(x.size()));
      const Eigen::VectorXd sx = reference::dense_schur_row(rows, f, i) * xe;
      const double phi1 = testbed::phi_l1(rows, i);
      const double bound = tol * (phi1 * phi1 * inf_norm(x) + inf_norm(y0));
      double err = 0;
      for (std::size_t e = 0; e < y.size(); ++e)
        err = std::max(err, std::abs(y[e] - (y0[e] + sx(static_cast<Eigen::Index>(e)))));
      EXPECT_LE(err, bound) << "case " << c << " row " << i << " p=" << s.p << " q=" << rows.q(i) << " seed "
                            << prm.seed();
      if (sx.cwiseAbs().maxCoeff() > 1e-3 * phi1 * phi1 * inf_norm(x)) ++nontrivial;
      if (rows.q(i) > s.p) ++q_gt_p;
    }
  }
  EXPECT_GT(nontrivial, cases / 2) << "most rows gave S_i x ~ 0: the comparison would be vacuous";
  EXPECT_GT(q_gt_p, 0u) << "no row with q_i > p (rank-deficient L_i L_i^T) was generated";
  if (!::testing::Test::HasFailure()) testbed::record_cpu_path();
});

POPPER_FALSIFIER("FALSIFY-SAE-005", [](const popper::Params& prm) {
  const double tol = prm.number("rel_tol");
  const auto cases = static_cast<std::size_t>(prm.integer("cases"));
  std::mt19937_64 rng(prm.seed());
  std::uniform_real_distribution<double> lam(0.1, 1.0);
  std::size_t indefinite_controls = 0, control_cases = 0;
  for (std::size_t c = 0; c < cases; ++c) {
    auto s = shape_from(prm, rng);
    s.rows = 1;
    s.zero_weight_prob = 0.1;
    const auto pr = testbed::random_problem(s, rng);
    const auto rows = pr.make_rows();
    const double phi1 = testbed::phi_l1(rows, 0);
    const auto fr = factor_gauss_newton_blocks(rows, lam(rng));
    ASSERT_TRUE(fr.ok());
    const Eigen::MatrixXd sm = assemble_row(rows, *fr.value(), 0);
    const double asym = (sm - sm.transpose()).cwiseAbs().maxCoeff();
    EXPECT_LE(asym, tol * phi1 * phi1) << "case " << c << " seed " << prm.seed();
    const Eigen::MatrixXd sym = 0.5 * (sm + sm.transpose());
    const double lmin =
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(sym, Eigen::EigenvaluesOnly).eigenvalues().minCoeff();
    EXPECT_GE(lmin, -tol * phi1 * phi1) << "case " << c << " seed " << prm.seed();

    // Negative control: A_i = 0.25 L L^T + 1e-3 I violates A_i >= L L^T, so
    // M_i has eigenvalues near 1 - 4 = -3 on range(L^T).
    if (rows.q(0) == 0 || phi1 == 0.0) continue;
    const Eigen::MatrixXd l = reference::dense_local_jac(rows, 0);
    Eigen::MatrixXd a = 0.25 * l * l.transpose();
    a.diagonal().array() += 1e-3;
    const Eigen::MatrixXd r = Eigen::LLT<Eigen::MatrixXd>(a).matrixL();
    std::vector<double> rv;
    for (Eigen::Index i = 0; i < r.rows(); ++i)
      for (Eigen::Index k = 0; k < r.cols(); ++k) rv.push_back(r(i, k));
    const auto bad = LocalFactors::from_rows({rv});
    const Eigen::MatrixXd sb = assemble_row(rows, bad, 0);
    const double lmin_bad =
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(0.5 * (sb + sb.transpose()), Eigen::EigenvaluesOnly)
            .eigenvalues()
            .minCoeff();
    ++control_cases;
    if (lmin_bad < -1e-3) ++indefinite_controls;
  }
  EXPECT_GT(control_cases, 0u);
  EXPECT_GT(indefinite_controls, 0u) << "undersized A_i never gave an indefinite S_i: PSD check would be blind";
  if (!::testing::Test::HasFailure()) testbed::record_cpu_path();
});

}  // namespace
