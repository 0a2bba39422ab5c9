// Per-atom failure reports shared by every path, and finalize(): raw kernel
// outputs -> positional Result<ArrowSolution, ArrowFailure>.
//
// Ridge bumps come from Gershgorin discs: for symmetric A,
//   lambda_min(A) >= lb(A) = min_j (A_jj - sum_{l != j} |A_jl|),
// so A + b I is PD once lb(A) + b > 0. The margin tau = sqrt(eps) max(1, ||A||_inf)
// dwarfs Cholesky's backward error (c d eps ||A||, Higham Thm 10.3) for d <= 32,
// which makes the bumped factorization succeed in floating point too.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "impl/arrow/atom_body.hpp"
#include "impl/arrow/kernels.hpp"
#include "popper/mutant.hpp"

namespace popper::arrow {

namespace {
constexpr double kSqrtEps = 1.4901161193847656e-08;  // sqrt(2^-52)

struct Disc {
  double lower;  // Gershgorin lower bound on lambda_min
  double norm;   // infinity norm
};
// A is n x n column-major; only its lower triangle is read (symmetric).
Disc gershgorin_lower(const double* A, std::size_t n, std::size_t ld) {
  Disc g{std::numeric_limits<double>::infinity(), 0.0};
  for (std::size_t j = 0; j < n; ++j) {
    double off = 0.0;
    for (std::size_t l = 0; l < n; ++l)
      if (l != j) off += std::fabs(l > j ? A[l + j * ld] : A[j + l * ld]);
    g.lower = std::min(g.lower, A[j + j * ld] - off);
    g.norm = std::max(g.norm, std::fabs(A[j + j * ld]) + off);
  }
  return g;
}
// Branch-free scan (exponent field all ones = Inf/NaN): one unit added to
// the exponent field carries into bit 63 exactly then. Integer adds and
// shifts vectorize on the SSE2 baseline, where a 64-bit compare would not.
bool all_finite(const double* p, std::size_t n) {
  constexpr std::uint64_t kExp = 0x7FF0000000000000ULL, kExpOne = 0x0010000000000000ULL;
  std::uint64_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t bits;
    std::memcpy(&bits, p + i, sizeof bits);
    bad |= ((bits & kExp) + kExpOne) >> 63;
  }
  return bad == 0;
}
}  // namespace

std::optional<ArrowField> first_nonfinite_field(const AtomView& a) {
  if (POPPER_MUTANT("arrow-no-nonfinite-scan")) return std::nullopt;
  if (!all_finite(a.D, a.rows * a.d * a.d)) return ArrowField::D;
  if (!all_finite(a.B, a.rows * a.d * a.k)) return ArrowField::B;
  if (!all_finite(a.g_t, a.rows * a.d)) return ArrowField::g_t;
  if (!all_finite(a.hbb, a.k * a.k)) return ArrowField::hbb;
  if (!all_finite(a.g_b, a.k)) return ArrowField::g_b;
  return std::nullopt;
}

RidgeBumpRequired row_failure(const AtomView& a, std::size_t row, double rho_t) {
  // One bump that repairs every row of the atom, so a single re-solve suffices.
  double bump = 0.0;
  for (std::size_t i = 0; i < a.rows; ++i) {
    const Disc g = gershgorin_lower(a.D + i * a.d * a.d, a.d, a.d);
    const double tau = kSqrtEps * std::max(1.0, g.norm);
    bump = std::max(bump, tau - (g.lower + rho_t));
    if (i == row) bump = std::max(bump, tau);
  }
  if (POPPER_MUTANT("arrow-ridge-bump-too-small")) bump *= 0.25;
  return RidgeBumpRequired{row, bump};
}

SchurFactorFailed schur_failure(const AtomView& a, double rho_t, double rho_beta) {
  // Rebuild S = C + rho_beta I - sum Y_i^T Y_i with the same body pieces.
  const std::size_t d = a.d, k = a.k;
  std::vector<double> S(k * k), r(k), L(d * d), Y(d * k), u(d), piv(d);
  arrow_border_init<ScalarLane>(k, a.hbb, a.g_b, rho_beta, S.data(), r.data());
  for (std::size_t i = 0; i < a.rows; ++i) {
    bool ok = true;
    arrow_row_factor<ScalarLane, 0>(d, k, a.D + i * d * d, a.B + i * d * k, a.g_t + i * d, rho_t, true, L.data(),
                                    Y.data(), u.data(), piv.data(), ok);
    arrow_schur_update<ScalarLane, 0>(d, k, Y.data(), u.data(), S.data(), r.data());
  }
  const Disc g = gershgorin_lower(S.data(), k, k);
  const double tau = kSqrtEps * std::max(1.0, g.norm);
  if (POPPER_MUTANT("arrow-schur-bump-from-c")) return SchurFactorFailed{tau};  // as if S were C: no repair
  return SchurFactorFailed{std::max(tau - g.lower, tau)};
}

void RawOutputs::resize_for(std::span<const AtomSlice> slices) {
  const std::size_t B = slices.size();
  sol.assign(B, ArrowSolution{});
  // Allocated here, in one thread's arena (workers' arenas would be grown and
  // trimmed on every call); filled by the kernel's workers (solution()).
  for (std::size_t a = 0; a < B; ++a) {
    sol[a].delta_t.reserve(slices[a].rows * slices[a].d);
    sol[a].delta_beta.reserve(slices[a].k);
  }
  det_mant.assign(B, 1.0);
  det_exp.assign(B, 0.0);
  fail_row.assign(B, -1.0);
  schur_failed.assign(B, 0.0);
  nonfinite.assign(B, -2);
  result_finite.assign(B, -1);
}

ArrowSolution& RawOutputs::solution(std::size_t a, const AtomSlice& s) {
  sol[a].delta_t.resize(s.rows * s.d);
  sol[a].delta_beta.resize(s.k);
  return sol[a];
}

std::vector<ArrowResult> finalize(const BatchedK1Pack& pack, std::span<const AtomSlice> slices, RawOutputs& out,
                                  double rho_t, double rho_beta, unsigned threads) {
  // Each atom's verdict (and its failure report, which re-reads the atom) in
  // parallel; then the results in order, moving the solutions.
  constexpr double kLn2 = 0.69314718055994530942;
  std::vector<std::optional<ArrowFailure>> failure(slices.size());
  std::vector<double> cost(slices.size());
  for (std::size_t a = 0; a < slices.size(); ++a) cost[a] = atom_cost(slices[a].rows, slices[a].d, slices[a].k);
  run_partitioned(cost, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t a = begin; a < end; ++a) {
      const AtomView v = view_of(pack, slices[a]);
      std::optional<ArrowField> bad_field;
      if (out.nonfinite[a] == -2) bad_field = first_nonfinite_field(v);
      else if (out.nonfinite[a] >= 0) bad_field = static_cast<ArrowField>(out.nonfinite[a]);
      ArrowSolution& sol = out.sol[a];
      if (bad_field) {
        failure[a] = NonFiniteValue{*bad_field};
      } else if (out.fail_row[a] >= 0.0) {
        failure[a] = row_failure(v, static_cast<std::size_t>(out.fail_row[a]), rho_t);
      } else if (out.schur_failed[a] != 0.0) {
        failure[a] = schur_failure(v, rho_t, rho_beta);
      } else {
        sol.log_det = std::log(out.det_mant[a]) + out.det_exp[a] * kLn2;
        const bool finite = out.result_finite[a] >= 0 ? out.result_finite[a] == 1
                                                      : all_finite(sol.delta_t.data(), sol.delta_t.size()) &&
                                                            all_finite(sol.delta_beta.data(), sol.delta_beta.size());
        if (!(finite && std::isfinite(sol.log_det))) failure[a] = NonFiniteValue{ArrowField::result};
      }
    }
  });
  std::vector<ArrowResult> results;
  results.reserve(slices.size());
  for (std::size_t a = 0; a < slices.size(); ++a) {
    if (failure[a]) results.emplace_back(Failure{std::move(*failure[a])});
    else results.emplace_back(std::move(out.sol[a]));
  }
  return results;
}

}  // namespace popper::arrow
