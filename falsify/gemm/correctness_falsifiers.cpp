// FALSIFY-GEMM-001 (OpenBLAS wrapper), -002 (hand CPU kernel), -003 (beta = 0
// never reads C), -014 (ISA dispatch): every implementation against the
// reference with the Higham bound of testbed.hpp.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "impl/gemm/cpu_gemm.hpp"
#include "impl/gemm/cuda_gemm.hpp"
#include "impl/gemm/lib_blas.hpp"
#include "testbed.hpp"
#include "popper/binding.hpp"

namespace {

using namespace popper::gemm;
using namespace popper::gemm::testbed;

// A GEMM implementation under test, for one precision. `record` writes the
// evidence of what the last call ran on; it is called once the call is judged.
template <class T>
using Impl = std::function<void(const GemmShape&, T, std::span<const T>, std::span<const T>, T, std::span<T>)>;

template <class T>
struct Named {
  std::string name;
  Impl<T> fn;
  std::function<void()> record;
};

// Runs every (layout, op_a, op_b, shape, pad, alpha/beta) case through each impl.
template <class T>
void check_grid(const popper::Params& p, const std::vector<Named<T>>& impls, std::uint64_t seed_offset) {
  const double factor = p.number("tol_factor");
  const std::int64_t ld_pad = p.integer("ld_pad");
  std::mt19937_64 rng(p.seed() + seed_offset);
  int cases = 0;
  for (const auto layout : kLayouts)
    for (const auto op_a : kOps)
      for (const auto op_b : kOps)
        for (const auto& d : shape_list(p))
          for (const std::int64_t pad : {std::int64_t{0}, ld_pad}) {
            const GemmShape s = padded(layout, op_a, op_b, d.m, d.n, d.k, pad);
            const Operands<T> o = random_operands<T>(s, rng);
            const std::vector<double> absprod = abs_product(o);
            for (const auto& ab : alpha_beta_list(p)) {
              const T alpha = static_cast<T>(ab.alpha), beta = static_cast<T>(ab.beta);
              const std::vector<T> ref = reference_result(o, alpha, beta);
              for (const auto& impl : impls) {
                std::vector<T> c = o.c;
                impl.fn(s, alpha, o.a, o.b, beta, c);
                const Verdict v = check_result<T>(s, c, ref, o.c, absprod, alpha, beta, factor);
                EXPECT_TRUE(v.ok) << impl.name << ": " << v.message << " (seed " << p.seed() << ")";
                if (!v.ok) return;  // one precise report beats hundreds
                impl.record();
                ++cases;
              }
            }
          }
  EXPECT_GT(cases, 0) << "no case ran";
}

template <class T>
std::vector<Named<T>> blas_impls(const BlasHandle& h) {
  // Mutant: the wrapper passes tight leading dimensions, ignoring the caller's.
  const bool ignore_ld = popper::mutant::active("gemm-blas-ignores-ld");
  const std::string tag = openblas_tag(h);
  return {{"BlasHandle",
           [&h, ignore_ld](const GemmShape& s, T al, std::span<const T> a, std::span<const T> b, T be, std::span<T> c) {
             GemmShape call = s;
             if (ignore_ld) call.lda = call.ldb = call.ldc = 0;
             h.gemm(call, al, a, b, be, c);
           },
           [tag] { popper::record_backend(tag); }}};
}

// cpu::gemm on every ISA, thread count and B packing; with `small_caches`,
// also blocked for kSmallCaches (several k, MC and NC blocks on any machine).
template <class T>
std::vector<Named<T>> hand_impls(const std::vector<std::int64_t>& threads, bool small_caches = false,
                                 bool stream_c = false) {
  std::vector<Named<T>> out;
  std::vector<std::optional<cpu::CacheSizes>> blockings{std::nullopt};  // the machine's caches
  if (small_caches) blockings.push_back(kSmallCaches);
  for (const auto& caches : blockings)
    for (const auto isa : isas_to_test())
      for (const auto t : threads) {
        const cpu::CpuGemmOptions opts{static_cast<int>(t), isa, stream_c};
        for (const auto sharing : b_sharings(t))
          out.push_back({std::string("cpu::gemm isa=") + cpu::to_string(isa) + " threads=" + std::to_string(t) +
                             to_string(sharing) + (caches ? " small caches" : "") + (stream_c ? " stream_c" : ""),
                         [opts, sharing, caches](const GemmShape& s, T al, std::span<const T> a, std::span<const T> b,
                                                 T be, std::span<T> c) {
                           const ScopedThreadedRun scope(sharing);
                           const ScopedBlockingCaches blocking(caches);
                           cpu::gemm(s, al, a, b, be, c, opts);
                         },
                         [isa] { record_cpu_path(isa); }});
      }
  return out;
}

POPPER_FALSIFIER("FALSIFY-GEMM-001", [](const popper::Params& p) {
  const BlasHandle h;
  check_grid<float>(p, blas_impls<float>(h), 0);
  check_grid<double>(p, blas_impls<double>(h), 1);
});

// The stream_c hint (C stored past the caches): C in a 64-byte aligned buffer
// with rows a whole number of cache lines, as the hint needs, over NaN with
// beta = 0 and alpha = 1.5; full and edge tiles, and k blocks beyond the first
// under the small caches (where the hint is declined).
template <class T>
void check_stream_c(const popper::Params& p, const std::vector<Named<T>>& impls, std::uint64_t seed_offset) {
  const double factor = p.number("tol_factor");
  std::mt19937_64 rng(p.seed() + seed_offset);
  constexpr std::int64_t kLine = 64 / static_cast<std::int64_t>(sizeof(T));
  for (const auto layout : kLayouts)
    for (const auto op_a : kOps)
      for (const auto op_b : kOps)
        for (const auto& d : shape_list(p, "stream_c_shapes")) {
          GemmShape s = with_tight_ld(GemmShape{layout, op_a, op_b, d.m, d.n, d.k, 0, 0, 0});
          s.ldc = (s.ldc + kLine - 1) / kLine * kLine;
          Operands<T> o = random_operands<T>(s, rng);
          std::fill(o.c.begin(), o.c.end(), std::numeric_limits<T>::quiet_NaN());
          const std::vector<double> absprod = abs_product(o);
          const std::vector<T> ref = reference_result(o, T(1.5), T(0));
          std::vector<T> storage(o.c.size() + static_cast<std::size_t>(kLine));
          const auto misalign = reinterpret_cast<std::uintptr_t>(storage.data()) % 64;
          const std::span<T> c(storage.data() + (misalign ? (64 - misalign) / sizeof(T) : 0), o.c.size());
          for (const auto& impl : impls) {
            std::copy(o.c.begin(), o.c.end(), c.begin());
            impl.fn(s, T(1.5), o.a, o.b, T(0), c);
            const Verdict v = check_result<T>(s, c, ref, o.c, absprod, 1.5, 0.0, factor);
            EXPECT_TRUE(v.ok) << impl.name << ": " << v.message;
            if (!v.ok) return;
            impl.record();
          }
        }
}

POPPER_FALSIFIER("FALSIFY-GEMM-002", [](const popper::Params& p) {
  const auto threads = p.integers("threads");
  const auto f32 = hand_impls<float>(threads, true);
  const auto f64 = hand_impls<double>(threads, true);
  ASSERT_GE(f32.size(), threads.size()) << "at least the scalar kernel must be available";
  check_grid<float>(p, f32, 0);
  check_grid<double>(p, f64, 1);
  check_stream_c<float>(p, hand_impls<float>(threads, true, true), 2);
  check_stream_c<double>(p, hand_impls<double>(threads, true, true), 3);
});

// beta = 0 with C full of NaN: every entry point must return finite values
// within the bound. Control: beta = 1 must propagate the NaN (the test can see a read).
template <class T>
void check_beta_zero(const popper::Params& p, const std::vector<Named<T>>& impls, std::uint64_t seed_offset) {
  const double factor = p.number("tol_factor");
  std::mt19937_64 rng(p.seed() + seed_offset);
  const T nan = std::numeric_limits<T>::quiet_NaN();
  // Mutant: an implementation that computes beta * C even when beta = 0.
  const bool reads_c = popper::mutant::active("gemm-beta-zero-reads-c");
  for (const auto layout : kLayouts)
    for (const auto op_a : kOps)
      for (const auto op_b : kOps)
        for (const auto& d : shape_list(p)) {
          const GemmShape s = padded(layout, op_a, op_b, d.m, d.n, d.k, 2);
          Operands<T> o = random_operands<T>(s, rng);
          std::fill(o.c.begin(), o.c.end(), nan);
          const std::vector<double> absprod = abs_product(o);
          const std::vector<T> ref = reference_result(o, T(1.5), T(0));
          for (std::int64_t i = 0; i < d.m; ++i)
            for (std::int64_t j = 0; j < d.n; ++j)
              ASSERT_TRUE(std::isfinite(ref[c_index(s, i, j)])) << "reference read C with beta = 0: " << describe(s);
          for (const auto& impl : impls) {
            std::vector<T> c = o.c;
            impl.fn(s, T(1.5), o.a, o.b, T(0), c);
            if (reads_c)
              for (std::int64_t i = 0; i < d.m; ++i)
                for (std::int64_t j = 0; j < d.n; ++j) c[c_index(s, i, j)] += T(0) * o.c[c_index(s, i, j)];
            const Verdict v = check_result<T>(s, c, ref, o.c, absprod, 1.5, 0.0, factor);
            EXPECT_TRUE(v.ok) << impl.name << ": NaN in C leaked with beta = 0: " << v.message;
            if (v.ok) impl.record();
            std::vector<T> c1 = o.c;  // control: beta = 1 reads C
            impl.fn(s, T(1.5), o.a, o.b, T(1), c1);
            EXPECT_TRUE(std::isnan(c1[c_index(s, 0, 0)])) << impl.name << ": control with beta = 1 did not read C";
          }
        }
}

POPPER_FALSIFIER("FALSIFY-GEMM-003", [](const popper::Params& p) {
  const BlasHandle h;
  auto f32 = blas_impls<float>(h);
  for (auto& x : hand_impls<float>({1, 2})) f32.push_back(x);
  f32.push_back({"reference",
                 [](const GemmShape& s, float al, std::span<const float> a, std::span<const float> b, float be,
                    std::span<float> c) { reference::gemm<float>(s, al, a, b, be, c); },
                 [] { popper::record_backend("reference"); }});
  // The cuda:: entries report where they ran; a decline is recorded as such,
  // never as cuBLAS evidence.
  auto last = std::make_shared<cuda::Backend>(cuda::Backend::Cpu);
  auto record_last = [last] { record_cuda_entry(*last); };
  f32.push_back({"cuda::CublasContext::gemm_f32",
                 [last](const GemmShape& s, float al, std::span<const float> a, std::span<const float> b, float be,
                        std::span<float> c) {
                   cuda::CublasContext ctx;
                   *last = ctx.gemm_f32(s, al, a, b, be, c);
                 },
                 record_last});
  f32.push_back({"cuda::gemm_f32_strided_batched(count 1)",
                 [last](const GemmShape& s, float al, std::span<const float> a, std::span<const float> b, float be,
                        std::span<float> c) {
                   cuda::CublasContext ctx;
                   *last = ctx.gemm_f32_strided_batched(s, cuda::BatchStrides{1, 0, 0, 0}, al, a, b, be, c);
                 },
                 record_last});
  f32.push_back({"cuda::hand_gemm_f32",
                 [last](const GemmShape& s, float al, std::span<const float> a, std::span<const float> b, float be,
                        std::span<float> c) { *last = cuda::hand_gemm_f32(s, al, a, b, be, c); },
                 record_last});
  auto f64 = blas_impls<double>(h);
  for (auto& x : hand_impls<double>({1, 2})) f64.push_back(x);
  check_beta_zero<float>(p, f32, 0);
  check_beta_zero<double>(p, f64, 1);
});

// Dispatch is checked on this CPU and on the narrower CPUs the ISA cap makes
// of it (scalar-only, AVX2-only): every ISA outside the cap is refused before
// C is touched, every ISA inside it runs within the bound.
POPPER_FALSIFIER("FALSIFY-GEMM-014", [](const popper::Params& p) {
  const double factor = p.number("tol_factor");
  EXPECT_TRUE(cpu::cpu_supports(cpu::detected_isa()));
  EXPECT_NE(cpu::detected_isa(), cpu::Isa::Auto);
  std::mt19937_64 rng(p.seed());
  const GemmShape s = padded(Layout::RowMajor, Op::NoTrans, Op::Trans, 13, 29, 31, 1);
  const Operands<float> o = random_operands<float>(s, rng);
  const auto absprod = abs_product(o);
  const auto ref = reference_result(o, 1.0f, 0.5f);
  const cpu::Isa original_cap = popper::cpu::isa_cap();
  int refusal_checks = 0;
  for (const auto cap : {original_cap, cpu::Isa::Avx2, cpu::Isa::Scalar}) {
    popper::cpu::set_isa_cap(cap);
    int refused = 0;
    for (const auto isa : {cpu::Isa::Auto, cpu::Isa::Scalar, cpu::Isa::Avx2, cpu::Isa::Avx512}) {
      std::vector<float> c = o.c;
      if (!cpu::cpu_supports(isa)) {
        EXPECT_THROW(cpu::gemm(s, 1.0f, o.a, o.b, 0.5f, c, {1, isa}), popper::Unsupported)
            << cpu::to_string(isa) << " under cap " << cpu::to_string(cap);
        EXPECT_EQ(0, std::memcmp(c.data(), o.c.data(), c.size() * sizeof(float))) << "C touched before refusing";
        ++refused;
        continue;
      }
      cpu::gemm(s, 1.0f, o.a, o.b, 0.5f, c, {1, isa});
      const Verdict v = check_result<float>(s, c, ref, o.c, absprod, 1.0, 0.5, factor);
      EXPECT_TRUE(v.ok) << "isa " << cpu::to_string(isa) << ": " << v.message;
      if (v.ok && (isa == cpu::Isa::Auto || popper::forced_paths_allowed())) record_cpu_path(isa);
    }
    // Refusals match what this (capped) CPU reports.
    const int expected = (cpu::cpu_supports(cpu::Isa::Avx2) ? 0 : 1) + (cpu::cpu_supports(cpu::Isa::Avx512) ? 0 : 1);
    EXPECT_EQ(refused, expected) << "under cap " << cpu::to_string(cap);
    refusal_checks += refused;
  }
  popper::cpu::set_isa_cap(original_cap);
  EXPECT_GE(refusal_checks, 2) << "the capped CPUs must have refused something";
});

}  // namespace
