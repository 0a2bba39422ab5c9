// Preconditioned CG on (sum_i S_i + rho I) x = b from x = 0. Convergence is
// declared on the true residual ||b - A x|| / ||b|| <= rel_tol: when the
// recurrence says "done" the true residual is recomputed, and if rounding
// drift left it above tolerance the iteration restarts from it (residual
// replacement). Hitting max_iterations returns converged = false.
#include <cmath>
#include <string>
#include <vector>

#include "impl/sae/row_pool.hpp"
#include "impl/sae/schur_pcg.hpp"
#include "popper/mutant.hpp"

namespace popper::sae {

namespace {
double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0.0;
  for (std::size_t e = 0; e < a.size(); ++e) s += a[e] * b[e];
  return s;
}
}  // namespace

PcgReport solve_schur_pcg(const SaeSchurSystem& sys, std::span<const double> b, std::span<double> x,
                          const PcgOptions& opt) {
  const std::size_t n = sys.dim();
  if (b.size() < n) throw BufferTooSmall("b", n, b.size());
  if (x.size() < n) throw BufferTooSmall("x", n, x.size());
  if (!(opt.rel_tol > 0.0) || !std::isfinite(opt.rel_tol))
    throw InvalidArgument("solve_schur_pcg: rel_tol must be finite and > 0, got " + std::to_string(opt.rel_tol));
  for (std::size_t e = 0; e < n; ++e)
    if (!std::isfinite(b[e])) throw InvalidArgument("solve_schur_pcg: b[" + std::to_string(e) + "] is not finite");

  RowThreadPool pool(opt.threads, opt.isa);
  std::vector<double> xv(n, 0.0), r(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n)), z(n), d(n, 1.0), pv(n),
      ap(n);
  PcgReport rep;
  const double bnorm = std::sqrt(dot(r, r));
  auto finish = [&] {
    for (std::size_t e = 0; e < n; ++e) x[e] = xv[e];
    return rep;
  };
  if (bnorm == 0.0) {
    rep.converged = true;
    return finish();
  }
  if (opt.preconditioner == Preconditioner::Jacobi) {
    d = sys.jacobi_diagonal(pool);
    for (auto& de : d)
      if (!(de > 0.0) || !std::isfinite(de)) de = 1.0;  // untouched block with rho = 0: identity there
  }
  auto precondition = [&] {
    for (std::size_t e = 0; e < n; ++e) z[e] = r[e] / d[e];
  };
  auto true_residual = [&] {
    sys.apply(xv, ap, pool);
    for (std::size_t e = 0; e < n; ++e) r[e] = b[e] - ap[e];
    return std::sqrt(dot(r, r)) / bnorm;
  };
  precondition();
  pv = z;
  double rz = dot(r, z);
  rep.rel_residual = 1.0;
  while (rep.iterations < opt.max_iterations) {
    sys.apply(pv, ap, pool);
    const double pap = dot(pv, ap);
    if (!(pap > 0.0) || !std::isfinite(pap)) {
      rep.breakdown = true;
      break;
    }
    const double alpha = rz / pap;
    const double r_sign = POPPER_MUTANT("pcg-residual-update-sign") ? 1.0 : -1.0;
    for (std::size_t e = 0; e < n; ++e) {
      xv[e] += alpha * pv[e];
      r[e] += r_sign * alpha * ap[e];
    }
    ++rep.iterations;
    double res = std::sqrt(dot(r, r)) / bnorm;
    if (res <= opt.rel_tol && POPPER_MUTANT("pcg-recursive-residual")) {  // trusts the drifted recurrence
      rep.rel_residual = res;
      rep.converged = true;
      return finish();
    }
    if (res <= opt.rel_tol) {
      res = true_residual();
      if (res <= opt.rel_tol) {
        rep.rel_residual = res;
        rep.converged = true;
        return finish();
      }
      precondition();  // drifted: restart the directions from the true residual
      pv = z;
      rz = dot(r, z);
      continue;
    }
    precondition();
    const double rz_new = dot(r, z);
    const double beta = rz_new / rz;
    rz = rz_new;
    for (std::size_t e = 0; e < n; ++e) pv[e] = z[e] + beta * pv[e];
  }
  rep.rel_residual = true_residual();
  rep.converged = (rep.rel_residual <= opt.rel_tol && !rep.breakdown) || POPPER_MUTANT("pcg-cap-claims-convergence");
  return finish();
}

}  // namespace popper::sae
