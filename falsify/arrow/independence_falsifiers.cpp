// An atom's result does not depend on its class, its position in the class,
// or the thread count (bit-identical), for the Hand and Structured kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "impl/common/parallel.hpp"
#include "testbed.hpp"
#include "popper/binding.hpp"

POPPER_FALSIFIER("FALSIFY-ARROW-003", [](const popper::Params& p) {
  using namespace popper::arrow;
  namespace tb = popper::arrow::testbed;
  const auto atoms = static_cast<std::size_t>(p.integer("atoms"));
  const auto threads = p.integers("threads");
  // Exactly the threads asked for: the size rule would solve this small class on one.
  const popper::parallel::ScopedExactThreads exact;
  const auto sys = tb::make_class(p.seed(), {0, 1, 3, 17, 40, 9, 2}, {2, 1, 3, 2, 5, 8, 4}, {6, 1, 32, 6, 7, 3}, atoms);
  for (ArrowKernel kern : {ArrowKernel::Hand, ArrowKernel::Structured}) {
    // Alone: each atom as a class of one.
    std::vector<ArrowResult> alone;
    for (const auto& s : sys) alone.push_back(std::move(tb::solve({s}, kern, 1, 1e-3, 1e-2)[0]));
    std::mt19937_64 rng(p.seed());
    for (std::int64_t t : threads) {
      std::vector<std::size_t> order(atoms);
      for (std::size_t i = 0; i < atoms; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<ArrowSystem> shuffled;
      for (std::size_t i : order) shuffled.push_back(sys[i]);
      const auto got = tb::solve(shuffled, kern, static_cast<unsigned>(t), 1e-3, 1e-2);
      for (std::size_t pos = 0; pos < atoms; ++pos) {
        EXPECT_TRUE(alone[order[pos]].ok());
        EXPECT_TRUE(tb::bit_equal(got[pos], alone[order[pos]]))
            << "atom " << order[pos] << " at position " << pos << ", threads " << t << ", seed " << p.seed();
      }
    }
    if (!::testing::Test::HasFailure()) tb::record(kern);
  }
});
