// FALSIFY-SAE-010: malformed input throws a popper::Error subclass naming the
// row and field, before anything is written (outputs keep their sentinels).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <limits>
#include <string>

#include "popper/binding.hpp"
#include "testbed.hpp"
#include "impl/sae/schur_pcg.hpp"

namespace {
using namespace popper::sae;
using PhiRows = std::vector<std::vector<std::pair<std::size_t, double>>>;
using JacRows = std::vector<std::vector<double>>;
constexpr double kSentinel = -12345.25;

template <class E>
void expect_error(const std::function<void()>& f, std::vector<std::string> must_contain, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": no exception";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const auto& s : must_contain)
      EXPECT_NE(msg.find(s), std::string::npos) << what << ": '" << msg << "' lacks '" << s << "'";
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": wrong exception type: " << e.what();
  }
}

SaeKroneckerRows build(std::size_t p, std::size_t K, const PhiRows& phi, const JacRows& jac) {
  return SaeKroneckerRows(p, K, std::make_shared<const SparsePhiRows>(SparsePhiRows::from_rows(phi)),
                          std::make_shared<const LocalJacRows>(LocalJacRows::from_rows(jac)));
}

bool untouched(const std::vector<double>& v) {
  for (double e : v)
    if (std::memcmp(&e, &kSentinel, sizeof e) != 0) return false;
  return true;
}

POPPER_FALSIFIER("FALSIFY-SAE-010", [](const popper::Params& prm) {
  using popper::BufferTooSmall;
  using popper::InvalidArgument;
  const auto p = static_cast<std::size_t>(prm.integer("p"));
  const auto K = static_cast<std::size_t>(prm.integer("K"));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const JacRows jac2{std::vector<double>(2 * p, 1.0), std::vector<double>(p, 0.5)};
  const PhiRows phi2{{{0, 1.0}}, {{1, 2.0}, {3, -1.0}}};

  // Construction.
  expect_error<InvalidArgument>([&] { build(p, K, phi2, {std::vector<double>(p, 1.0)}); },
                                {"a_phi has 2 rows", "local_jac has 1"}, "mismatched rows");
  expect_error<InvalidArgument>(
      [&] {
        build(p, K, phi2, {std::vector<double>(p, 1.0), std::vector<double>(p + 2, 1.0)});
      },
      {"row 1", "local_jac length " + std::to_string(p + 2), "multiple of p"}, "bad L length");
  expect_error<InvalidArgument>(
      [&] {
        build(p, K, {{{0, 1.0}}, {{1, 1.0}, {K, 1.0}}}, jac2);
      },
      {"row 1", "a_phi[1].block", "K=" + std::to_string(K)}, "block out of range");
  expect_error<InvalidArgument>(
      [&] {
        build(p, K, {{{0, nan}}, {{1, 1.0}}}, jac2);
      },
      {"row 0", "a_phi[0].weight", "not finite"}, "NaN weight");
  expect_error<InvalidArgument>(
      [&] {
        build(p, K, {{{0, 1.0}}, {{1, 1.0}, {2, -inf}}}, jac2);
      },
      {"row 1", "a_phi[1].weight"}, "Inf weight");
  expect_error<InvalidArgument>([&] { build(0, K, phi2, jac2); }, {"p"}, "p = 0");
  expect_error<InvalidArgument>([&] { SaeKroneckerRows(p, K, nullptr, std::make_shared<const LocalJacRows>()); },
                                {"a_phi", "null"}, "null a_phi");
  expect_error<InvalidArgument>(
      [&] {
        SparsePhiRows bad = SparsePhiRows::from_rows(phi2);
        bad.weight.pop_back();
        SaeKroneckerRows(p, K, std::make_shared<const SparsePhiRows>(bad),
                         std::make_shared<const LocalJacRows>(LocalJacRows::from_rows(jac2)));
      },
      {"a_phi.block", "a_phi.weight"}, "block/weight length mismatch");
  expect_error<InvalidArgument>(
      [&] {
        SparsePhiRows bad = SparsePhiRows::from_rows(phi2);
        bad.row_ptr = {0, 2, 1};
        SaeKroneckerRows(p, K, std::make_shared<const SparsePhiRows>(bad),
                         std::make_shared<const LocalJacRows>(LocalJacRows::from_rows(jac2)));
      },
      {"row 1", "a_phi.row_ptr"}, "decreasing row_ptr");

  // Operations on a valid operator: every check precedes the first write.
  const auto rows = build(p, K, phi2, jac2);
  const std::size_t n = rows.beta_dim();
  std::vector<double> x(n, 1.0), u(p, 1.0), v(2, 1.0);
  std::vector<double> out_p(p, kSentinel), out_n(n, kSentinel), out_q(2, kSentinel);
  expect_error<BufferTooSmall>([&] { rows.apply_jbeta(0, std::span<const double>(x).first(n - 1), out_p); }, {"x_beta"},
                               "short x_beta");
  EXPECT_TRUE(untouched(out_p));
  expect_error<BufferTooSmall>([&] { rows.apply_jbeta(0, x, std::span<double>(out_p).first(p - 1)); }, {"u_out"},
                               "short u_out");
  EXPECT_TRUE(untouched(out_p));
  expect_error<InvalidArgument>([&] { rows.apply_jbeta(2, x, out_p); }, {"row 2", "apply_jbeta"}, "row out of range");
  EXPECT_TRUE(untouched(out_p));
  expect_error<BufferTooSmall>([&] { rows.scatter_jbeta_t(1, u, std::span<double>(out_n).first(n - 1)); }, {"y_beta"},
                               "short y_beta");
  EXPECT_TRUE(untouched(out_n));
  expect_error<BufferTooSmall>([&] { rows.scatter_jbeta_t(1, std::span<const double>(u).first(p - 1), out_n); },
                               {"'u'"}, "short u");
  EXPECT_TRUE(untouched(out_n));
  expect_error<BufferTooSmall>([&] { rows.apply_l(0, u, std::span<double>(out_q).first(1)); }, {"w_out"},
                               "short w_out (q_0 = 2)");
  EXPECT_TRUE(untouched(out_q));
  expect_error<BufferTooSmall>([&] { rows.apply_l_t(0, std::span<const double>(v).first(1), out_p); }, {"'v'"},
                               "short v");
  EXPECT_TRUE(untouched(out_p));

  // Schur row / solver with mismatched factors or bad scalars.
  const auto other = build(p, K, {{{0, 1.0}}, {{1, 1.0}}}, {std::vector<double>(p, 1.0), std::vector<double>(p, 1.0)});
  const auto f_other = factor_gauss_newton_blocks(other, 1.0).value();
  const auto f_ok = factor_gauss_newton_blocks(rows, 1.0).value();
  expect_error<InvalidArgument>([&] { schur_row_apply(rows, *f_other, 0, x, out_n); }, {"row 0", "q_i=2"},
                                "factor of wrong size");
  EXPECT_TRUE(untouched(out_n));
  expect_error<BufferTooSmall>([&] { schur_row_apply(rows, *f_ok, 0, x, std::span<double>(out_n).first(n - 1)); },
                               {"y_beta"}, "short y in schur_row_apply");
  EXPECT_TRUE(untouched(out_n));
  expect_error<InvalidArgument>([&] { SaeSchurSystem(rows, f_other, 0.1); }, {"row 0", "q_i=2"},
                                "system with wrong factors");
  expect_error<InvalidArgument>([&] { SaeSchurSystem(rows, f_ok, -1.0); }, {"rho"}, "negative rho");
  expect_error<InvalidArgument>([&] { SaeSchurSystem(rows, f_ok, nan); }, {"rho"}, "NaN rho");
  expect_error<InvalidArgument>([&] { (void)factor_gauss_newton_blocks(rows, -0.5); }, {"lambda"}, "negative lambda");
  const SaeSchurSystem sys(rows, f_ok, 0.1);
  std::vector<double> b(n, 1.0);
  b[1] = nan;
  expect_error<InvalidArgument>([&] { (void)solve_schur_pcg(sys, b, out_n); }, {"b[1]"}, "NaN in b");
  EXPECT_TRUE(untouched(out_n));
  b[1] = 1.0;
  expect_error<BufferTooSmall>([&] { (void)solve_schur_pcg(sys, b, std::span<double>(out_n).first(n - 1)); }, {"'x'"},
                               "short x");
  EXPECT_TRUE(untouched(out_n));
  PcgOptions zero_tol;
  zero_tol.rel_tol = 0.0;
  expect_error<InvalidArgument>([&] { (void)solve_schur_pcg(sys, b, out_n, zero_tol); }, {"rel_tol"}, "zero tolerance");
  EXPECT_TRUE(untouched(out_n));
  expect_error<popper::InvalidArgument>([] { (void)LocalFactors::from_rows({std::vector<double>(3, 1.0)}); },
                                        {"row 0", "q_i * q_i"}, "non-square factor");
  if (!::testing::Test::HasFailure()) testbed::record_cpu_path();
});

}  // namespace
