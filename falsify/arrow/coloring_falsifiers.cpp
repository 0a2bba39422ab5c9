// Coloring atoms by support overlap: every class is support-disjoint and every
// atom is in exactly one class.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include "impl/arrow/coloring.hpp"
#include "popper/binding.hpp"

namespace {
using namespace popper::arrow;

// Brute-force checks, independent of the implementation's bookkeeping.
bool disjoint_brute(const std::vector<Support>& sup, const std::vector<std::size_t>& cls) {
  for (std::size_t x = 0; x < cls.size(); ++x)
    for (std::size_t y = x + 1; y < cls.size(); ++y)
      for (auto r : sup[cls[x]])
        for (auto q : sup[cls[y]])
          if (r == q) return false;
  return true;
}
bool partition_ok(const std::vector<Support>& sup, const std::vector<std::vector<std::size_t>>& classes) {
  std::vector<int> seen(sup.size(), 0);
  for (const auto& c : classes) {
    if (c.empty()) return false;
    for (auto a : c) {
      if (a >= sup.size()) return false;
      ++seen[a];
    }
  }
  for (int s : seen)
    if (s != 1) return false;
  return true;
}
}  // namespace

POPPER_FALSIFIER("FALSIFY-ARROW-011", [](const popper::Params& p) {
  const auto max_atoms = static_cast<int>(p.integer("max_atoms"));
  const auto max_rows = static_cast<int>(p.integer("max_row_id"));
  const bool ok = rc::check("color classes are support-disjoint partitions", [&] {
    const auto atoms = *rc::gen::inRange(0, max_atoms + 1);
    std::vector<Support> sup;
    for (int a = 0; a < atoms; ++a)
      sup.push_back(*rc::gen::container<Support>(rc::gen::inRange<std::int64_t>(0, max_rows)));
    const auto classes = color_by_support(sup);
    RC_ASSERT(partition_ok(sup, classes));
    for (const auto& c : classes) {
      RC_ASSERT(disjoint_brute(sup, c));
      RC_ASSERT(is_support_disjoint(sup, c));
    }
    // is_support_disjoint must also say no when two atoms share a row.
    for (std::size_t x = 0; x + 1 < sup.size(); ++x) {
      const std::vector<std::size_t> pair{x, x + 1};
      RC_ASSERT(is_support_disjoint(sup, pair) == disjoint_brute(sup, pair));
    }
  });
  EXPECT_TRUE(ok);
});

// Exhaustive: every family of `bound` atoms whose supports are subsets of 3 rows.
POPPER_HARNESS("KANI-ARROW-003", [](const popper::Params& p) {
  const auto atoms = static_cast<std::size_t>(p.bound());
  constexpr int kRows = 3;
  std::size_t families = 1;
  for (std::size_t a = 0; a < atoms; ++a) families *= 1u << kRows;
  std::size_t bad = 0;
  for (std::size_t f = 0; f < families; ++f) {
    std::vector<Support> sup(atoms);
    std::size_t code = f;
    for (std::size_t a = 0; a < atoms; ++a, code >>= kRows)
      for (int r = 0; r < kRows; ++r)
        if (code & (1u << r)) sup[a].push_back(r);
    const auto classes = color_by_support(sup);
    bool good = partition_ok(sup, classes);
    for (const auto& c : classes) good = good && disjoint_brute(sup, c) && is_support_disjoint(sup, c);
    if (!good) ++bad;
  }
  EXPECT_EQ(bad, 0u) << "of " << families << " support families";
});
