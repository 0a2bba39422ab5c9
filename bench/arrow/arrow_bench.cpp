// bench_arrow: the arrow family's Google Benchmark suite (bench producer
// protocol). Tiers over one BatchedK1Pack per shape (shapes.h, generate.h):
//   reference  dense Eigen LLT per atom (small shapes only)
//   wrapped    dense LAPACKE dpotrf/dpotrs per atom (the library tier; OpenBLAS
//              on one thread inside each factorization, threads across atoms)
//   hand       SIMD-across-atoms arrow-Schur kernel (8 atoms per AVX-512
//              register, 4 per AVX2 register)
// each at threads 1 and 2 (threads across atoms, inside the call; a class too
// small to pay for a second thread runs on one).
// Names: arrow/<tier>/<shape>/f64/threads:<n>. Counters per iteration: items
// (atoms), flop (useful row work, rows x arrow_row_flops), bytes (the
// compulsory DRAM traffic of the roofline: every input read once, every output
// written once — the working set; the report marks it "in LLC" when it fits). Before timing, the tier's answer is
// checked against the dense reference (every atom for small shapes, a fixed stride sample of 128 atoms at SAC scale,
// where the reference over all atoms would take minutes).
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <string>

#include "arrow/testbed.hpp"
#include "common/suite.hpp"
#include "impl/arrow/kernels.hpp"
#include "workloads/arrow/generate.h"
#include "workloads/arrow/shapes.h"

namespace {
using namespace popper::arrow;

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

void run(benchmark::State& state, std::shared_ptr<Fixture> f, ArrowKernel kernel, unsigned threads, bool all_atoms) {
  const ArrowSolveOptions opt{kernel, threads};
  {
    const auto first = solve_pack(f->pack, kRhoT, kRhoBeta, opt);
    const double err = verify(*f, first, all_atoms ? first.size() : 128);
    if (err < 0.0 || !(err <= kRelTol)) {
      std::ostringstream msg;
      msg << "incorrect: " << (err < 0.0 ? std::string("an atom failed") : std::to_string(err)) << " > " << kRelTol;
      state.SkipWithError(msg.str().c_str());
      return;
    }
    state.SetLabel("verified");
  }
  auto call = [&] {
    auto res = solve_pack(f->pack, kRhoT, kRhoBeta, opt);
    benchmark::DoNotOptimize(res.data());
  };
  for (auto _ : state) {
    if (kernel == ArrowKernel::Hand) popper::suite::popper_bench_call_hand(call);
    else if (kernel == ArrowKernel::Lapack) popper::suite::popper_bench_call_wrapped(call);
    else popper::suite::popper_bench_call_reference(call);
  }
  state.counters["items"] = benchmark::Counter(static_cast<double>(f->pack.atoms()));
  state.counters["flop"] = benchmark::Counter(f->flop);
  state.counters["bytes"] = benchmark::Counter(f->bytes);
}

struct Tier {
  const char* name;
  ArrowKernel kernel;
};

void register_all() {
  const Tier tiers[] = {
      {"reference", ArrowKernel::Reference}, {"wrapped", ArrowKernel::Lapack}, {"hand", ArrowKernel::Hand}};
  for (int s = 0; s < arrow_shape_count; ++s) {
    const arrow_shape& sh = arrow_shapes[s];
    auto lazy = std::make_shared<std::shared_ptr<Fixture>>();  // built on first use, shared by tiers
    for (const Tier& t : tiers) {
      if (t.kernel == ArrowKernel::Reference && !sh.reference) continue;
      for (unsigned threads : {1u, 2u}) {
        const std::string name =
            std::string("arrow/") + t.name + "/" + sh.name + "/f64/threads:" + std::to_string(threads);
        const ArrowKernel kernel = t.kernel;
        const bool all_atoms = sh.reference != 0;
        auto* b = benchmark::RegisterBenchmark(name.c_str(),
                                               [lazy, &sh, kernel, threads, all_atoms](benchmark::State& st) {
                                                 if (!*lazy) *lazy = make_fixture(sh);
                                                 if (!*lazy) {
                                                   st.SkipWithError("not_run: out of memory building inputs");
                                                   return;
                                                 }
                                                 run(st, *lazy, kernel, threads, all_atoms);
                                               })
                      ->UseRealTime()
                      ->Unit(benchmark::kMillisecond);
        if (const int n = popper::suite::fixed_iterations()) b->Iterations(n);
      }
    }
  }
}
}  // namespace

int main(int argc, char** argv) {
  register_all();
  // The wrapped tier in the ceiling's backend naming (vendor:kernels), so FFI
  // overhead compares the same library and core.
  return popper::suite::run_suite(argc, argv,
                                  {{"reference", "eigen-llt-dense"},
                                   {"wrapped", std::string("openblas:") + openblas_get_corename()},
                                   {"hand", popper::cpu::backend_tag(hand_isa())}});
}
