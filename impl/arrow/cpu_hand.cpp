// Hand kernel: SIMD across atoms. Atoms are grouped by (d, k), sorted by n_a
// (so lanes carry similar row counts), W per group (W = 8 on AVX-512, 4 on
// AVX2); each group is gathered into a compact interleaved workspace (W x W
// register transposes, scanning the inputs for Inf/NaN on the way) and solved
// by hand_group_avx512 / hand_group_avx2; delta_t goes back the same way,
// straight into the results' vectors, its finiteness checked in passing.
// Groups go to the parallel runtime's workers as they come free
// (run_claimed). A lane's numbers depend only on its own atom
// (hand_group.hpp), so results are bit-identical for any grouping, lane
// width, position or thread count.
// Without AVX2 (or capped to scalar): run_structured.
#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "impl/arrow/hand_group.hpp"
#include "impl/arrow/kernels.hpp"
#include "impl/common/cpu_features.hpp"
#include "popper/mutant.hpp"

namespace popper::arrow {

namespace {

// One element of the interleaved workspace: W lanes, aligned to (and exactly
// as big as) one vector register, so element e sits at e * W doubles.
template <std::size_t W>
struct alignas(W * sizeof(double)) LaneW {
  double v[W];
};
static_assert(sizeof(LaneW<4>) == 4 * sizeof(double) && sizeof(LaneW<8>) == 8 * sizeof(double));

template <std::size_t W>
struct LaneGroup {
  std::size_t d, k, rows;
  std::size_t count;
  std::size_t atom[W];
};

template <std::size_t W>
std::vector<LaneGroup<W>> make_groups(std::span<const AtomSlice> slices) {
  constexpr std::size_t kLanes = W;
  std::map<std::pair<std::size_t, std::size_t>, std::vector<std::size_t>> by_shape;
  for (std::size_t a = 0; a < slices.size(); ++a) by_shape[{slices[a].d, slices[a].k}].push_back(a);
  std::vector<LaneGroup<W>> groups;
  for (auto& [shape, atoms] : by_shape) {
    std::stable_sort(atoms.begin(), atoms.end(),
                     [&](std::size_t x, std::size_t y) { return slices[x].rows > slices[y].rows; });
    for (std::size_t i = 0; i < atoms.size(); i += kLanes) {
      LaneGroup<W> g{shape.first, shape.second, 0, std::min(kLanes, atoms.size() - i), {}};
      for (std::size_t l = 0; l < g.count; ++l) {
        g.atom[l] = atoms[i + l];
        g.rows = std::max(g.rows, slices[g.atom[l]].rows);
      }
      groups.push_back(g);
    }
  }
  return groups;
}

// Workspace offsets (in lane units) of one group.
struct Layout {
  std::size_t D, B, g, C, gb, L, S, r, dt, dbeta, total;
  Layout(std::size_t rows, std::size_t d, std::size_t k) {
    std::size_t o = 0;
    auto take = [&](std::size_t n) {
      const std::size_t at = o;
      o += std::max<std::size_t>(n, 1);
      return at;
    };
    D = take(rows * d * d);
    B = take(rows * d * k);
    g = take(rows * d);
    C = take(k * k);
    gb = take(k);
    L = take(rows * d * d);
    S = take(k * k);
    r = take(k);
    dt = take(rows * d);
    dbeta = take(k);
    total = o;
  }
};

// The lane each ISA's mutant ignores (the last one), or W when none is active.
template <std::size_t W>
std::size_t ignored_lane() {
  static const bool on =
      W == 8 ? POPPER_MUTANT("arrow-avx512-skip-last-lane") : POPPER_MUTANT("arrow-avx2-skip-last-lane");
  return on ? W - 1 : W;
}

// Mutation point: the transposes' Inf/NaN scan is lost.
bool transposed_scan_lost() {
  static const bool on = POPPER_MUTANT("arrow-hand-transpose-misses-nonfinite");
  return on;
}
// Mutation point: every result is reported finite.
bool results_unchecked() {
  static const bool on = POPPER_MUTANT("arrow-hand-results-unchecked");
  return on;
}

template <std::size_t W>
void solve_group(const BatchedK1Pack& pack, std::span<const AtomSlice> slices, const LaneGroup<W>& grp, double rho_t,
                 double rho_beta, std::vector<LaneW<W>>& ws, RawOutputs& out) {
  constexpr std::size_t kLanes = W;
  const std::size_t d = grp.d, k = grp.k, rows = grp.rows, dd = d * d;
  const Layout lay(rows, d, k);
  if (ws.size() < lay.total) ws.resize(lay.total);
  LaneW<W>* w = ws.data();
  // Per lane: the atom's slice (unused lanes: an empty atom with C = I).
  const AtomSlice* lane[kLanes] = {};
  double lane_rows[kLanes] = {};
  for (std::size_t l = 0; l < grp.count; ++l) {
    lane[l] = &slices[grp.atom[l]];
    lane_rows[l] = static_cast<double>(lane[l]->rows);
  }
  // Interleave one field: element e of lane l from src(l)[e] while e < n(l),
  // else pad(e). Element-major, so the workspace is written one whole vector
  // at a time (lane-major stores revisit every line W times): W x W register
  // transposes while every lane has elements, then element by element.
  // Returns the lanes (bit l) whose elements held an Inf or NaN.
  auto gather = [&](std::size_t base, auto&& src, auto&& n, std::size_t total, auto&& pad) {
    const double* from[kLanes];
    std::size_t count[kLanes], common = total;
    for (std::size_t l = 0; l < kLanes; ++l) {
      from[l] = l < grp.count ? src(*lane[l]) : nullptr;
      count[l] = l < grp.count ? n(*lane[l]) : 0;
      common = std::min(common, count[l]);
    }
    LaneW<W>* dst = w + base;
    const std::size_t blocks = common / W * W;
    unsigned bad = W == 8 ? interleave_avx512(from, blocks, dst->v) : interleave_avx2(from, blocks, dst->v);
    if (transposed_scan_lost()) bad = 0;
    for (std::size_t e = blocks; e < total; ++e)
      for (std::size_t l = 0; l < kLanes; ++l) {
        dst[e].v[l] = e < count[l] ? from[l][e] : pad(e);
        if (!std::isfinite(dst[e].v[l])) bad |= 1u << l;
      }
    return bad;
  };
  auto zero = [](std::size_t) { return 0.0; };
  auto eye_d = [d, dd](std::size_t e) { return (e % dd) % (d + 1) == 0 ? 1.0 : 0.0; };
  auto eye_k = [k](std::size_t e) { return e % (k + 1) == 0 ? 1.0 : 0.0; };
  auto row_elems = [](std::size_t per_row) { return [per_row](const AtomSlice& s) { return s.rows * per_row; }; };
  auto border_elems = [](std::size_t n) { return [n](const AtomSlice&) { return n; }; };
  // In ArrowField order (D, B, g_t, hbb, g_b): an atom reports its first non-finite field.
  const unsigned nonfinite[5] = {
      gather(
          lay.D, [&](const AtomSlice& s) { return pack.D.data() + s.D; }, row_elems(dd), rows * dd, eye_d),
      gather(
          lay.B, [&](const AtomSlice& s) { return pack.B.data() + s.B; }, row_elems(d * k), rows * d * k, zero),
      gather(
          lay.g, [&](const AtomSlice& s) { return pack.g_t.data() + s.g_t; }, row_elems(d), rows * d, zero),
      gather(
          lay.C, [&](const AtomSlice& s) { return pack.hbb.data() + s.hbb; }, border_elems(k * k), k * k, eye_k),
      gather(
          lay.gb, [&](const AtomSlice& s) { return pack.g_b.data() + s.g_b; }, border_elems(k), k, zero)};
  double status[4 * kLanes];
  auto p = [&](std::size_t off) { return w[off].v; };
  const HandGroupArgs args{rows,      d,         k,        p(lay.D), p(lay.B), p(lay.g),  p(lay.C),
                           p(lay.gb), lane_rows, p(lay.L), p(lay.S), p(lay.r), p(lay.dt), p(lay.dbeta),
                           rho_t,     rho_beta,  status};
  if constexpr (W == 8) hand_group_avx512(args);
  else hand_group_avx2(args);
  const std::size_t skip = ignored_lane<W>();  // W unless a lane mutant is active
  // delta_t back to each lane's solution, by transposes while every lane has rows.
  double* dt_of[kLanes];
  std::size_t dt_count[kLanes], common = rows * d;
  for (std::size_t l = 0; l < kLanes; ++l) {
    const bool keep = l < grp.count && l != skip;
    dt_of[l] = keep ? out.solution(grp.atom[l], *lane[l]).delta_t.data() : nullptr;
    dt_count[l] = keep ? lane[l]->rows * d : 0;
    common = std::min(common, dt_count[l]);
  }
  // Lanes (bit l) whose results hold an Inf or NaN, checked while in cache.
  const std::size_t blocks = common / W * W;
  unsigned bad = W == 8 ? deinterleave_avx512(p(lay.dt), blocks, dt_of) : deinterleave_avx2(p(lay.dt), blocks, dt_of);
  for (std::size_t e = blocks; e < rows * d; ++e)
    for (std::size_t l = 0; l < kLanes; ++l)
      if (e < dt_count[l]) {
        dt_of[l][e] = w[lay.dt + e].v[l];
        if (!std::isfinite(dt_of[l][e])) bad |= 1u << l;
      }
  for (std::size_t l = 0; l < grp.count; ++l) {
    if (l == skip) continue;
    const std::size_t a = grp.atom[l];
    for (std::size_t e = 0; e < k; ++e) {
      out.sol[a].delta_beta[e] = w[lay.dbeta + e].v[l];
      if (!std::isfinite(out.sol[a].delta_beta[e])) bad |= 1u << l;
    }
    out.result_finite[a] = (bad >> l & 1u) && !results_unchecked() ? 0 : 1;
    out.det_mant[a] = status[0 * kLanes + l];
    out.det_exp[a] = status[1 * kLanes + l];
    out.fail_row[a] = status[2 * kLanes + l];
    out.schur_failed[a] = status[3 * kLanes + l];
    out.nonfinite[a] = -1;
    for (int f = 4; f >= 0; --f)
      if (nonfinite[f] >> l & 1u) out.nonfinite[a] = f;
  }
}

template <std::size_t W>
void run_groups(const BatchedK1Pack& pack, std::span<const AtomSlice> slices, double rho_t, double rho_beta,
                unsigned threads, RawOutputs& out) {
  const std::vector<LaneGroup<W>> groups = make_groups<W>(slices);
  std::vector<double> cost(groups.size());
  for (std::size_t i = 0; i < groups.size(); ++i)
    cost[i] = static_cast<double>(groups[i].count) * atom_cost(groups[i].rows, groups[i].d, groups[i].k);
  // Claimed in make_groups' order (largest rows first within each (d, k)) as workers come free.
  run_claimed(cost, threads, [&](std::size_t i) {
    thread_local std::vector<LaneW<W>> ws;  // per thread, reused across calls
    solve_group<W>(pack, slices, groups[i], rho_t, rho_beta, ws, out);
  });
}
}  // namespace

popper::cpu::Isa hand_isa(popper::cpu::Isa requested) { return popper::cpu::resolve(requested, "arrow Hand kernel"); }

bool hand_uses_avx2() { return hand_isa(popper::cpu::Isa::Auto) != popper::cpu::Isa::Scalar; }

void run_hand(const BatchedK1Pack& pack, std::span<const AtomSlice> slices, double rho_t, double rho_beta,
              unsigned threads, RawOutputs& out, popper::cpu::Isa isa) {
  switch (hand_isa(isa)) {
    case popper::cpu::Isa::Avx512: run_groups<8>(pack, slices, rho_t, rho_beta, threads, out); return;
    case popper::cpu::Isa::Avx2: run_groups<4>(pack, slices, rho_t, rho_beta, threads, out); return;
    default: run_structured(pack, slices, rho_t, rho_beta, threads, out); return;
  }
}

}  // namespace popper::arrow
