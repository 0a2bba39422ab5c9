// Shared testbed of the arrow falsifiers: seeded well-conditioned K=1 systems
// and comparisons against the dense oracle.
//
// Generator bounds (why 1e-10 is a safe parity tolerance): D_i = M M^T/d + I
// has spectrum in [1, 1+d]; B entries are scaled by s = 1/sqrt(max(1,n) d k), so
// sum_i ||B_i||_F^2 <= 1 and 0 <= B^T D^-1 B <= I; C = 2I + E with Gershgorin
// radius of E <= 0.5, hence S >= 0.5 I and kappa(H) <= ~40. Cholesky's forward
// error (Higham, Thm 10.4) is then <= kappa * c N eps ~ 40 * 300 * 2.2e-16 ~ 3e-12
// for N = n d + k <= 300 — well under 1e-10.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <variant>
#include <vector>

#include "impl/arrow/arrow.hpp"
#include "impl/arrow/kernels.hpp"
#include "impl/arrow/pack.hpp"
#include "impl/common/cpu_features.hpp"
#include "popper/binding.hpp"

namespace popper::arrow::testbed {

inline ArrowSystem make_system(std::uint64_t seed, std::size_t n, std::size_t d, std::size_t k) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> U(-1.0, 1.0);
  ArrowSystem s;
  s.rows = n;
  s.row_dim = d;
  s.border_dim = k;
  s.D.resize(n * d * d);
  s.B.resize(n * d * k);
  s.g_t.resize(n * d);
  s.hbb.resize(k * k);
  s.g_b.resize(k);
  std::vector<double> M(d * d);
  const double scale = 1.0 / std::sqrt(static_cast<double>(std::max<std::size_t>(1, n) * d * k));
  for (std::size_t i = 0; i < n; ++i) {
    for (auto& m : M) m = U(rng);
    double* Di = s.D.data() + i * d * d;
    for (std::size_t c = 0; c < d; ++c)
      for (std::size_t r = 0; r < d; ++r) {
        double acc = 0.0;
        for (std::size_t p = 0; p < d; ++p) acc += M[r + p * d] * M[c + p * d];
        Di[r + c * d] = acc / static_cast<double>(d) + (r == c ? 1.0 : 0.0);
      }
    for (std::size_t e = 0; e < d * k; ++e) s.B[i * d * k + e] = scale * U(rng);
    for (std::size_t e = 0; e < d; ++e) s.g_t[i * d + e] = U(rng);
  }
  for (std::size_t c = 0; c < k; ++c)
    for (std::size_t r = c; r < k; ++r) {
      const double e = r == c ? 2.0 + 0.25 * U(rng) : U(rng) / (4.0 * static_cast<double>(k));
      s.hbb[r + c * k] = e;
      s.hbb[c + r * k] = e;
    }
  for (auto& g : s.g_b) g = U(rng);
  return s;
}

// A ragged class: atom a gets n from `rows` (cycled), d and k likewise.
inline std::vector<ArrowSystem> make_class(std::uint64_t seed, const std::vector<std::size_t>& rows,
                                           const std::vector<std::size_t>& ds, const std::vector<std::size_t>& ks,
                                           std::size_t atoms) {
  std::vector<ArrowSystem> out;
  for (std::size_t a = 0; a < atoms; ++a)
    out.push_back(make_system(seed * 1000003ULL + a, rows[a % rows.size()], ds[a % ds.size()], ks[a % ks.size()]));
  return out;
}

struct Errors {
  double delta = 0.0;     // ||x - x_ref||_inf / ||x_ref||_inf over [delta_t; delta_beta]
  double log_det = 0.0;   // |ld - ld_ref| / max(1, |ld_ref|)
  double ref_norm = 0.0;  // ||x_ref||_inf, asserted > 0 so an all-zero answer cannot pass
};

inline Errors compare(const ArrowSolution& x, const ArrowSolution& ref) {
  Errors e;
  double diff = 0.0;
  auto acc = [&](const std::vector<double>& a, const std::vector<double>& b) {
    for (std::size_t i = 0; i < b.size(); ++i) {
      diff = std::max(diff, std::fabs((i < a.size() ? a[i] : NAN) - b[i]));
      if (std::isnan(a.size() > i ? a[i] : NAN)) diff = INFINITY;
      e.ref_norm = std::max(e.ref_norm, std::fabs(b[i]));
    }
    if (a.size() != b.size()) diff = INFINITY;
  };
  acc(x.delta_t, ref.delta_t);
  acc(x.delta_beta, ref.delta_beta);
  e.delta = e.ref_norm > 0.0 ? diff / e.ref_norm : diff;
  e.log_det = std::fabs(x.log_det - ref.log_det) / std::max(1.0, std::fabs(ref.log_det));
  if (std::isnan(x.log_det)) e.log_det = INFINITY;
  return e;
}

inline bool bit_equal(const ArrowResult& a, const ArrowResult& b) {
  if (a.ok() != b.ok()) return false;
  if (!a.ok()) {
    const auto &ea = a.error(), &eb = b.error();
    if (ea.index() != eb.index()) return false;
    if (auto* r = std::get_if<RidgeBumpRequired>(&ea))
      return r->row == std::get<RidgeBumpRequired>(eb).row && r->bump == std::get<RidgeBumpRequired>(eb).bump;
    if (auto* s = std::get_if<SchurFactorFailed>(&ea)) return s->bump == std::get<SchurFactorFailed>(eb).bump;
    return std::get<NonFiniteValue>(ea).field == std::get<NonFiniteValue>(eb).field;
  }
  auto same = [](double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; };
  const auto &x = a.value(), &y = b.value();
  if (x.delta_t.size() != y.delta_t.size() || x.delta_beta.size() != y.delta_beta.size()) return false;
  for (std::size_t i = 0; i < x.delta_t.size(); ++i)
    if (!same(x.delta_t[i], y.delta_t[i])) return false;
  for (std::size_t i = 0; i < x.delta_beta.size(); ++i)
    if (!same(x.delta_beta[i], y.delta_beta[i])) return false;
  return same(x.log_det, y.log_det);
}

// Evidence for a kernel whose results were judged: the path it ran on; a CPU
// path is "forced" when the kernel was asked for by name (Structured on a SIMD
// CPU) or when the ISA cap lowered the automatic choice.
inline void record(ArrowKernel kernel) {
  const std::string tag = backend_of(kernel);
  const bool cpu = tag.rfind("cpu:", 0) == 0;
  const bool forced =
      cpu && (popper::cpu::auto_isa_overridden() ||
              (kernel == ArrowKernel::Structured && popper::cpu::auto_isa() != popper::cpu::Isa::Scalar));
  if (forced && !popper::forced_paths_allowed()) return;
  popper::record_backend(tag, forced ? popper::Dispatch::Forced : popper::Dispatch::Auto);
}

inline std::vector<ArrowResult> solve(const std::vector<ArrowSystem>& sys, ArrowKernel kernel, unsigned threads = 1,
                                      double rho_t = 0.0, double rho_beta = 0.0) {
  return solve_batched_k1_border(sys, rho_t, rho_beta, ArrowSolveOptions{kernel, threads});
}

}  // namespace popper::arrow::testbed
