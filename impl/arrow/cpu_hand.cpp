// Hand kernel: SIMD across atoms. Atoms are grouped by (d, k), sorted by n_a
// (so lanes carry similar row counts), 4 per group; each group is gathered
// into a compact interleaved workspace and solved by hand_group_avx2. Groups
// are split over std::threads by a static partition. A lane's numbers depend
// only on its own atom (hand_group.hpp), so results are bit-identical for
// any grouping, position or thread count. Without AVX2: run_structured.
#include <algorithm>
#include <map>
#include <utility>

#include "arrow/hand_group.hpp"
#include "common/cpu_features.hpp"
#include "arrow/kernels.hpp"

namespace popper::arrow {

namespace {
constexpr std::size_t kLanes = 4;

struct alignas(32) Lane4 {
  double v[kLanes];
};

struct LaneGroup {
  std::size_t d, k, rows;
  std::size_t count;
  std::size_t atom[kLanes];
};

std::vector<LaneGroup> make_groups(std::span<const AtomSlice> slices) {
  std::map<std::pair<std::size_t, std::size_t>, std::vector<std::size_t>> by_shape;
  for (std::size_t a = 0; a < slices.size(); ++a) by_shape[{slices[a].d, slices[a].k}].push_back(a);
  std::vector<LaneGroup> groups;
  for (auto& [shape, atoms] : by_shape) {
    std::stable_sort(atoms.begin(), atoms.end(),
                     [&](std::size_t x, std::size_t y) { return slices[x].rows > slices[y].rows; });
    for (std::size_t i = 0; i < atoms.size(); i += kLanes) {
      LaneGroup g{shape.first, shape.second, 0, std::min(kLanes, atoms.size() - i), {}};
      for (std::size_t l = 0; l < g.count; ++l) {
        g.atom[l] = atoms[i + l];
        g.rows = std::max(g.rows, slices[g.atom[l]].rows);
      }
      groups.push_back(g);
    }
  }
  return groups;
}

// Workspace offsets (in Lane4 units) of one group.
struct Layout {
  std::size_t D, B, g, C, gb, L, S, r, dt, dbeta, total;
  Layout(std::size_t rows, std::size_t d, std::size_t k) {
    std::size_t o = 0;
    auto take = [&](std::size_t n) { const std::size_t at = o; o += std::max<std::size_t>(n, 1); return at; };
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

void solve_group(const BatchedK1Pack& pack, std::span<const AtomSlice> slices, const LaneGroup& grp, double rho_t,
                 double rho_beta, std::vector<Lane4>& ws, RawOutputs& out) {
  const std::size_t d = grp.d, k = grp.k, rows = grp.rows, dd = d * d;
  const Layout lay(rows, d, k);
  if (ws.size() < lay.total) ws.resize(lay.total);
  Lane4* w = ws.data();
  double lane_rows[kLanes] = {0, 0, 0, 0};
  // Strided copy of one lane's contiguous slice, then its padding.
  auto put = [&](std::size_t base, std::size_t l, const double* src, std::size_t n, std::size_t total,
                 auto&& pad) {
    Lane4* dst = w + base;
    for (std::size_t e = 0; e < n; ++e) dst[e].v[l] = src[e];
    for (std::size_t e = n; e < total; ++e) dst[e].v[l] = pad(e);
  };
  auto zero = [](std::size_t) { return 0.0; };
  auto eye_d = [d, dd](std::size_t e) { return (e % dd) % (d + 1) == 0 ? 1.0 : 0.0; };
  auto eye_k = [k](std::size_t e) { return e % (k + 1) == 0 ? 1.0 : 0.0; };
  for (std::size_t l = 0; l < kLanes; ++l) {
    if (l < grp.count) {
      const AtomSlice& s = slices[grp.atom[l]];
      const std::size_t n = s.rows;
      lane_rows[l] = static_cast<double>(n);
      put(lay.D, l, pack.D.data() + s.D, n * dd, rows * dd, eye_d);
      put(lay.B, l, pack.B.data() + s.B, n * d * k, rows * d * k, zero);
      put(lay.g, l, pack.g_t.data() + s.g_t, n * d, rows * d, zero);
      put(lay.C, l, pack.hbb.data() + s.hbb, k * k, k * k, zero);
      put(lay.gb, l, pack.g_b.data() + s.g_b, k, k, zero);
    } else {  // an unused lane: an empty atom with C = I
      put(lay.D, l, nullptr, 0, rows * dd, eye_d);
      put(lay.B, l, nullptr, 0, rows * d * k, zero);
      put(lay.g, l, nullptr, 0, rows * d, zero);
      put(lay.C, l, nullptr, 0, k * k, eye_k);
      put(lay.gb, l, nullptr, 0, k, zero);
    }
  }
  double status[20];
  auto p = [&](std::size_t off) { return w[off].v; };
  const HandGroupArgs args{rows, d, k, p(lay.D), p(lay.B), p(lay.g), p(lay.C), p(lay.gb), lane_rows,
                           p(lay.L), p(lay.S), p(lay.r), p(lay.dt), p(lay.dbeta), rho_t, rho_beta, status};
  hand_group_avx2(args);
  for (std::size_t l = 0; l < grp.count; ++l) {
    const std::size_t a = grp.atom[l];
    const AtomSlice& s = slices[a];
    for (std::size_t e = 0; e < s.rows * d; ++e) out.dt[s.g_t + e] = w[lay.dt + e].v[l];
    for (std::size_t e = 0; e < k; ++e) out.dbeta[s.beta + e] = w[lay.dbeta + e].v[l];
    out.det_mant[a] = status[0 + l];
    out.det_exp[a] = status[4 + l];
    out.fail_row[a] = status[8 + l];
    out.schur_failed[a] = status[12 + l];
    out.nonfinite[a] = static_cast<int>(status[16 + l]);
  }
}
}  // namespace

bool hand_uses_avx2() {
  return popper::cpu::auto_isa() != popper::cpu::Isa::Scalar;
}

void run_hand(const BatchedK1Pack& pack, std::span<const AtomSlice> slices, double rho_t, double rho_beta,
              unsigned threads, RawOutputs& out) {
  if (!hand_uses_avx2()) {
    run_structured(pack, slices, rho_t, rho_beta, threads, out);
    return;
  }
  const std::vector<LaneGroup> groups = make_groups(slices);
  std::vector<double> cost(groups.size());
  for (std::size_t i = 0; i < groups.size(); ++i) cost[i] = atom_cost(groups[i].rows, groups[i].d, groups[i].k);
  run_partitioned(cost, threads, [&](std::size_t begin, std::size_t end) {
    std::vector<Lane4> ws;
    for (std::size_t i = begin; i < end; ++i) solve_group(pack, slices, groups[i], rho_t, rho_beta, ws, out);
  });
}

}  // namespace popper::arrow
