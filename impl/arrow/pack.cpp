// Dimension checks and the CSR pack (pack.hpp). Every check runs before any
// numerical work, and names the atom index and the field.
#include "impl/arrow/pack.hpp"

#include <string>

#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::arrow {

namespace {
[[noreturn]] void bad(std::size_t atom, const char* field, const std::string& what) {
  throw InvalidArgument("arrow: atom " + std::to_string(atom) + ": field '" + field + "' " + what);
}
void expect_size(std::size_t atom, const char* field, std::size_t actual, std::size_t expected) {
  if (actual != expected)
    bad(atom, field, "has " + std::to_string(actual) + " elements, expected " + std::to_string(expected));
}
void check_dims(std::size_t atom, std::size_t d, std::size_t k) {
  if (d < 1 || d > kMaxRowDim) bad(atom, "row_dim", "= " + std::to_string(d) + " is outside 1..8");
  if (k < 1 || k > kMaxBorderDim) bad(atom, "border_dim", "= " + std::to_string(k) + " is outside 1..32");
}
}  // namespace

const char* to_string(ArrowField f) {
  switch (f) {
    case ArrowField::D: return "D";
    case ArrowField::B: return "B";
    case ArrowField::g_t: return "g_t";
    case ArrowField::hbb: return "hbb";
    case ArrowField::g_b: return "g_b";
    case ArrowField::result: return "result";
  }
  return "?";
}

void check_systems(std::span<const ArrowSystem> systems) {
  for (std::size_t a = 0; a < systems.size(); ++a) {
    const ArrowSystem& s = systems[a];
    check_dims(a, s.row_dim, s.border_dim);
    const std::size_t n = s.rows, d = s.row_dim, k = s.border_dim;
    expect_size(a, "D", s.D.size(), n * d * d);
    expect_size(a, "B", s.B.size(), n * d * k);
    expect_size(a, "g_t", s.g_t.size(), n * d);
    expect_size(a, "hbb", s.hbb.size(), k * k);
    expect_size(a, "g_b", s.g_b.size(), k);
  }
}

std::size_t BatchedK1Pack::bytes() const {
  return atom_offsets.size() * sizeof(std::int64_t) + (row_dims.size() + border_dims.size()) * sizeof(std::int32_t) +
         (D.size() + B.size() + g_t.size() + hbb.size() + g_b.size()) * sizeof(double);
}

BatchedK1Pack pack_systems(std::span<const ArrowSystem> systems) {
  check_systems(systems);
  std::size_t nD = 0, nB = 0, ng = 0, nC = 0, nb = 0;
  for (const auto& s : systems) {
    nD += s.D.size();
    nB += s.B.size();
    ng += s.g_t.size();
    nC += s.hbb.size();
    nb += s.g_b.size();
  }
  BatchedK1Pack p;
  // Exact reservations: the pack holds the sum of the parts and nothing else.
  p.atom_offsets.reserve(systems.size() + 1);
  p.row_dims.reserve(systems.size());
  p.border_dims.reserve(systems.size());
  p.D.reserve(POPPER_MUTANT("arrow-pack-slack") ? nD + 8 : nD);
  p.B.reserve(nB);
  p.g_t.reserve(ng);
  p.hbb.reserve(nC);
  p.g_b.reserve(nb);
  std::int64_t rows = 0;
  p.atom_offsets.push_back(0);
  for (const auto& s : systems) {
    rows += static_cast<std::int64_t>(s.rows);
    p.atom_offsets.push_back(rows);
    p.row_dims.push_back(static_cast<std::int32_t>(s.row_dim));
    p.border_dims.push_back(static_cast<std::int32_t>(s.border_dim));
    p.D.insert(p.D.end(), s.D.begin(), s.D.end());
    p.B.insert(p.B.end(), s.B.begin(), s.B.end());
    p.g_t.insert(p.g_t.end(), s.g_t.begin(), s.g_t.end());
    p.hbb.insert(p.hbb.end(), s.hbb.begin(), s.hbb.end());
    p.g_b.insert(p.g_b.end(), s.g_b.begin(), s.g_b.end());
  }
  return p;
}

std::vector<AtomSlice> index_pack(const BatchedK1Pack& p) {
  const std::size_t B = p.atoms();
  if (p.border_dims.size() != B) bad(0, "border_dims", "length differs from row_dims");
  if (p.atom_offsets.size() != B + 1) bad(0, "atom_offsets", "must have atoms()+1 entries");
  if (p.atom_offsets[0] != 0) bad(0, "atom_offsets", "must start at 0");
  std::vector<AtomSlice> out;
  out.reserve(B);
  AtomSlice s{};
  std::size_t D = 0, Bo = 0, g = 0, C = 0, gb = 0;
  for (std::size_t a = 0; a < B; ++a) {
    const std::int64_t r0 = p.atom_offsets[a], r1 = p.atom_offsets[a + 1];
    if (r1 < r0) bad(a, "atom_offsets", "is decreasing");
    if (p.row_dims[a] < 1 || p.border_dims[a] < 1) bad(a, "row_dims", "must be positive");
    s.rows = static_cast<std::size_t>(r1 - r0);
    s.d = static_cast<std::size_t>(p.row_dims[a]);
    s.k = static_cast<std::size_t>(p.border_dims[a]);
    check_dims(a, s.d, s.k);
    s.row_begin = static_cast<std::size_t>(r0);
    s.D = D;
    s.B = Bo;
    s.g_t = g;
    s.hbb = C;
    s.g_b = gb;
    s.beta = gb;
    D += s.rows * s.d * s.d;
    Bo += s.rows * s.d * s.k;
    g += s.rows * s.d;
    C += s.k * s.k;
    gb += s.k;
    out.push_back(s);
  }
  // Whole-buffer sizes: the last atom whose slice would overrun is the culprit.
  const std::size_t last = B == 0 ? 0 : B - 1;
  expect_size(last, "D", p.D.size(), D);
  expect_size(last, "B", p.B.size(), Bo);
  expect_size(last, "g_t", p.g_t.size(), g);
  expect_size(last, "hbb", p.hbb.size(), C);
  expect_size(last, "g_b", p.g_b.size(), gb);
  return out;
}

AtomView view_of(const BatchedK1Pack& p, const AtomSlice& s) {
  return AtomView{s.rows,
                  s.d,
                  s.k,
                  p.D.data() + s.D,
                  p.B.data() + s.B,
                  p.g_t.data() + s.g_t,
                  p.hbb.data() + s.hbb,
                  p.g_b.data() + s.g_b};
}

AtomView view_of(const ArrowSystem& s) {
  return AtomView{s.rows, s.row_dim, s.border_dim, s.D.data(), s.B.data(), s.g_t.data(), s.hbb.data(), s.g_b.data()};
}

}  // namespace popper::arrow
