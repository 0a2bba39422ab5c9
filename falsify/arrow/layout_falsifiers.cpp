// The CSR pack holds exactly the sum of its parts; bad dimensions are usage
// errors naming the atom and the field, raised before any work.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "testbed.hpp"
#include "popper/binding.hpp"
#include "popper/error.hpp"

namespace {
using namespace popper::arrow;
namespace tb = popper::arrow::testbed;

std::size_t parts_bytes(const std::vector<ArrowSystem>& sys) {
  std::size_t doubles = 0;
  for (const auto& s : sys) doubles += s.D.size() + s.B.size() + s.g_t.size() + s.hbb.size() + s.g_b.size();
  return doubles * sizeof(double) + (sys.size() + 1) * sizeof(std::int64_t) + 2 * sys.size() * sizeof(std::int32_t);
}

void expect_pack_exact(const std::vector<ArrowSystem>& sys) {
  const BatchedK1Pack pack = pack_systems(sys);
  EXPECT_EQ(pack.bytes(), parts_bytes(sys));
  std::size_t nD = 0, nB = 0, ng = 0, nC = 0, nb = 0;
  for (const auto& s : sys) {
    nD += s.rows * s.row_dim * s.row_dim;
    nB += s.rows * s.row_dim * s.border_dim;
    ng += s.rows * s.row_dim;
    nC += s.border_dim * s.border_dim;
    nb += s.border_dim;
  }
  EXPECT_EQ(pack.D.size(), nD);
  EXPECT_EQ(pack.B.size(), nB);
  EXPECT_EQ(pack.g_t.size(), ng);
  EXPECT_EQ(pack.hbb.size(), nC);
  EXPECT_EQ(pack.g_b.size(), nb);
  // No hidden slack either: capacities equal sizes.
  EXPECT_EQ(pack.D.capacity(), pack.D.size());
  EXPECT_EQ(pack.B.capacity(), pack.B.size());
  EXPECT_EQ(pack.g_t.capacity(), pack.g_t.size());
  ASSERT_EQ(pack.atom_offsets.size(), sys.size() + 1);
  for (std::size_t a = 0; a < sys.size(); ++a)
    EXPECT_EQ(pack.atom_offsets[a + 1] - pack.atom_offsets[a], static_cast<std::int64_t>(sys[a].rows));
  // Every atom's slice reads back its own data.
  const auto slices = index_pack(pack);
  for (std::size_t a = 0; a < sys.size(); ++a) {
    const AtomView v = view_of(pack, slices[a]);
    for (std::size_t e = 0; e < sys[a].B.size(); ++e) ASSERT_EQ(v.B[e], sys[a].B[e]);
    for (std::size_t e = 0; e < sys[a].g_b.size(); ++e) ASSERT_EQ(v.g_b[e], sys[a].g_b[e]);
  }
}

// Corrupting `field` of atom `atom` must throw InvalidArgument naming both.
void expect_named_error(std::vector<ArrowSystem> sys, std::size_t atom, const std::string& field,
                        const std::function<void(ArrowSystem&)>& corrupt) {
  corrupt(sys[atom]);
  try {
    (void)solve_batched_k1_border(sys, 0.0, 0.0);
    ADD_FAILURE() << "no error for atom " << atom << " field " << field;
  } catch (const popper::InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("atom " + std::to_string(atom)), std::string::npos) << msg;
    EXPECT_NE(msg.find("'" + field + "'"), std::string::npos) << msg;
  }
}

void expect_all_field_errors(const std::vector<ArrowSystem>& sys, std::size_t atom) {
  expect_named_error(sys, atom, "D", [](ArrowSystem& s) { s.D.push_back(1.0); });
  expect_named_error(sys, atom, "B", [](ArrowSystem& s) {
    if (s.B.empty()) s.B.push_back(0.0);  // an atom with no rows: grow instead of shrinking
    else s.B.pop_back();
  });
  expect_named_error(sys, atom, "g_t", [](ArrowSystem& s) { s.g_t.push_back(0.0); });
  expect_named_error(sys, atom, "hbb", [](ArrowSystem& s) { s.hbb.pop_back(); });
  expect_named_error(sys, atom, "g_b", [](ArrowSystem& s) { s.g_b.push_back(0.0); });
  expect_named_error(sys, atom, "row_dim", [](ArrowSystem& s) { s.row_dim = 9; });
  expect_named_error(sys, atom, "border_dim", [](ArrowSystem& s) { s.border_dim = 0; });
  expect_named_error(sys, atom, "D", [](ArrowSystem& s) { ++s.rows; });
}
}  // namespace

POPPER_FALSIFIER("FALSIFY-ARROW-007", [](const popper::Params& p) {
  const auto atoms = static_cast<std::size_t>(p.integer("atoms"));
  const auto sys = tb::make_class(p.seed(), {0, 1, 16, 256, 3}, {2, 1, 8, 3}, {6, 32, 1}, atoms);
  expect_pack_exact(sys);
  expect_all_field_errors(sys, atoms - 1);
  expect_all_field_errors(sys, atoms / 2);
});

// Exhaustive over small shapes: every (n, d, k) pair of atoms packs exactly and
// every single-field corruption is rejected with the atom and field named.
POPPER_HARNESS("KANI-ARROW-002", [](const popper::Params& p) {
  const auto bound = static_cast<std::size_t>(p.bound());
  std::size_t cases = 0;
  for (std::size_t n = 0; n <= bound; ++n)
    for (std::size_t d = 1; d <= bound; ++d)
      for (std::size_t k = 1; k <= bound; ++k) {
        const std::vector<ArrowSystem> sys{tb::make_system(1, bound - n, k, d), tb::make_system(2, n, d, k)};
        expect_pack_exact(sys);
        expect_all_field_errors(sys, 1);
        ++cases;
      }
  EXPECT_EQ(cases, (bound + 1) * bound * bound);
});
