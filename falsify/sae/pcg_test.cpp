// FALSIFY-SAE-007/008/009: PCG on (sum_i S_i + rho I) x = b.
//  007: converged => ||b - A x|| <= rel_tol ||b|| for the dense A (plus the
//       rounding of one apply, 2 gamma_n ||A|| ||x||), and ||x - x*|| / ||x*||
//       <= kappa(A) * (that residual) (standard perturbation bound).
//  008: at the cap the report is converged = false with the returned x's residual.
//  009: bit-identical results for 1, 2, 3 threads and vs the serial row sum.
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <cmath>
#include <cstring>
#include <limits>

#include "popper/binding.hpp"
#include "sae/lib_dense_route.hpp"
#include "sae/reference.hpp"
#include "sae/schur_pcg.hpp"
#include "sae_gen.hpp"

namespace {
using namespace popper::sae;
const double kEps = std::numeric_limits<double>::epsilon();

Eigen::VectorXd as_eigen(const std::vector<double>& v) {
  return Eigen::Map<const Eigen::VectorXd>(v.data(), static_cast<Eigen::Index>(v.size()));
}

testgen::Shape shape_from(const popper::Params& prm) {
  testgen::Shape s;
  s.rows = static_cast<std::size_t>(prm.integer("rows"));
  s.K = static_cast<std::size_t>(prm.integer("K"));
  s.p = static_cast<std::size_t>(prm.integer("p"));
  s.max_m = static_cast<std::size_t>(prm.integer("max_m", 4));
  s.max_q = static_cast<std::size_t>(prm.integer("max_q", 5));
  return s;
}

POPPER_FALSIFIER("FALSIFY-SAE-007", [](const popper::Params& prm) {
  const double tol = prm.number("rel_tol");
  const double rho = prm.number("rho");
  const auto cases = static_cast<std::size_t>(prm.integer("cases"));
  std::mt19937_64 rng(prm.seed());
  const auto shape = shape_from(prm);
  for (std::size_t c = 0; c < cases; ++c) {
    const auto pr = testgen::random_problem(shape, rng);
    const auto rows = pr.make_rows();
    const auto fr = factor_gauss_newton_blocks(rows, std::uniform_real_distribution<double>(0.1, 1.0)(rng));
    ASSERT_TRUE(fr.ok());
    const SaeSchurSystem sys(rows, fr.value(), rho);
    const auto b = testgen::random_vector(sys.dim(), rng);
    std::vector<double> x(sys.dim(), 0.0);
    PcgOptions opt;
    opt.rel_tol = tol;
    opt.max_iterations = 10 * sys.dim();
    opt.threads = 2;
    const PcgReport rep = solve_schur_pcg(sys, b, x, opt);
    const Eigen::MatrixXd a = reference::dense_schur_system(rows, *fr.value(), rho);
    const Eigen::VectorXd be = as_eigen(b), xe = as_eigen(x);
    const Eigen::VectorXd xs = reference::solve_dense(a, be);
    const Eigen::VectorXd ev = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(a, Eigen::EigenvaluesOnly).eigenvalues();
    const double kappa = ev.maxCoeff() / ev.minCoeff();
    const double n = static_cast<double>(sys.dim());
    const double apply_err = 2 * n * kEps * a.norm() * xe.norm() / be.norm();
    const double res = (be - a * xe).norm() / be.norm();
    EXPECT_TRUE(rep.converged) << "case " << c << " iterations " << rep.iterations << " seed " << prm.seed();
    EXPECT_FALSE(rep.breakdown);
    EXPECT_LE(rep.rel_residual, tol);
    EXPECT_LE(res, tol + apply_err) << "case " << c << " seed " << prm.seed();
    EXPECT_LE((xe - xs).norm() / xs.norm(), kappa * (tol + 2 * apply_err)) << "case " << c << " kappa " << kappa;
    EXPECT_GT(rep.iterations, 1u);

    // The CBLAS/LAPACKE dense route (the bench's wrapped tier) agrees with the reference.
    auto dense = dense_route::DenseSchurMatrix::form(sys, 1e9);
    std::vector<double> ad(sys.dim()), xd(sys.dim());
    dense.apply(b, ad);
    const Eigen::VectorXd ab = a * be;
    EXPECT_LE((as_eigen(ad) - ab).norm(), 2 * n * kEps * a.norm() * be.norm());
    ASSERT_TRUE(dense.factor_and_solve(b, xd));
    EXPECT_LE((as_eigen(xd) - xs).norm() / xs.norm(), 4 * n * kEps * kappa) << "case " << c;
  }
  // Over its memory budget the dense route declines before allocating.
  const auto big = testgen::random_problem(shape, rng).make_rows();
  const SaeSchurSystem big_sys(big, factor_gauss_newton_blocks(big, 1.0).value(), rho);
  EXPECT_THROW(dense_route::DenseSchurMatrix::form(big_sys, 100.0), popper::Unsupported);
});

POPPER_FALSIFIER("FALSIFY-SAE-008", [](const popper::Params& prm) {
  const auto cap = static_cast<std::size_t>(prm.integer("cap"));
  std::mt19937_64 rng(prm.seed());
  const auto pr = testgen::random_problem(shape_from(prm), rng);
  const auto rows = pr.make_rows();
  const auto fr = factor_gauss_newton_blocks(rows, 0.05);
  ASSERT_TRUE(fr.ok());
  const SaeSchurSystem sys(rows, fr.value(), 1e-3);
  const auto b = testgen::random_vector(sys.dim(), rng);
  const Eigen::MatrixXd a = reference::dense_schur_system(rows, *fr.value(), 1e-3);
  for (std::size_t limit : {cap, std::size_t{0}}) {
    std::vector<double> x(sys.dim(), std::numeric_limits<double>::quiet_NaN());
    PcgOptions opt;
    opt.rel_tol = 1e-14;
    opt.max_iterations = limit;
    PcgReport rep;
    EXPECT_NO_THROW(rep = solve_schur_pcg(sys, b, x, opt));
    EXPECT_FALSE(rep.converged) << "cap " << limit;
    EXPECT_EQ(rep.iterations, limit);
    EXPECT_GT(rep.rel_residual, opt.rel_tol);
    const Eigen::VectorXd be = as_eigen(b), xe = as_eigen(x);
    ASSERT_TRUE(xe.allFinite());
    const double res = (be - a * xe).norm() / be.norm();
    EXPECT_NEAR(rep.rel_residual, res, 1e-10 + 1e-8 * res) << "reported residual is not the returned x's";
    if (limit == 0) {
      EXPECT_EQ(rep.rel_residual, 1.0);
    }
  }
});

POPPER_FALSIFIER("FALSIFY-SAE-009", [](const popper::Params& prm) {
  std::mt19937_64 rng(prm.seed());
  const auto pr = testgen::random_problem(shape_from(prm), rng);
  const auto rows = pr.make_rows();
  const auto fr = factor_gauss_newton_blocks(rows, 0.3);
  ASSERT_TRUE(fr.ok());
  const SaeSchurSystem sys(rows, fr.value(), 0.01);
  const auto x = testgen::random_vector(sys.dim(), rng);
  const auto b = testgen::random_vector(sys.dim(), rng);
  // Serial oracle of the same arithmetic: y = rho x, then rows in order.
  std::vector<double> y_serial(sys.dim());
  for (std::size_t e = 0; e < sys.dim(); ++e) y_serial[e] = sys.rho() * x[e];
  SchurScratch scratch;
  for (std::size_t i = 0; i < rows.rows(); ++i) schur_row_apply(rows, *fr.value(), i, x, y_serial, scratch);
  const auto bytes = sys.dim() * sizeof(double);
  std::vector<double> x_first;
  PcgReport rep_first;
  for (auto t : prm.integers("threads")) {
    std::vector<double> y(sys.dim());
    sys.apply(x, y, static_cast<unsigned>(t));
    EXPECT_EQ(std::memcmp(y.data(), y_serial.data(), bytes), 0) << "apply differs from serial at threads " << t;
    std::vector<double> xs(sys.dim());
    PcgOptions opt;
    opt.rel_tol = 1e-12;
    opt.max_iterations = 60;
    opt.threads = static_cast<unsigned>(t);
    const auto rep = solve_schur_pcg(sys, b, xs, opt);
    if (x_first.empty()) {
      x_first = xs;
      rep_first = rep;
      EXPECT_GT(rep.iterations, 5u);
      continue;
    }
    EXPECT_EQ(std::memcmp(xs.data(), x_first.data(), bytes), 0) << "solution bits differ at threads " << t;
    EXPECT_EQ(rep.iterations, rep_first.iterations);
    EXPECT_EQ(std::memcmp(&rep.rel_residual, &rep_first.rel_residual, sizeof(double)), 0);
  }
});

}  // namespace
