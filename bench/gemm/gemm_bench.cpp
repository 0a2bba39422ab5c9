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
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/fill.hpp"
#include "common/operands.hpp"
#include "common/cold_row_pool.hpp"
#include "common/read_bandwidth.hpp"
#include "gemm/gemm_device.hpp"
#include "gemm/testbed.hpp"
#include "impl/gemm/cpu_gemm.hpp"
#include "impl/gemm/lib_blas.hpp"
#include "impl/gemm/reference.hpp"
#include "popper/bench.hpp"
#include "workloads/gemm/shapes.h"

namespace {

using popper::gemm::GemmShape;
namespace suite = popper::suite;
namespace pb = popper::bench;

// One row of A (a GEMV: one token through a projection) streams B once in
// real use, so these shapes are also timed cold.
bool streams_b(const popper_gemm_shape& s) { return s.m == 1; }

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
void bench_gemm(benchmark::State& state, const pb::Case& c) {
  const popper_gemm_shape sh = POPPER_GEMM_SHAPES[c.shape];
  const std::size_t m = std::size_t(sh.m), n = std::size_t(sh.n), k = std::size_t(sh.k);
  const double bytes = double(m * k + k * n + m * n) * sizeof(T);
  // A GEMV is bound by reading its footprint, and one core reads faster than
  // its share of the triad: the row's bound is a read of those bytes on its
  // threads, cold for a cold row. Taken first, before any library's threads spin.
  std::vector<double> read;
  if (streams_b(sh) && c.tier != pb::Tier::Reference)
    read = suite::read_bandwidth(std::size_t(bytes), c.threads, 5, c.cache);
  suite::OperandVector<T> a(m * k), b(k * n), out(m * n, T(0));
  suite::fill_uniform(a, 1);
  suite::fill_uniform(b, 2);

  std::unique_ptr<popper::gemm::BlasHandle> blas;
  if (c.tier == pb::Tier::Wrapped)
    blas = std::make_unique<popper::gemm::BlasHandle>(popper::gemm::BlasOptions{c.threads, ""});
  const popper::gemm::cpu::CpuGemmOptions cpu_opts{c.threads, popper::gemm::cpu::Isa::Auto};
  const GemmShape s = make_shape(sh.m, sh.n, sh.k), half = make_shape(sh.m / 2, sh.n, sh.k);
  const std::span<const T> as(a), bs(b);
  const std::span<T> cs(out);
  auto call = [&] {
    switch (c.tier) {
      case pb::Tier::Wrapped: blas->gemm(s, T(1), as, bs, T(0), cs); break;
      case pb::Tier::Hand:
        popper::gemm::cpu::gemm(pb::skips_work(c) ? half : s, T(1), as, bs, T(0), cs, cpu_opts);
        break;
      default: popper::gemm::reference::gemm<T>(s, T(1), as, bs, T(0), cs); break;
    }
  };

  auto verify = [&] {
    const auto chk = popper::gemm::testbed::check_product_entries<T>(sh.m, sh.n, sh.k, a, b, out,
                                                                     popper_gemm_check_samples(sh.m, sh.n, sh.k));
    return pb::Verdict::parse(chk.verdict());
  };
  pb::Verdict v = pb::Verdict::not_verified("the reference is the oracle");
  try {
    call();
    if (c.tier != pb::Tier::Reference) v = verify();
  } catch (const std::exception& e) {
    v = pb::Verdict::incorrect(std::string("threw ") + e.what());
  }
  pb::Recheck recheck;
  if (c.tier != pb::Tier::Reference) {
    recheck.refill = [&](std::uint64_t seed) {
      suite::fill_uniform(a, seed);
      suite::fill_uniform(b, seed + 1);
    };
    recheck.verify = verify;
  }
  suite::ColdRowPool pool(c);
  pb::measure(
      state, c, v, call,
      {.work = 2.0 * double(m) * double(n) * double(k), .bytes = bytes, .wake = pool.wake(), .rest = pool.rest()},
      recheck);
  if (!read.empty() && !state.error_occurred())
    state.counters["read_bytes_per_second"] = *std::max_element(read.begin(), read.end());
}

void register_all() {
  pb::Family("gemm")
      .shapes(POPPER_GEMM_SHAPES, POPPER_GEMM_SHAPE_COUNT)
      .tiers({pb::Tier::Wrapped, pb::Tier::Hand, pb::Tier::Reference})
      .precisions({"f32", "f64"})
      .threads({1, 2})
      .cache_modes({pb::CacheMode::Warm, pb::CacheMode::Cold})
      // The reference is O(mnk) scalar and single-threaded by design: small shapes, one thread, warm.
      .where([](const pb::Case& c) {
        const popper_gemm_shape& s = POPPER_GEMM_SHAPES[c.shape];
        if (c.cache == pb::CacheMode::Cold && (!streams_b(s) || c.tier == pb::Tier::Reference)) return false;
        return c.tier != pb::Tier::Reference || (is_small(s) && c.threads == 1);
      })
      .add([](benchmark::State& st, const pb::Case& c) {
        if (c.precision == "f32") bench_gemm<float>(st, c);
        else bench_gemm<double>(st, c);
      });
}

}  // namespace

int main(int argc, char** argv) {
  namespace device = popper::gemm::bench_device;
  const std::string on = device::requested_device();
  if (on == "cuda") {
    device::register_device_tiers();
    return pb::run_suite(argc, argv,
                         {{pb::Tier::Wrapped, device::wrapped_backend()}, {pb::Tier::Hand, device::hand_backend()}});
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
  return pb::run_suite(
      argc, argv,
      {{pb::Tier::Wrapped, "openblas:" + core},
       {pb::Tier::Hand, std::string("cpu:") + popper::gemm::cpu::to_string(popper::gemm::cpu::detected_isa())},
       {pb::Tier::Reference, "reference"}});
}
