// bench_sae: the reduced SAE Schur operator, two routes.
//   wrapped: dense route (form A = sum_i S_i + rho I with CBLAS, apply with dsymv /
//            solve with LAPACKE dpotrf+dpotrs); declines above SAE_DENSE_MAX_BYTES
//            (and SAE_DENSE_MAX_SOLVE_FLOP for solve) with SkipWithError("not_run: ...").
//   hand:    matrix-free (five-step rows, deterministic threaded scatter, Jacobi PCG).
// Names: sae/<tier>/<shape>/f64/threads:<n>. Counters per iteration: items (rows),
// flop, bytes, bytes_resident (operator storage vs the dense matrix).
// bytes is the compulsory DRAM traffic of the roofline: the operator's data
// (L_i, R_i, the support) read once, x read and y written once per apply;
// the per-row gathers and scatters of x and y blocks hit the cache and are not
// counted. A solve streams its working set once per apply when the set exceeds
// kLlcFloor (a conservative last-level cache), once in total otherwise.
// Apply timings exclude forming the dense matrix (amortized over many applies,
// which favours the dense route); the dense solve times form + factor + solve.
// Each row is checked before timing, and again after it on a fresh x (apply)
// or b (solve) (popper::bench::Recheck).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>

#include "impl/common/cpu_features.hpp"
#include "impl/sae/lib_dense_route.hpp"
#include "impl/sae/row_pool.hpp"
#include "impl/sae/schur_pcg.hpp"
#include "popper/bench.hpp"
#include "workloads/sae/generate.h"
#include "workloads/sae/shapes.h"

namespace {
namespace pb = popper::bench;
using namespace popper::sae;

constexpr double kRho = SAE_RHO;
constexpr double kLambda = SAE_LAMBDA;
constexpr double kSolveTol = 1e-8;
const double kEps = std::numeric_limits<double>::epsilon();
// A last-level cache every current server core has a share of at least this
// big: a solve whose working set fits re-reads it from cache, not DRAM.
constexpr double kLlcFloor = 16.0 * 1024 * 1024;

struct Fixture {
  std::unique_ptr<SaeSchurSystem> sys;
  std::vector<double> x, b;
  double apply_flop = 0, apply_bytes = 0, diag_flop = 0, form_flop = 0, resident = 0;
};

double gib(double bytes) { return bytes / (1024.0 * 1024.0 * 1024.0); }

Fixture& fixture(const sae_shape& sh) {
  static std::map<std::string, std::unique_ptr<Fixture>> cache;
  auto& slot = cache[sh.name];
  if (slot) return *slot;
  const auto n = static_cast<std::size_t>(sh.rows), K = static_cast<std::size_t>(sh.K),
             p = static_cast<std::size_t>(sh.p), m = static_cast<std::size_t>(sh.m), q = static_cast<std::size_t>(sh.q);
  auto phi = std::make_shared<SparsePhiRows>();
  auto jac = std::make_shared<LocalJacRows>();
  phi->block.resize(n * m);
  phi->weight.resize(n * m);
  jac->values.resize(n * q * p);
  auto f = std::make_unique<Fixture>();
  f->x.resize(K * p);
  f->b.resize(K * p);
  sae_generate(&sh, phi->block.data(), phi->weight.data(), jac->values.data(), f->x.data(), f->b.data());
  phi->row_ptr.reserve(n + 1);
  jac->row_ptr.reserve(n + 1);
  for (std::size_t i = 0; i < n; ++i) {
    phi->row_ptr.push_back((i + 1) * m);
    jac->row_ptr.push_back((i + 1) * q * p);
  }
  SaeKroneckerRows rows(p, K, phi, jac);
  auto fr = factor_gauss_newton_blocks(rows, kLambda);
  if (!fr.ok()) throw popper::Error("bench_sae: factor failed on row " + std::to_string(fr.error().row));
  const auto& factors = fr.value();
  f->sys = std::make_unique<SaeSchurSystem>(rows, factors, kRho);
  const double dn = double(n), dm = double(m), dq = double(q), dp = double(p), dim = double(K * p);
  // gather 2mp, L 2qp, two triangular solves 2q^2, L^T 2qp, scatter 2mp; plus rho x.
  f->apply_flop = dn * (4 * dm * dp + 4 * dq * dp + 2 * dq * dq) + dim;
  f->apply_bytes = dn * (16 * dm + 8 * dq * dp + 8 * dq * dq) + 16 * dim;
  f->diag_flop = dn * (dq * dq * dp + 2 * dq * dp);
  f->form_flop = dn * (dq * dq * dp + dq * dp * (dp + 1) + dm * (dm + 1) * dp * dp);
  f->resident = double(rows.resident_bytes()) +
                double(factors->values.capacity() * sizeof(double) +
                       (factors->row_ptr.capacity() + factors->q.capacity()) * sizeof(std::size_t));
  slot = std::move(f);
  return *slot;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double e = 0;
  for (std::size_t i = 0; i < a.size(); ++i) e = std::max(e, std::abs(a[i] - b[i]));
  return e;
}
double inf_norm(const std::vector<double>& a) {
  double e = 0;
  for (double v : a) e = std::max(e, std::abs(v));
  return e;
}
double norm2(const std::vector<double>& a) {
  double s = 0;
  for (double v : a) s += v * v;
  return std::sqrt(s);
}

// Fresh values in [-1, 1) (generate.h's draw) into `v`, from another seed.
void redraw(std::vector<double>& v, unsigned long long seed) {
  for (double& e : v) e = sae_lcg_uniform(&seed);
}

// The operator of the first n rows of `sys` (copies of their storage and
// factors): the skipped-work bench mutant's half of an apply.
std::unique_ptr<SaeSchurSystem> first_rows(const SaeSchurSystem& sys, std::size_t n) {
  const SaeKroneckerRows& r = sys.rows();
  const SparsePhiRows& phi = *r.a_phi();
  const LocalJacRows& jac = *r.local_jac();
  const LocalFactors& fac = *sys.factors();
  auto prefix = [](const auto& v, std::size_t k) { return std::decay_t<decltype(v)>(v.begin(), v.begin() + k); };
  auto phi2 = std::make_shared<SparsePhiRows>();
  phi2->row_ptr = prefix(phi.row_ptr, n + 1);
  phi2->block = prefix(phi.block, phi.row_ptr[n]);
  phi2->weight = prefix(phi.weight, phi.row_ptr[n]);
  auto jac2 = std::make_shared<LocalJacRows>();
  jac2->row_ptr = prefix(jac.row_ptr, n + 1);
  jac2->values = prefix(jac.values, jac.row_ptr[n]);
  auto fac2 = std::make_shared<LocalFactors>();
  fac2->row_ptr = prefix(fac.row_ptr, n + 1);
  fac2->q = prefix(fac.q, n);
  fac2->values = prefix(fac.values, fac.row_ptr[n]);
  return std::make_unique<SaeSchurSystem>(SaeKroneckerRows(r.p(), r.K(), phi2, jac2), fac2, sys.rho());
}

// Dense route for a shape, formed once per process (kept for apply checks).
dense_route::DenseSchurMatrix* dense_for(const sae_shape& sh, std::string& why) {
  static std::map<std::string, std::unique_ptr<dense_route::DenseSchurMatrix>> cache;
  static std::map<std::string, std::string> declined;
  if (auto it = declined.find(sh.name); it != declined.end()) {
    why = it->second;
    return nullptr;
  }
  auto& slot = cache[sh.name];
  if (slot) return slot.get();
  try {
    slot = std::make_unique<dense_route::DenseSchurMatrix>(
        dense_route::DenseSchurMatrix::form(*fixture(sh).sys, SAE_DENSE_MAX_BYTES));
  } catch (const popper::Unsupported& e) {
    declined[sh.name] = why = e.what();
    return nullptr;
  }
  return slot.get();
}

// Each row reads its own copy of the fixture's x (apply) or b (solve): the
// check after timing draws fresh values into it without touching what the
// shape's other rows time.
void bench_apply(benchmark::State& state, const pb::Case& c) {
  const sae_shape& sh = sae_shapes[c.shape];
  const int threads = c.threads;
  Fixture& f = fixture(sh);
  const SaeSchurSystem& sys = *f.sys;
  const double dim = double(sys.dim());
  std::vector<double> x = f.x, y(sys.dim()), y_other(sys.dim());
  std::string why;
  auto refill = [&](std::uint64_t seed) { redraw(x, sh.seed ^ seed); };
  state.counters["items"] = benchmark::Counter(double(sh.rows));
  if (c.tier == pb::Tier::Wrapped) {
    openblas_set_num_threads(threads);
    dense_route::DenseSchurMatrix* d = dense_for(sh, why);
    if (!d) return pb::skip(state, pb::Verdict::not_run(why));
    auto check = [&] {
      sys.apply(x, y_other, 1u);                      // the matrix-free route: an independent implementation
      const double bound = 1e-8 * inf_norm(y_other);  // rounding is ~1e-14 relative; this catches wrong math only
      const double err = max_abs_diff(y, y_other);
      return err <= bound ? pb::Verdict::verified() : pb::Verdict::incorrect("|dense - matrix-free|", err, bound);
    };
    d->apply(x, y);
    const pb::Verdict v = check();
    state.counters["bytes_resident"] = benchmark::Counter(double(d->resident_bytes()));
    // bytes: the lower triangle of A, x and y.
    pb::measure(state, c, v, [&] { d->apply(x, y); }, {.work = 2 * dim * dim, .bytes = 4 * dim * dim + 16 * dim},
                {refill, check});
    return;
  }
  RowThreadPool pool(static_cast<unsigned>(threads));
  auto check = [&] {
    if (dense_route::DenseSchurMatrix* d = dense_for(sh, why)) {
      openblas_set_num_threads(threads);
      d->apply(x, y_other);
      const double bound = 1e-8 * inf_norm(y_other);
      const double err = max_abs_diff(y, y_other);
      return err <= bound ? pb::Verdict::verified() : pb::Verdict::incorrect("|matrix-free - dense|", err, bound);
    }
    // No dense oracle fits: check against the serial row-by-row path (schur_row_apply).
    for (std::size_t e = 0; e < sys.dim(); ++e) y_other[e] = sys.rho() * x[e];
    SchurScratch scratch;
    for (std::size_t i = 0; i < sys.rows().rows(); ++i)
      schur_row_apply(sys.rows(), *sys.factors(), i, x, y_other, scratch);
    return std::memcmp(y.data(), y_other.data(), y.size() * sizeof(double)) == 0
               ? pb::Verdict::not_verified("dense oracle over budget; bit-identical to serial schur_row_apply")
               : pb::Verdict::incorrect("threaded apply differs from the serial row path");
  };
  sys.apply(x, y, pool);
  const pb::Verdict v = check();
  // Under the skipped-work bench mutant: the operator of the first half of the rows.
  std::unique_ptr<SaeSchurSystem> half;
  auto call = [&] {
    if (!pb::skips_work(c)) return sys.apply(x, y, pool);
    if (!half) half = first_rows(sys, sys.rows().rows() / 2);
    half->apply(x, y, pool);
  };
  // Bit-identical to the serial path is all a row without a dense oracle is
  // checked for: after timing, that is its pass.
  auto check_after = [&] {
    const pb::Verdict after = check();
    return after.kind == pb::VerdictKind::NotVerified ? pb::Verdict::verified() : after;
  };
  state.counters["bytes_resident"] = benchmark::Counter(f.resident);
  pb::measure(state, c, v, call, {.work = f.apply_flop, .bytes = f.apply_bytes}, {refill, check_after});
}

void bench_solve(benchmark::State& state, const pb::Case& c) {
  const sae_shape& sh = sae_shapes[c.shape];
  const int threads = c.threads;
  Fixture& f = fixture(sh);
  const SaeSchurSystem& sys = *f.sys;
  const double dim = double(sys.dim());
  std::vector<double> b = f.b, x(sys.dim()), ax(sys.dim());
  auto refill = [&](std::uint64_t seed) { redraw(b, sh.seed ^ seed); };
  state.counters["items"] = benchmark::Counter(double(sh.rows));
  const double dense_flop = f.form_flop + dim * dim * dim / 3 + 4 * dim * dim;
  const bool dense_fits =
      dense_route::dense_bytes(sys.dim()) <= SAE_DENSE_MAX_BYTES && dense_flop <= SAE_DENSE_MAX_SOLVE_FLOP;
  auto residual = [&](const std::vector<double>& xs) {
    sys.apply(xs, ax, static_cast<unsigned>(threads));
    for (std::size_t e = 0; e < sys.dim(); ++e) ax[e] = b[e] - ax[e];
    return norm2(ax) / norm2(b);
  };
  if (c.tier == pb::Tier::Wrapped) {
    if (!dense_fits)
      return pb::skip(state, pb::Verdict::not_run(fmt::format(
                                 "dense solve would need {:.2f} GiB and {:.3g} flop (budgets {:.0f} GiB, {:.0e} flop)",
                                 gib(dense_route::dense_bytes(sys.dim())), dense_flop, gib(SAE_DENSE_MAX_BYTES),
                                 SAE_DENSE_MAX_SOLVE_FLOP)));
    openblas_set_num_threads(threads);
    auto run = [&] {
      auto d = dense_route::DenseSchurMatrix::form(sys, SAE_DENSE_MAX_BYTES);
      if (!d.factor_and_solve(b, x)) throw popper::Error("dense route: matrix not PD");
    };
    // A backward-stable Cholesky leaves a residual ~ dim * eps * kappa-free; 1e-8 is far above it.
    auto check = [&] {
      const double res = residual(x);
      return res <= 1e-8 ? pb::Verdict::verified()
                         : pb::Verdict::incorrect("dense solve residual (matrix-free apply)", res, 1e-8);
    };
    run();
    const pb::Verdict v = check();
    state.counters["bytes_resident"] = benchmark::Counter(dense_route::dense_bytes(sys.dim()));
    // bytes: form, factor and solve each sweep A.
    pb::measure(state, c, v, run, {.work = dense_flop, .bytes = 8 * dim * dim * 3}, {refill, check});
    return;
  }
  PcgOptions opt;
  opt.rel_tol = kSolveTol;
  opt.max_iterations = 5000;
  opt.threads = static_cast<unsigned>(threads);
  PcgReport rep = solve_schur_pcg(sys, b, x, opt);
  if (!rep.converged)
    return pb::skip(state,
                    pb::Verdict::incorrect(fmt::format("PCG did not converge, residual {:.3e}", rep.rel_residual)));
  const double bound = kSolveTol * (1 + 1e-6) + 4 * dim * kEps;
  std::string why;
  // The residual of x: through the dense CBLAS matrix (independent of the
  // matrix-free apply PCG iterates with) when one fits, else matrix-free.
  auto check = [&] {
    if (dense_route::DenseSchurMatrix* d = dense_for(sh, why)) {
      openblas_set_num_threads(threads);
      d->apply(x, ax);
      for (std::size_t e = 0; e < sys.dim(); ++e) ax[e] = b[e] - ax[e];
      const double res = norm2(ax) / norm2(b);
      return res <= bound ? pb::Verdict::verified()
                          : pb::Verdict::incorrect("PCG residual through dense A", res, bound);
    }
    const double res = residual(x);
    return res <= bound ? pb::Verdict::verified()
                        : pb::Verdict::incorrect("PCG residual (matrix-free apply)", res, bound);
  };
  const pb::Verdict v = dense_for(sh, why)
                            ? check()
                            : pb::Verdict::not_verified(fmt::format(
                                  "dense oracle over budget; matrix-free true residual {:.3e}", rep.rel_residual));
  // Under the skipped-work bench mutant: half the iterations of the first solve
  // (a solve's work is its iterations; every entry of x depends on all of A).
  PcgOptions half = opt;
  half.max_iterations = std::max<std::size_t>(1, rep.iterations / 2);
  // The iteration count of the first solve: every timed solve starts from x = 0 and the same b.
  const double passes = f.apply_bytes > kLlcFloor ? double(rep.iterations + 2) : 1.0;
  state.counters["iterations_pcg"] = benchmark::Counter(double(rep.iterations));
  state.counters["bytes_resident"] = benchmark::Counter(f.resident);
  pb::measure(state, c, v, [&] { rep = solve_schur_pcg(sys, b, x, pb::skips_work(c) ? half : opt); },
              {.work = double(rep.iterations + 2) * f.apply_flop + f.diag_flop, .bytes = passes * f.apply_bytes},
              {refill, check});
}

void register_all() {
  pb::Family("sae")
      .shapes(sae_shapes, sae_shape_count)
      .tiers({pb::Tier::Wrapped, pb::Tier::Hand})
      .precisions({"f64"})
      .threads({1, 2})
      .add([](benchmark::State& st, const pb::Case& c) {
        try {
          if (sae_shapes[c.shape].op == SAE_OP_APPLY) bench_apply(st, c);
          else bench_solve(st, c);
        } catch (const std::bad_alloc&) {
          pb::skip(st, pb::Verdict::not_run("out of memory"));
        }
      });
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  return pb::run_suite(argc, argv,
                       {{pb::Tier::Wrapped, std::string("openblas:") + openblas_get_corename()},
                        {pb::Tier::Hand, popper::cpu::backend_tag(popper::cpu::Isa::Auto)}});
}
