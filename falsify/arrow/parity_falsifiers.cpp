// Parity of every arrow kernel with the dense oracle, and of the Hand kernel
// with the Structured body (contracts/arrow/batched-k1-border-v1.yaml).
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include "testbed.hpp"
#include "popper/binding.hpp"

namespace {
using namespace popper::arrow;
namespace tb = popper::arrow::testbed;

// Compares kernel results with the reference atom by atom; returns max errors.
struct ParityStats {
  double worst_delta = 0.0, worst_logdet = 0.0, worst_hand_vs_structured = 0.0;
  bool all_ok = true, nonzero_refs = true;
};

ParityStats check_class(const std::vector<ArrowSystem>& sys, double rho_t, double rho_beta) {
  ParityStats st;
  const auto ref = tb::solve(sys, ArrowKernel::Reference, 1, rho_t, rho_beta);
  for (ArrowKernel kern : {ArrowKernel::Hand, ArrowKernel::Structured, ArrowKernel::Lapack, ArrowKernel::Auto}) {
    const auto got = tb::solve(sys, kern, 2, rho_t, rho_beta);
    for (std::size_t a = 0; a < sys.size(); ++a) {
      if (!ref[a].ok() || !got[a].ok()) {
        st.all_ok = false;
        continue;
      }
      const tb::Errors e = tb::compare(got[a].value(), ref[a].value());
      st.worst_delta = std::max(st.worst_delta, e.delta);
      st.worst_logdet = std::max(st.worst_logdet, e.log_det);
      st.nonzero_refs = st.nonzero_refs && e.ref_norm > 0.0;
    }
  }
  const auto hand = tb::solve(sys, ArrowKernel::Hand, 1, rho_t, rho_beta);
  const auto structured = tb::solve(sys, ArrowKernel::Structured, 1, rho_t, rho_beta);
  for (std::size_t a = 0; a < sys.size(); ++a) {
    if (!hand[a].ok() || !structured[a].ok()) {
      st.all_ok = false;
      continue;
    }
    const tb::Errors e = tb::compare(hand[a].value(), structured[a].value());
    st.worst_hand_vs_structured = std::max({st.worst_hand_vs_structured, e.delta, e.log_det});
  }
  return st;
}

// The Hand kernel forced onto each narrower CPU path this CPU supports (only
// when POPPER_DISPATCH is not 'auto'): same oracle, same tolerances, so a lane
// bug on a path the automatic dispatch never takes here is still caught.
// Returns the paths that ran.
std::vector<popper::cpu::Isa> check_forced_paths(const std::vector<ArrowSystem>& sys, double rho_t, double rho_beta,
                                                 double tol, double hand_tol, std::uint64_t seed) {
  std::vector<popper::cpu::Isa> ran;
  if (!popper::forced_paths_allowed()) return ran;
  const auto ref = tb::solve(sys, ArrowKernel::Reference, 1, rho_t, rho_beta);
  const auto structured = tb::solve(sys, ArrowKernel::Structured, 1, rho_t, rho_beta);
  for (popper::cpu::Isa isa : popper::cpu::supported_isas()) {
    if (isa == popper::cpu::auto_isa()) continue;  // the automatic path, checked above
    const auto got = solve_batched_k1_border(sys, rho_t, rho_beta, ArrowSolveOptions{ArrowKernel::Hand, 2, isa});
    for (std::size_t a = 0; a < sys.size(); ++a) {
      EXPECT_TRUE(got[a].ok() && ref[a].ok() && structured[a].ok()) << popper::cpu::backend_tag(isa) << " atom " << a;
      if (!got[a].ok() || !ref[a].ok() || !structured[a].ok()) continue;
      const tb::Errors e = tb::compare(got[a].value(), ref[a].value());
      EXPECT_LE(std::max(e.delta, e.log_det), tol)
          << popper::cpu::backend_tag(isa) << " atom " << a << " seed " << seed;
      const tb::Errors h = tb::compare(got[a].value(), structured[a].value());
      EXPECT_LE(std::max(h.delta, h.log_det), hand_tol)
          << popper::cpu::backend_tag(isa) << " vs structured, atom " << a << " seed " << seed;
    }
    ran.push_back(isa);
  }
  return ran;
}
}  // namespace

POPPER_FALSIFIER("FALSIFY-ARROW-001", [](const popper::Params& p) {
  const double tol = p.number("rel_tol");
  const double hand_tol = p.number("hand_rel_tol");
  const auto rho_t = p.number("rho_t"), rho_beta = p.number("rho_beta");
  std::vector<popper::cpu::Isa> forced;
  for (const auto& c : p.list("classes")) {
    const auto rows = c.integers("rows"), ds = c.integers("d"), ks = c.integers("k");
    std::vector<std::size_t> r(rows.begin(), rows.end()), d(ds.begin(), ds.end()), k(ks.begin(), ks.end());
    const auto atoms = static_cast<std::size_t>(c.integer("atoms"));
    const auto seed = p.seed() + static_cast<std::uint64_t>(c.integer("seed", 0));
    const auto sys = tb::make_class(seed, r, d, k, atoms);
    const ParityStats st = check_class(sys, rho_t, rho_beta);
    EXPECT_TRUE(st.all_ok) << "a well-conditioned atom failed; seed " << seed;
    EXPECT_TRUE(st.nonzero_refs) << "reference solution is zero; seed " << seed;
    EXPECT_LE(st.worst_delta, tol) << "delta parity, seed " << seed;
    EXPECT_LE(st.worst_logdet, tol) << "log det parity, seed " << seed;
    EXPECT_LE(st.worst_hand_vs_structured, hand_tol) << "hand vs structured, seed " << seed;
    forced = check_forced_paths(sys, rho_t, rho_beta, tol, hand_tol, seed);
  }
  if (!::testing::Test::HasFailure()) {
    for (ArrowKernel kern : {ArrowKernel::Hand, ArrowKernel::Structured, ArrowKernel::Lapack, ArrowKernel::Auto})
      tb::record(kern);
    for (popper::cpu::Isa isa : forced) popper::record_backend(popper::cpu::backend_tag(isa), popper::Dispatch::Forced);
  }
});

POPPER_FALSIFIER("FALSIFY-ARROW-002", [](const popper::Params& p) {
  const double tol = p.number("rel_tol");
  const double hand_tol = p.number("hand_rel_tol");
  const auto max_rows = static_cast<int>(p.integer("max_rows"));
  const auto max_atoms = static_cast<int>(p.integer("max_atoms"));
  const bool ok = rc::check("arrow kernels match the dense reference", [&] {
    const auto atoms = *rc::gen::inRange(1, max_atoms + 1);
    const auto seed = *rc::gen::inRange<std::uint64_t>(0, 1u << 30);
    std::vector<ArrowSystem> sys;
    for (int a = 0; a < atoms; ++a) {
      const auto n = static_cast<std::size_t>(*rc::gen::inRange(0, max_rows + 1));
      const auto d = static_cast<std::size_t>(*rc::gen::inRange(1, 9));
      const auto k = static_cast<std::size_t>(*rc::gen::inRange(1, 33));
      sys.push_back(tb::make_system(seed + static_cast<std::uint64_t>(a), n, d, k));
    }
    const double rho_t = *rc::gen::element(0.0, 1e-3, 0.5);
    const double rho_beta = *rc::gen::element(0.0, 1e-3, 0.5);
    const ParityStats st = check_class(sys, rho_t, rho_beta);
    RC_ASSERT(st.all_ok);
    RC_ASSERT(st.nonzero_refs);
    RC_ASSERT(st.worst_delta <= tol);
    RC_ASSERT(st.worst_logdet <= tol);
    RC_ASSERT(st.worst_hand_vs_structured <= hand_tol);
  });
  EXPECT_TRUE(ok);
  if (ok)
    for (ArrowKernel kern : {ArrowKernel::Hand, ArrowKernel::Structured, ArrowKernel::Lapack, ArrowKernel::Auto})
      tb::record(kern);
});

// Exhaustive over small shapes: the Hand kernel is bit-identical to the
// Structured body (same operation order, no contraction), which is what lets a
// device decline be served by Hand with the device's numbers.
POPPER_HARNESS("KANI-ARROW-001", [](const popper::Params& p) {
  const auto kmax = static_cast<std::size_t>(p.bound());
  std::size_t checked = 0;
  for (std::size_t d = 1; d <= kMaxRowDim; ++d)
    for (std::size_t k = 1; k <= kmax; ++k) {
      std::vector<ArrowSystem> sys;
      for (std::size_t n : {0u, 1u, 2u, 5u, 7u})
        sys.push_back(tb::make_system(p.seed() + d * 100 + k * 10 + n, n, d, k));
      const auto hand = tb::solve(sys, ArrowKernel::Hand, 1, 1e-3, 1e-3);
      const auto structured = tb::solve(sys, ArrowKernel::Structured, 1, 1e-3, 1e-3);
      for (std::size_t a = 0; a < sys.size(); ++a) {
        EXPECT_TRUE(hand[a].ok()) << "d=" << d << " k=" << k << " atom " << a;
        EXPECT_TRUE(tb::bit_equal(hand[a], structured[a])) << "d=" << d << " k=" << k << " n=" << sys[a].rows;
        ++checked;
      }
    }
  EXPECT_EQ(checked, kMaxRowDim * kmax * 5);
  if (!::testing::Test::HasFailure()) {
    tb::record(ArrowKernel::Hand);
    tb::record(ArrowKernel::Structured);
  }
});
