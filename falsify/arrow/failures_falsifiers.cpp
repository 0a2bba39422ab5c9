// Per-atom numerical failures: a non-PD row block, a non-PD Schur complement,
// NaN/Inf inputs. The failing atom gets its own error; the rest of the class is
// Ok and bit-identical to a class without it; nothing throws.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "testbed.hpp"
#include "popper/binding.hpp"

namespace {
using namespace popper::arrow;
namespace tb = popper::arrow::testbed;
constexpr ArrowKernel kAll[] = {ArrowKernel::Hand, ArrowKernel::Structured, ArrowKernel::Reference, ArrowKernel::Lapack,
                                ArrowKernel::Auto};

// The others must equal what the same kernel gives for the class without `bad`.
void expect_others_unaffected(const std::vector<ArrowSystem>& sys, std::size_t bad, ArrowKernel kern,
                              const std::vector<ArrowResult>& got, double rho_t, double rho_beta) {
  std::vector<ArrowSystem> rest;
  for (std::size_t a = 0; a < sys.size(); ++a)
    if (a != bad) rest.push_back(sys[a]);
  const auto clean = tb::solve(rest, kern, 1, rho_t, rho_beta);
  for (std::size_t a = 0, j = 0; a < sys.size(); ++a) {
    if (a == bad) continue;
    EXPECT_TRUE(got[a].ok()) << "atom " << a << " kernel " << static_cast<int>(kern);
    EXPECT_TRUE(tb::bit_equal(got[a], clean[j])) << "atom " << a << " changed by a failing neighbour";
    ++j;
  }
}
}  // namespace

POPPER_FALSIFIER("FALSIFY-ARROW-004", [](const popper::Params& p) {
  const auto atoms = static_cast<std::size_t>(p.integer("atoms"));
  const auto bad = static_cast<std::size_t>(p.integer("bad_atom"));
  const auto bad_row = static_cast<std::size_t>(p.integer("bad_row"));
  const double neg = p.number("negative_eigenvalue");
  auto sys = tb::make_class(p.seed(), {12, 5, 30, 1}, {2, 3}, {6, 4}, atoms);
  ASSERT_LT(bad_row, sys[bad].rows);
  // D_row = Q diag(neg, 1, ..., 1) Q^T with a Givens Q: indefinite at rho_t = 0.
  const std::size_t d = sys[bad].row_dim;
  ASSERT_GE(d, 2u);
  double* D = sys[bad].D.data() + bad_row * d * d;
  for (std::size_t e = 0; e < d * d; ++e) D[e] = e % (d + 1) == 0 ? 1.0 : 0.0;
  const double c = std::cos(0.3), s = std::sin(0.3);
  D[0] = c * c * neg + s * s;
  D[1] = D[d] = c * s * (neg - 1.0);
  D[1 + d] = s * s * neg + c * c;
  for (ArrowKernel kern : kAll) {
    const auto got = tb::solve(sys, kern, 2, 0.0, 0.0);
    ASSERT_FALSE(got[bad].ok()) << "kernel " << static_cast<int>(kern);
    const auto* f = std::get_if<RidgeBumpRequired>(&got[bad].error());
    ASSERT_NE(f, nullptr) << "expected RidgeBumpRequired, kernel " << static_cast<int>(kern);
    EXPECT_EQ(f->row, bad_row);
    EXPECT_GE(f->bump, -neg) << "a bump below |lambda_min| cannot make the row PD";
    expect_others_unaffected(sys, bad, kern, got, 0.0, 0.0);
    const auto again = tb::solve({sys[bad]}, kern, 1, 0.0 + f->bump, 0.0);
    EXPECT_TRUE(again[0].ok()) << "re-solve with rho_t + bump failed, kernel " << static_cast<int>(kern);
    if (!::testing::Test::HasFailure()) tb::record(kern);
  }
});

POPPER_FALSIFIER("FALSIFY-ARROW-005", [](const popper::Params& p) {
  const auto atoms = static_cast<std::size_t>(p.integer("atoms"));
  const auto bad = static_cast<std::size_t>(p.integer("bad_atom"));
  const double shift = p.number("border_shift");
  auto sys = tb::make_class(p.seed(), {9, 0, 22}, {2, 1, 4}, {6, 3, 9}, atoms);
  // C <- C - shift I makes S = C + rho_beta I - B^T D^-1 B indefinite.
  const std::size_t k = sys[bad].border_dim;
  for (std::size_t j = 0; j < k; ++j) sys[bad].hbb[j + j * k] -= shift;
  for (ArrowKernel kern : kAll) {
    const auto got = tb::solve(sys, kern, 2, 0.0, 0.0);
    ASSERT_FALSE(got[bad].ok());
    const auto* f = std::get_if<SchurFactorFailed>(&got[bad].error());
    ASSERT_NE(f, nullptr) << "expected SchurFactorFailed, kernel " << static_cast<int>(kern);
    EXPECT_GT(f->bump, 0.0);
    expect_others_unaffected(sys, bad, kern, got, 0.0, 0.0);
    const auto again = tb::solve({sys[bad]}, kern, 1, 0.0, f->bump);
    EXPECT_TRUE(again[0].ok()) << "re-solve with rho_beta + bump failed, kernel " << static_cast<int>(kern);
    if (!::testing::Test::HasFailure()) tb::record(kern);
  }
});

POPPER_FALSIFIER("FALSIFY-ARROW-006", [](const popper::Params& p) {
  const auto atoms = static_cast<std::size_t>(p.integer("atoms"));
  auto sys = tb::make_class(p.seed(), {6, 3, 11, 1, 4, 8}, {2}, {6}, atoms);
  ASSERT_GE(atoms, 6u);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  struct Poison {
    std::size_t atom;
    ArrowField field;
  };
  const Poison poison[] = {
      {0, ArrowField::D}, {1, ArrowField::B}, {2, ArrowField::g_t}, {4, ArrowField::hbb}, {5, ArrowField::g_b}};
  sys[0].D[2] = nan;  // upper triangle of row 0's block: never read by the solve, still reported
  sys[1].B.back() = inf;
  sys[2].g_t[3] = -inf;
  sys[4].hbb[0] = nan;
  sys[5].g_b[1] = inf;
  for (ArrowKernel kern : kAll) {
    std::vector<ArrowResult> got;
    EXPECT_NO_THROW(got = tb::solve(sys, kern, 2, 0.0, 0.0));
    ASSERT_EQ(got.size(), atoms);
    for (const auto& pz : poison) {
      ASSERT_FALSE(got[pz.atom].ok()) << "atom " << pz.atom;
      const auto* f = std::get_if<NonFiniteValue>(&got[pz.atom].error());
      ASSERT_NE(f, nullptr);
      EXPECT_EQ(f->field, pz.field) << "atom " << pz.atom << " reported " << to_string(f->field);
    }
    EXPECT_TRUE(got[3].ok());
    for (std::size_t a = 6; a < atoms; ++a) EXPECT_TRUE(got[a].ok()) << "atom " << a;
    if (!::testing::Test::HasFailure()) tb::record(kern);
  }
  // The same, deep inside full lane groups of equal row counts, where the Hand
  // kernel gathers by register transposes rather than element by element.
  auto even = tb::make_class(p.seed() + 1, {12}, {2}, {6}, 16);
  const Poison deep[] = {{9, ArrowField::D}, {3, ArrowField::B}, {14, ArrowField::g_t}};
  even[9].D[4 * 9 + 1] = inf;
  even[3].B[12 * 7 + 5] = nan;
  even[14].g_t[2 * 10] = -inf;
  // Finite inputs whose solution overflows: D = 1e-300 I (a valid pivot), B = 0
  // and g = 1e300 in row 10 of atom 6 give u = L^-1 g beyond DBL_MAX.
  const Poison overflow{6, ArrowField::result};
  for (std::size_t e = 0; e < 4; ++e) even[6].D[4 * 10 + e] = e % 3 == 0 ? 1e-300 : 0.0;
  for (std::size_t e = 0; e < 12; ++e) even[6].B[12 * 10 + e] = 0.0;
  even[6].g_t[2 * 10] = even[6].g_t[2 * 10 + 1] = 1e300;
  for (ArrowKernel kern : kAll) {
    std::vector<ArrowResult> got;
    EXPECT_NO_THROW(got = tb::solve(even, kern, 1, 0.0, 0.0));
    ASSERT_EQ(got.size(), even.size());
    for (const auto& pz : {deep[0], deep[1], deep[2], overflow}) {
      ASSERT_FALSE(got[pz.atom].ok()) << "atom " << pz.atom;
      const auto* f = std::get_if<NonFiniteValue>(&got[pz.atom].error());
      ASSERT_NE(f, nullptr);
      EXPECT_EQ(f->field, pz.field) << "atom " << pz.atom << " reported " << to_string(f->field);
    }
  }
  // A non-finite ridge is a usage error of the whole call, not an atom's.
  EXPECT_THROW(tb::solve(sys, ArrowKernel::Hand, 1, nan, 0.0), popper::InvalidArgument);
});
