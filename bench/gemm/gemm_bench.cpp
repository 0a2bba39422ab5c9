// bench_gemm: the wrapped (OpenBLAS through popper::gemm::BlasHandle), hand
// (popper::gemm::cpu::gemm) and reference tiers over workloads/gemm/shapes.h.
//
//   C = A * B   (row-major, NoTrans, alpha = 1, beta = 0), FLOP = 2 m n k,
//   bytes = (m k + k n + m n) * sizeof(T): the compulsory DRAM traffic of the
//   roofline (A and B read once, C written once; beta = 0 never reads C)
//
// Before timing, every tier's output is checked against the dot products
// evaluated in FP64 with the testbed's bound (falsify/gemm/testbed.hpp,
// check_product_entries): the full matrix for small shapes, 256 sampled
// entries for the large ones (label "verified(sampled 256)"). A violation
// skips the benchmark with "incorrect: ...".
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/suite.hpp"
#include "gemm/gemm_device.hpp"
#include "gemm/testbed.hpp"
#include "impl/gemm/cpu_gemm.hpp"
#include "impl/gemm/lib_blas.hpp"
#include "impl/gemm/reference.hpp"
#include "workloads/gemm/shapes.h"

namespace {

using popper::gemm::GemmShape;
namespace suite = popper::suite;

enum class Tier { Wrapped, Hand, Reference };

const char* tier_name(Tier t) {
  switch (t) {
    case Tier::Wrapped: return "wrapped";
    case Tier::Hand: return "hand";
    case Tier::Reference: return "reference";
  }
  return "?";
}

// Shapes whose full reference product is cheap enough to verify every entry.
bool is_small(const popper_gemm_shape& s) { return double(s.m) * s.n * s.k <= 256.0 * 256.0 * 256.0; }

GemmShape make_shape(std::int64_t m, std::int64_t n, std::int64_t k) {
  GemmShape s;
  s.m = m;
  s.n = n;
  s.k = k;
  s.lda = k;  // row-major NoTrans: A is m x k, B is k x n, C is m x n
  s.ldb = n;
  s.ldc = n;
  return s;
}

template <class T>
void bench_gemm(benchmark::State& state, Tier tier, popper_gemm_shape sh, int threads) {
  const std::size_t m = std::size_t(sh.m), n = std::size_t(sh.n), k = std::size_t(sh.k);
  std::vector<T> a(m * k), b(k * n), c(m * n, T(0));
  suite::fill_uniform(a, 1);
  suite::fill_uniform(b, 2);

  std::unique_ptr<popper::gemm::BlasHandle> blas;
  if (tier == Tier::Wrapped) blas = std::make_unique<popper::gemm::BlasHandle>(popper::gemm::BlasOptions{threads, ""});
  const popper::gemm::cpu::CpuGemmOptions cpu_opts{threads, popper::gemm::cpu::Isa::Auto};

  // One call of the tier on the first `rows` rows of A and C (rows < m only
  // for the injected extra work, which recomputes a slice of C identically).
  auto run_rows = [&](std::size_t rows) {
    const GemmShape s = make_shape(std::int64_t(rows), sh.n, sh.k);
    std::span<const T> as(a.data(), rows * k);
    std::span<const T> bsp(b.data(), b.size());
    std::span<T> cs(c.data(), rows * n);
    switch (tier) {
      case Tier::Wrapped: blas->gemm(s, T(1), as, bsp, T(0), cs); break;
      case Tier::Hand: popper::gemm::cpu::gemm(s, T(1), as, bsp, T(0), cs, cpu_opts); break;
      case Tier::Reference: popper::gemm::reference::gemm<T>(s, T(1), as, bsp, T(0), cs); break;
    }
  };

  std::string label;
  try {
    run_rows(m);
    if (tier == Tier::Reference) {
      label = "not_verified: the reference is the oracle";
    } else {
      const auto chk = popper::gemm::testbed::check_product_entries<T>(sh.m, sh.n, sh.k, a, b, c,
                                                                       popper_gemm_check_samples(sh.m, sh.n, sh.k));
      if (!chk.ok) {
        state.SkipWithError(chk.verdict().c_str());
        return;
      }
      label = chk.verdict();
    }
  } catch (const std::exception& e) {
    state.SkipWithError((std::string("incorrect: threw ") + e.what()).c_str());
    return;
  }

  auto timed = [&] { run_rows(m); };

  for (auto _ : state) {
    switch (tier) {
      case Tier::Wrapped: suite::popper_bench_call_wrapped(timed); break;
      case Tier::Hand: suite::popper_bench_call_hand(timed); break;
      case Tier::Reference: suite::popper_bench_call_reference(timed); break;
    }
  }
  state.SetLabel(label);
  state.counters["flop"] = benchmark::Counter(2.0 * double(m) * double(n) * double(k));
  state.counters["bytes"] = benchmark::Counter(double(m * k + k * n + m * n) * double(sizeof(T)));
}

void register_all() {
  const int iters = suite::fixed_iterations();
  for (int i = 0; i < POPPER_GEMM_SHAPE_COUNT; ++i) {
    const popper_gemm_shape sh = POPPER_GEMM_SHAPES[i];
    for (Tier tier : {Tier::Wrapped, Tier::Hand, Tier::Reference}) {
      if (tier == Tier::Reference && !is_small(sh)) continue;  // O(mnk) scalar: small shapes only
      for (const char* prec : {"f32", "f64"}) {
        for (int threads : {1, 2}) {
          if (tier == Tier::Reference && threads != 1) continue;  // single-threaded by design
          const std::string name = std::string("gemm/") + tier_name(tier) + "/" + sh.name + "/" + prec +
                                   "/threads:" + std::to_string(threads);
          benchmark::internal::Benchmark* b =
              prec[1] == '3' ? benchmark::RegisterBenchmark(
                                   name.c_str(), [=](benchmark::State& s) { bench_gemm<float>(s, tier, sh, threads); })
                             : benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) {
                                 bench_gemm<double>(s, tier, sh, threads);
                               });
          b->UseRealTime()->Unit(benchmark::kMillisecond);
          if (iters > 0) b->Iterations(iters);
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  namespace device = popper::gemm::bench_device;
  const std::string on = device::requested_device();
  if (on == "cuda") {
    device::register_device_tiers(suite::fixed_iterations());
    return suite::run_suite(argc, argv, {{"wrapped", device::wrapped_backend()}, {"hand", device::hand_backend()}});
  }
  if (!on.empty()) {
    std::fprintf(stderr, "bench_gemm: POPPER_BENCH_DEVICE=%s: only cuda has device tiers\n", on.c_str());
    return 2;
  }
  register_all();
  const std::string core = [] {  // the handle sets OpenBLAS's thread count until it goes
    popper::gemm::BlasHandle probe(popper::gemm::BlasOptions{1, ""});
    return probe.core_name();
  }();
  return suite::run_suite(
      argc, argv,
      {{"wrapped", "openblas:" + core},
       {"hand", std::string("cpu:") + popper::gemm::cpu::to_string(popper::gemm::cpu::detected_isa())},
       {"reference", "reference"}});
}
