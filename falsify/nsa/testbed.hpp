// The NSA testbed: workloads, the comparison with the FP64 reference and the
// derived tolerance, shared by the falsifiers (falsify/nsa) and the bench
// (bench/nsa). Header-only, no GoogleTest.
//
// Elementwise bound (contract: accuracy_bound), u = 2^-24, gamma_n = n u / (1 - n u):
//   E_s = gamma_{D+1} c max_j sum_d |q_d||k_jd|,   R = max_j |s_j - lse|,   L = |J|
//   |O - O_ref|     <= f (2 E_s + 2 gamma_L + (2R + 8) u) max_{j in J} |V_j,e|
//   |lse - lse_ref| <= f (E_s + gamma_L + (R + 4) u + u |lse_ref|)
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "impl/nsa/nsa.hpp"
#include "impl/nsa/reference.hpp"
#include "workloads/nsa/generate.h"

namespace popper::nsa::testbed {

inline constexpr double kUnitRoundoff = 5.9604644775390625e-8;  // 2^-24

inline double gamma(double n) { return n * kUnitRoundoff / (1.0 - n * kUnitRoundoff); }

// Uniform [-1, 1) in FP32 from the bench LCG (suite::fill_uniform / ceiling_fill), scaled, then BF16.
inline std::vector<bf16> bf16_uniform(std::size_t n, std::uint64_t seed, double amplitude = 1.0) {
  std::vector<bf16> out(n);
  std::uint64_t x = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (auto& e : out) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const float f = static_cast<float>(static_cast<double>(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    e = bf16_from_float(static_cast<float>(f * amplitude));
  }
  return out;
}

// The hand kernel's CPU paths: the one it picks itself, and (when `forced`)
// every narrower one this CPU runs: AVX-512 without BF16 dot products, AVX2, scalar.
struct CpuPath {
  HandOptions options;
  bool forced = false;
};
inline std::vector<CpuPath> hand_paths(int threads, bool forced) {
  using popper::cpu::Isa;
  std::vector<CpuPath> out{{HandOptions{threads, Isa::Auto, true}, false}};
  if (!forced) return out;
  const Isa top = popper::cpu::auto_isa();
  if (top == Isa::Avx512 && popper::cpu::has_avx512_bf16())
    out.push_back({HandOptions{threads, Isa::Avx512, false}, true});
  if (popper::cpu::supports(Isa::Avx2) && top != Isa::Avx2)
    out.push_back({HandOptions{threads, Isa::Avx2, true}, true});
  if (top != Isa::Scalar) out.push_back({HandOptions{threads, Isa::Scalar, true}, true});
  return out;
}

// A complete problem that owns its buffers.
struct Workload {
  HeadLayout layout;
  std::vector<std::int32_t> cu_q, cu_k;
  SpanPack pack;
  std::vector<bf16> q, k, v;

  VarlenBatch batch() const { return {cu_q, cu_k}; }
  SelectionProblem problem() const { return {layout, batch(), &pack, q, k, v}; }
  std::size_t o_size() const { return static_cast<std::size_t>(cu_q.back()) * layout.heads * layout.dim_v; }
  std::size_t lse_size() const { return static_cast<std::size_t>(cu_q.back()) * layout.heads; }
};

// The bench workload of one shape (workloads/nsa/generate.h); q_amplitude scales Q before rounding.
inline Workload make_workload(const popper_nsa_shape& s, double q_amplitude = 1.0) {
  popper_nsa_layout lay;
  popper_nsa_layout_of(&s, &lay);
  Workload w;
  w.layout = {s.heads, 1, s.dim, s.dim};
  w.cu_q.assign(lay.cu_q, lay.cu_q + POPPER_NSA_SEQS + 1);
  w.cu_k.assign(lay.cu_k, lay.cu_k + POPPER_NSA_SEQS + 1);
  std::vector<std::int64_t> offsets{0};
  std::vector<Span> spans;
  std::vector<std::int32_t> begin(POPPER_NSA_MANY_SPANS), end(POPPER_NSA_MANY_SPANS);
  for (int b = 0; b < POPPER_NSA_SEQS; ++b)
    for (int i = 0; i < lay.rows_per_seq; ++i) {
      popper_nsa_row_spans(&s, &lay, b, i, begin.data(), end.data());
      for (int j = 0; j < lay.spans_per_row; ++j)
        spans.push_back({begin[static_cast<std::size_t>(j)], end[static_cast<std::size_t>(j)]});
      offsets.push_back(static_cast<std::int64_t>(spans.size()));
    }
  w.pack = pack_explicit_spans(w.batch(), 1, offsets, spans);
  const std::size_t tq = static_cast<std::size_t>(w.cu_q.back()), tk = static_cast<std::size_t>(w.cu_k.back());
  w.q = bf16_uniform(tq * s.heads * s.dim, 1, q_amplitude);
  w.k = bf16_uniform(tk * s.dim, 2);
  w.v = bf16_uniform(tk * s.dim, 3);
  return w;
}

// A shape that is not in the bench list (same generator).
inline popper_nsa_shape grid_shape(const char* dist, int rows, int heads, int dim, int sel_len) {
  return {"grid", dist, rows, heads, dim, sel_len, "full"};
}

// `count` rows spread evenly over [0, rows), first and last included.
inline std::vector<std::int64_t> spread_rows(std::int64_t rows, std::int64_t count) {
  std::vector<std::int64_t> out;
  if (rows <= 0) return out;
  count = std::min(count, rows);
  for (std::int64_t i = 0; i < count; ++i) out.push_back(count == 1 ? 0 : i * (rows - 1) / (count - 1));
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

struct Accuracy {
  double mae = 0;          // mean |O - O_ref| over the checked elements
  double max_err = 0;      // largest |O - O_ref|
  double worst_ratio = 0;  // largest |err| / bound (O and lse)
  double out_abs_sum = 0;  // sum |O| over the checked elements (> 0: not all zero)
  std::size_t checked = 0;
  bool within_bound = true;
  std::string first_violation;
  std::string describe() const {
    std::ostringstream os;
    os << "MAE " << mae << ", max |err| " << max_err << ", worst err/bound " << worst_ratio << " over " << checked
       << " elements";
    if (!within_bound) os << "; " << first_violation;
    return os.str();
  }
};

// The reference on `rows` and the derived bound of every checked element,
// computed once and then used to judge any number of outputs.
struct Expected {
  std::vector<std::int64_t> rows;
  reference::Attention ref;
  std::vector<double> o_bound;       // [rows, H, Dv]
  std::vector<double> lse_bound;     // [rows, H]; < 0 marks an empty selection (lse must be -inf)
  std::vector<std::size_t> lengths;  // L per (row, head)
};

inline Expected expected(const SelectionProblem& p, std::span<const std::int64_t> rows, double tol_factor) {
  Expected x;
  x.rows.assign(rows.begin(), rows.end());
  x.ref = reference::selection_attention(p, rows);
  const int heads = p.layout.heads, hg = p.layout.heads_per_group(), groups = p.layout.groups;
  const int d = p.layout.dim, dv = p.layout.dim_v;
  const double c = 1.0 / std::sqrt(static_cast<double>(d)), u = kUnitRoundoff;
  x.o_bound.assign(rows.size() * static_cast<std::size_t>(heads * dv), 0.0);
  x.lse_bound.assign(rows.size() * static_cast<std::size_t>(heads), -1.0);
  x.lengths.assign(rows.size() * static_cast<std::size_t>(heads), 0);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::int64_t t = rows[r];
    int b = 0;
    while (!(t >= p.batch.cu_seqlens_q[b] && t < p.batch.cu_seqlens_q[b + 1])) ++b;
    const std::int64_t key0 = p.batch.cu_seqlens_k[b];
    for (int h = 0; h < heads; ++h) {
      const int g = h / hg;
      const std::size_t rh = r * static_cast<std::size_t>(heads) + static_cast<std::size_t>(h);
      const auto keys = reference::span_tokens(p.spans->of(t, g));
      x.lengths[rh] = keys.size();
      if (keys.empty()) continue;
      const double lse_ref = x.ref.lse[rh];
      const bf16* q = p.q.data() + (t * heads + h) * d;
      double abs_dot_max = 0, arg_max = 0;
      std::vector<double> vmax(static_cast<std::size_t>(dv), 0.0);
      for (const std::int32_t j : keys) {
        const bf16* k = p.k.data() + ((key0 + j) * groups + g) * d;
        const bf16* v = p.v.data() + ((key0 + j) * groups + g) * dv;
        double dot = 0, abs_dot = 0;
        for (int e = 0; e < d; ++e) {
          const double y = static_cast<double>(float_from_bf16(q[e])) * static_cast<double>(float_from_bf16(k[e]));
          dot += y;
          abs_dot += std::fabs(y);
        }
        abs_dot_max = std::max(abs_dot_max, abs_dot);
        arg_max = std::max(arg_max, std::fabs(dot * c - lse_ref));
        for (int e = 0; e < dv; ++e)
          vmax[static_cast<std::size_t>(e)] =
              std::max(vmax[static_cast<std::size_t>(e)], std::fabs(static_cast<double>(float_from_bf16(v[e]))));
      }
      const double len = static_cast<double>(keys.size());
      const double e_s = gamma(d + 1) * c * abs_dot_max;
      const double rel = tol_factor * (2 * e_s + 2 * gamma(len) + (2 * arg_max + 8) * u);
      for (int e = 0; e < dv; ++e)
        x.o_bound[rh * static_cast<std::size_t>(dv) + static_cast<std::size_t>(e)] =
            rel * vmax[static_cast<std::size_t>(e)];
      x.lse_bound[rh] = tol_factor * (e_s + gamma(len) + (arg_max + 4) * u + u * std::fabs(lse_ref));
    }
  }
  return x;
}

// Judges O (and lse unless empty) against an Expected of the same problem.
inline Accuracy check(const SelectionProblem& p, const Expected& x, std::span<const float> o,
                      std::span<const float> lse) {
  const int heads = p.layout.heads, dv = p.layout.dim_v;
  Accuracy acc;
  double err_sum = 0;
  auto violate = [&](const std::string& what) {
    if (acc.within_bound) acc.first_violation = what;
    acc.within_bound = false;
  };
  for (std::size_t r = 0; r < x.rows.size(); ++r) {
    const std::int64_t t = x.rows[r];
    for (int h = 0; h < heads; ++h) {
      const std::size_t rh = r * static_cast<std::size_t>(heads) + static_cast<std::size_t>(h);
      const float* out = o.data() + (t * heads + h) * dv;
      const double* want = x.ref.o.data() + rh * static_cast<std::size_t>(dv);
      for (int e = 0; e < dv; ++e) {
        const double err = std::fabs(static_cast<double>(out[e]) - want[e]);
        const double bound = x.o_bound[rh * static_cast<std::size_t>(dv) + static_cast<std::size_t>(e)];
        err_sum += std::isfinite(err) ? err : 1e30;
        acc.max_err = std::max(acc.max_err, err);
        acc.out_abs_sum += std::fabs(static_cast<double>(out[e]));
        ++acc.checked;
        if (bound > 0) acc.worst_ratio = std::max(acc.worst_ratio, err / bound);
        if (!(err <= bound)) {
          std::ostringstream os;
          os << "row " << t << " head " << h << " O[" << e << "] = " << out[e] << ", reference " << want[e]
             << ", |err| " << err << " > bound " << bound << " (L = " << x.lengths[rh] << ")";
          violate(os.str());
        }
      }
      if (lse.empty()) continue;
      const double got = static_cast<double>(lse[static_cast<std::size_t>(t * heads + h)]);
      if (x.lse_bound[rh] < 0) {
        if (!(std::isinf(got) && got < 0))
          violate("row " + std::to_string(t) + ": lse of an empty selection is not -inf");
        continue;
      }
      const double err = std::fabs(got - x.ref.lse[rh]);
      if (x.lse_bound[rh] > 0) acc.worst_ratio = std::max(acc.worst_ratio, err / x.lse_bound[rh]);
      if (!(err <= x.lse_bound[rh])) {
        std::ostringstream os;
        os << "row " << t << " head " << h << " lse = " << got << ", reference " << x.ref.lse[rh] << ", |err| " << err
           << " > bound " << x.lse_bound[rh];
        violate(os.str());
      }
    }
  }
  acc.mae = acc.checked ? err_sum / static_cast<double>(acc.checked) : 0.0;
  return acc;
}

// Compares O (and lse unless empty) on `rows` with the FP64 reference, with the derived bound.
inline Accuracy compare(const SelectionProblem& p, std::span<const float> o, std::span<const float> lse,
                        std::span<const std::int64_t> rows, double tol_factor) {
  return check(p, expected(p, rows, tol_factor), o, lse);
}

}  // namespace popper::nsa::testbed
