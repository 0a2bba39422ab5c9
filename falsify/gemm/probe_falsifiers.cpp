// FALSIFY-GEMM-019: the hand kernel's finiteness probe (CpuGemmOptions::
// probe_finite) vouches for a C exactly when every element it stored is
// finite, and probing changes no bit of C.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "impl/gemm/cpu_gemm.hpp"
#include "testbed.hpp"
#include "popper/binding.hpp"

namespace {

using namespace popper::gemm;
using namespace popper::gemm::testbed;

// Where op(A)(i, p) and op(B)(p, j) are stored.
std::size_t a_index(const GemmShape& s, std::int64_t i, std::int64_t p) {
  const bool rows = (s.op_a == Op::NoTrans) == (s.layout == Layout::RowMajor);
  return static_cast<std::size_t>(rows ? i * s.lda + p : p * s.lda + i);
}
std::size_t b_index(const GemmShape& s, std::int64_t p, std::int64_t j) {
  const bool rows = (s.op_b == Op::NoTrans) == (s.layout == Layout::RowMajor);
  return static_cast<std::size_t>(rows ? p * s.ldb + j : j * s.ldb + p);
}

// One non-finite value planted in a copy of the operands, and whether the
// stored C then holds a non-finite element.
template <class T>
struct Plant {
  std::string what;
  T beta;
  std::function<void(Operands<T>&)> spoil;
  bool c_nonfinite;
};

template <class T>
std::vector<Plant<T>> plants(const GemmShape& s) {
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  const std::int64_t m = s.m, n = s.n, k = s.k;
  std::vector<Plant<T>> out{
      {"finite operands", T(0), [](Operands<T>&) {}, false},
      {"finite operands, beta 0.5", T(0.5), [](Operands<T>&) {}, false},
      {"NaN at op(A)(0, 0)", T(0), [=](Operands<T>& o) { o.a[a_index(s, 0, 0)] = nan; }, true},
      // The last row (an edge tile where m is no multiple of MR) in the last k block.
      {"NaN at op(A)(m-1, k-1)", T(0), [=](Operands<T>& o) { o.a[a_index(s, m - 1, k - 1)] = nan; }, true},
      // The last column (an edge sliver where n is no multiple of NR) in the last k block.
      {"+inf at op(B)(k-1, n-1)", T(0), [=](Operands<T>& o) { o.b[b_index(s, k - 1, n - 1)] = inf; }, true},
      {"-inf in C(0, 0), beta 0.5", T(0.5), [=](Operands<T>& o) { o.c[c_index(s, 0, 0)] = -inf; }, true},
      {"+inf in C(m-1, n-1), beta 0.5", T(0.5), [=](Operands<T>& o) { o.c[c_index(s, m - 1, n - 1)] = inf; }, true},
  };
  // C's leading-dimension padding is not C: a NaN there is never stored.
  if (s.layout == Layout::RowMajor ? s.ldc > n : s.ldc > m)
    out.push_back({"NaN in C's padding only, beta 0.5", T(0.5),
                   [=](Operands<T>& o) {
                     o.c[c_index(s, 0, 0) + static_cast<std::size_t>(s.layout == Layout::RowMajor ? n : m)] = nan;
                   },
                   false});
  return out;
}

template <class T>
bool all_finite_in_c(const GemmShape& s, std::span<const T> c) {
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t j = 0; j < s.n; ++j)
      if (!std::isfinite(c[c_index(s, i, j)])) return false;
  return true;
}

// Every plant on every shape, layout, op pair, ISA, thread count, B sharing
// and blocking (the machine's caches and small ones: several k blocks), with
// and without the stream_c hint on a 64-byte aligned C with whole-line rows.
template <class T>
void check_probe(const popper::Params& p, std::uint64_t seed_offset) {
  std::mt19937_64 rng(p.seed() + seed_offset);
  constexpr std::int64_t kLine = 64 / static_cast<std::int64_t>(sizeof(T));
  int cases = 0;
  for (const auto layout : kLayouts)
    for (const auto op_a : kOps)
      for (const auto op_b : kOps)
        for (const auto& d : shape_list(p))
          for (const bool stream : {false, true}) {
            GemmShape s = padded(layout, op_a, op_b, d.m, d.n, d.k, p.integer("ld_pad"));
            if (stream) s.ldc = (s.ldc + kLine - 1) / kLine * kLine;
            const Operands<T> clean = random_operands<T>(s, rng);
            std::vector<T> storage(clean.c.size() + static_cast<std::size_t>(kLine));
            const auto misalign = reinterpret_cast<std::uintptr_t>(storage.data()) % 64;
            const std::span<T> c(storage.data() + (misalign ? (64 - misalign) / sizeof(T) : 0), clean.c.size());
            for (const Plant<T>& plant : plants<T>(s)) {
              Operands<T> o = clean;
              plant.spoil(o);
              for (const std::optional<cpu::CacheSizes> caches :
                   {std::optional<cpu::CacheSizes>{}, std::optional(kSmallCaches)})
                for (const auto isa : isas_to_test())
                  for (const auto t : p.integers("threads"))
                    for (const auto sharing : b_sharings(t)) {
                      const ScopedThreadedRun scope(sharing);
                      const ScopedBlockingCaches blocking(caches);
                      cpu::CpuGemmOptions opts{static_cast<int>(t), isa, stream};
                      const std::string name = std::string(plant.what) + " on " + describe(s) +
                                               " isa=" + cpu::to_string(isa) + " threads=" + std::to_string(t) +
                                               to_string(sharing) + (caches ? " small caches" : "") +
                                               (stream ? " stream_c" : "");
                      std::copy(o.c.begin(), o.c.end(), c.begin());
                      cpu::gemm(s, T(1.5), o.a, o.b, plant.beta, c, opts);
                      const std::vector<T> unprobed(c.begin(), c.end());
                      ASSERT_EQ(all_finite_in_c<T>(s, unprobed), !plant.c_nonfinite)
                          << name << ": the plant did not do what the test expects of it";
                      std::copy(o.c.begin(), o.c.end(), c.begin());
                      opts.probe_finite = true;
                      const bool vouched = cpu::gemm(s, T(1.5), o.a, o.b, plant.beta, c, opts);
                      EXPECT_EQ(vouched, !plant.c_nonfinite) << name << ": the probe "
                                                             << (vouched ? "vouched for a C with a non-finite element"
                                                                         : "did not vouch for an all-finite C");
                      EXPECT_EQ(std::memcmp(c.data(), unprobed.data(), c.size() * sizeof(T)), 0)
                          << name << ": probing changed C";
                      if (::testing::Test::HasFailure()) return;
                      record_cpu_path(isa);
                      ++cases;
                    }
            }
          }
  EXPECT_GT(cases, 0) << "no case ran";
  std::printf("  %s: %d probed calls, each vouched exactly when C was all finite\n", precision_name<T>(), cases);
}

POPPER_FALSIFIER("FALSIFY-GEMM-019", [](const popper::Params& p) {
  check_probe<float>(p, 0);
  check_probe<double>(p, 1);
  // What the probe does not cover says so: alpha = 0 stores beta C unprobed.
  std::vector<float> a(4, 1.0f), b(4, 1.0f), c(4, 1.0f);
  cpu::CpuGemmOptions opts;
  opts.probe_finite = true;
  EXPECT_FALSE(cpu::gemm(with_tight_ld(GemmShape{Layout::RowMajor, Op::NoTrans, Op::NoTrans, 2, 2, 2, 0, 0, 0}), 0.0f,
                         a, b, 1.0f, c, opts))
      << "alpha = 0 is not probed, so the call must not vouch";
});

}  // namespace
