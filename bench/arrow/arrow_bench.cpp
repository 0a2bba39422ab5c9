// bench_arrow: the arrow family's Google Benchmark suite (bench producer
// protocol). Tiers over one BatchedK1Pack per shape (shapes.h, generate.h):
//   reference  dense Eigen LLT per atom (small shapes only)
//   wrapped    dense LAPACKE dpotrf/dpotrs per atom (the library tier; OpenBLAS
//              on one thread inside each factorization, threads across atoms)
//   hand       SIMD-across-atoms arrow-Schur kernel (8 atoms per AVX-512
//              register, 4 per AVX2 register)
// each at threads 1 and 2 (threads across atoms, inside the call; a class too
// small to pay for a second thread runs on one).
// Counters per iteration: items (atoms), flop (useful row work, rows x
// arrow_row_flops), bytes (the compulsory DRAM traffic of the roofline: every
// input read once, every output written once; the report marks it "in LLC"
// when it fits).
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arrow/testbed.hpp"
#include "impl/arrow/kernels.hpp"
#include "popper/bench.hpp"
#include "workloads/arrow/generate.h"
#include "workloads/arrow/shapes.h"

namespace {
using namespace popper::arrow;
namespace pb = popper::bench;

constexpr double kRhoT = 1e-3, kRhoBeta = 1e-3;
constexpr double kRelTol = 1e-10;  // ARROW-PO-001

struct Fixture {
  BatchedK1Pack pack;
  double rows = 0, flop = 0, bytes = 0;
};

std::shared_ptr<Fixture> make_fixture(const arrow_shape& sh) {
  arrow_inputs in{};
  if (arrow_inputs_make(&sh, &in) != 0) return nullptr;
  auto f = std::make_shared<Fixture>();
  f->pack.atom_offsets.assign(in.atom_offsets, in.atom_offsets + in.atoms + 1);
  f->pack.row_dims.assign(in.row_dims, in.row_dims + in.atoms);
  f->pack.border_dims.assign(in.border_dims, in.border_dims + in.atoms);
  f->pack.D.assign(in.D, in.D + in.nD);
  f->pack.B.assign(in.B, in.B + in.nB);
  f->pack.g_t.assign(in.g_t, in.g_t + in.ng);
  f->pack.hbb.assign(in.hbb, in.hbb + in.nC);
  f->pack.g_b.assign(in.g_b, in.g_b + in.nb);
  f->rows = arrow_inputs_rows(&in);
  f->flop = f->rows * arrow_row_flops(sh.d, sh.k);
  f->bytes = arrow_inputs_bytes(&in);
  arrow_inputs_free(&in);
  return f;
}

// Max relative error of `got` against the dense reference over sampled atoms
// (the testbed's comparison, the falsifiers' measure); negative when an atom failed.
double verify(const Fixture& f, const std::vector<ArrowResult>& got, std::size_t sample) {
  const auto slices = index_pack(f.pack);
  const std::size_t B = slices.size(), stride = std::max<std::size_t>(1, B / sample);
  double worst = 0.0;
  for (std::size_t a = 0; a < B; a += stride) {
    const ArrowResult ref = reference::solve_dense(view_of(f.pack, slices[a]), kRhoT, kRhoBeta);
    if (!ref.ok() || !got[a].ok()) return -1.0;
    const testbed::Errors e = testbed::compare(got[a].value(), ref.value());
    if (!(e.ref_norm > 0.0)) return -1.0;
    worst = std::max({worst, e.delta, e.log_det});
  }
  return worst;
}

// Fresh values in the pack's own buffers, its structure (atoms, rows, d, k)
// kept so the row's counters and work stay those of the shape: the draws of
// generate.h (SPD D blocks, C = 2I + E), from another seed.
void redraw(BatchedK1Pack& p, std::uint64_t seed) {
  const auto slices = index_pack(p);
  std::vector<double> M;
  for (const AtomSlice& a : slices) {
    const std::size_t d = a.d, k = a.k;
    const double scale = 1.0 / std::sqrt(double(std::max<std::size_t>(a.rows, 1) * d * k));
    M.resize(d * d);
    for (std::size_t i = 0; i < a.rows; ++i) {
      double* Di = p.D.data() + a.D + i * d * d;
      for (double& m : M) m = arrow_unit(&seed);
      for (std::size_t c = 0; c < d; ++c)
        for (std::size_t r = 0; r < d; ++r) {
          double acc = 0.0;
          for (std::size_t q = 0; q < d; ++q) acc += M[r + q * d] * M[c + q * d];
          Di[r + c * d] = acc / double(d) + (r == c ? 1.0 : 0.0);
        }
      for (std::size_t q = 0; q < d * k; ++q) p.B[a.B + i * d * k + q] = scale * arrow_unit(&seed);
      for (std::size_t q = 0; q < d; ++q) p.g_t[a.g_t + i * d + q] = arrow_unit(&seed);
    }
    for (std::size_t c = 0; c < k; ++c)
      for (std::size_t r = c; r < k; ++r) {
        const double e = r == c ? 2.0 + 0.25 * arrow_unit(&seed) : arrow_unit(&seed) / (4.0 * double(k));
        p.hbb[a.hbb + r + c * k] = p.hbb[a.hbb + c + r * k] = e;
      }
    for (std::size_t q = 0; q < k; ++q) p.g_b[a.g_b + q] = arrow_unit(&seed);
  }
}

// The pack of the first `atoms` atoms (a CSR prefix of every buffer).
BatchedK1Pack first_atoms(const BatchedK1Pack& p, std::size_t atoms) {
  const auto slices = index_pack(p);
  const AtomSlice end = slices[atoms];  // the offsets where atom `atoms` begins
  auto prefix = [](const auto& v, std::size_t n) { return std::decay_t<decltype(v)>(v.begin(), v.begin() + n); };
  return {prefix(p.atom_offsets, atoms + 1),
          prefix(p.row_dims, atoms),
          prefix(p.border_dims, atoms),
          prefix(p.D, end.D),
          prefix(p.B, end.B),
          prefix(p.g_t, end.g_t),
          prefix(p.hbb, end.hbb),
          prefix(p.g_b, end.g_b)};
}

// The tier's answer is checked against the dense reference before timing
// (every atom for small shapes, a stride sample of 128 at SAC scale), and
// again after timing on fresh values in the same pack.
void run(benchmark::State& state, const pb::Case& c, Fixture& f, const arrow_shape& sh) {
  const bool all_atoms = sh.reference != 0;
  const ArrowKernel kernel = c.tier == pb::Tier::Hand      ? ArrowKernel::Hand
                             : c.tier == pb::Tier::Wrapped ? ArrowKernel::Lapack
                                                           : ArrowKernel::Reference;
  const ArrowSolveOptions opt{kernel, static_cast<unsigned>(c.threads)};
  std::vector<ArrowResult> out = solve_pack(f.pack, kRhoT, kRhoBeta, opt);
  auto check = [&] {
    const double err = verify(f, out, all_atoms ? out.size() : 128);
    return err < 0.0           ? pb::Verdict::incorrect("an atom failed")
           : !(err <= kRelTol) ? pb::Verdict::incorrect("max relative error", err, kRelTol)
                               : pb::Verdict::verified();
  };
  const pb::Verdict v = check();
  // Under the skipped-work bench mutant: the first half of the atoms solved,
  // the rest of `out` left as it was.
  BatchedK1Pack half;
  auto call = [&] {
    if (pb::skips_work(c)) {
      if (half.atoms() == 0) half = first_atoms(f.pack, f.pack.atoms() / 2);
      auto part = solve_pack(half, kRhoT, kRhoBeta, opt);
      std::move(part.begin(), part.end(), out.begin());
    } else {
      out = solve_pack(f.pack, kRhoT, kRhoBeta, opt);
    }
    benchmark::DoNotOptimize(out.data());
  };
  // The fixture is every tier's of the shape: its values are put back after the row.
  std::optional<BatchedK1Pack> original;
  const pb::Recheck recheck{[&](std::uint64_t seed) {
                              if (!original) original = f.pack;
                              redraw(f.pack, sh.seed ^ seed);
                              half = {};
                            },
                            check};
  state.counters["items"] = benchmark::Counter(static_cast<double>(f.pack.atoms()));
  pb::measure(state, c, v, call, {.work = f.flop, .bytes = f.bytes}, recheck);
  if (original) f.pack = std::move(*original);
}

void register_all() {
  // Built on first use and shared by the tiers of a shape.
  auto fixtures = std::make_shared<std::vector<std::shared_ptr<Fixture>>>(arrow_shape_count);
  pb::Family("arrow")
      .shapes(arrow_shapes, arrow_shape_count)
      .precisions({"f64"})
      .threads({1, 2})
      .tiers({pb::Tier::Reference, pb::Tier::Wrapped, pb::Tier::Hand})
      .where([](const pb::Case& c) { return c.tier != pb::Tier::Reference || arrow_shapes[c.shape].reference; })
      .add([fixtures](benchmark::State& st, const pb::Case& c) {
        const arrow_shape& sh = arrow_shapes[c.shape];
        auto& f = (*fixtures)[static_cast<std::size_t>(c.shape)];
        if (!f) f = make_fixture(sh);
        if (!f) return pb::skip(st, pb::Verdict::not_run("out of memory building inputs"));
        run(st, c, *f, sh);
      });
}
}  // namespace

int main(int argc, char** argv) {
  register_all();
  // The wrapped tier in the ceiling's backend naming (vendor:kernels), so FFI
  // overhead compares the same library and core.
  return pb::run_suite(argc, argv,
                       {{pb::Tier::Reference, "eigen-llt-dense"},
                        {pb::Tier::Wrapped, std::string("openblas:") + openblas_get_corename()},
                        {pb::Tier::Hand, popper::cpu::backend_tag(hand_isa())}});
}
