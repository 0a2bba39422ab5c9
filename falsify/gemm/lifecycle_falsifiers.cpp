// FALSIFY-GEMM-008 (BlasHandle RAII and core type), -009 (cuBLAS context
// lifecycle, device), -010 (decline to CPU, bitwise), -011 (ptxas resources),
// -012 (thread-count determinism), -015 (device correctness).
#include <cblas.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <vector>

#include "impl/common/device.hpp"
#include "impl/gemm/cpu_gemm.hpp"
#include "impl/gemm/cuda_gemm.hpp"
#include "impl/gemm/lib_blas.hpp"
#include "testbed.hpp"
#include "popper/binding.hpp"
#include "popper/runtime_paths.hpp"

namespace {

using namespace popper::gemm;
using namespace popper::gemm::testbed;

bool bitwise_equal(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

POPPER_FALSIFIER("FALSIFY-GEMM-008", [](const popper::Params& p) {
  const auto threads = p.integers("threads");
  ASSERT_EQ(threads.size(), 2u);
  const int original = openblas_get_num_threads();
  // Start from a value distinct from the inner handle's, so a missing restore shows.
  const int outer_t = static_cast<int>(threads[1]), inner_t = static_cast<int>(threads[0]);
  openblas_set_num_threads(inner_t);
  const int start = openblas_get_num_threads();
  {
    const BlasHandle outer({outer_t, ""});
    EXPECT_EQ(outer.threads(), outer_t);
    const int outer_lib = openblas_get_num_threads();  // OpenBLAS caps at its thread pool size
    EXPECT_GE(outer_lib, 1);
    EXPECT_LE(outer_lib, outer_t);
    {
      const BlasHandle inner({inner_t, ""});
      EXPECT_EQ(openblas_get_num_threads(), inner_t);
    }
    EXPECT_EQ(openblas_get_num_threads(), outer_lib) << "inner handle did not restore the outer setting";
  }
  EXPECT_EQ(openblas_get_num_threads(), start) << "handle did not restore the thread count";
  openblas_set_num_threads(original);

  EXPECT_THROW(BlasHandle({0, ""}), popper::InvalidArgument);
  const BlasHandle probe;
  const std::string loaded = probe.core_name();
  ASSERT_FALSE(loaded.empty());
  std::string upper = loaded;
  for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  EXPECT_NO_THROW(BlasHandle({1, upper})) << "same core, other case, must be accepted";
  const std::string foreign = upper == "PRESCOTT" ? "Atom" : "Prescott";
  try {
    BlasHandle h({1, foreign});
    ADD_FAILURE() << "core type " << foreign << " accepted although OpenBLAS loaded " << loaded;
  } catch (const popper::Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("OPENBLAS_CORETYPE=" + foreign), std::string::npos) << e.what();
  }
  popper::record_backend(openblas_tag(probe));
  // What the CPU executes, not popper's ISA cap: the cap limits popper's own kernels only.
  const bool avx512 = popper::cpu::detected_isa() == popper::cpu::Isa::Avx512;
  EXPECT_EQ(cpu_can_run_core_type("SkylakeX"), avx512);
  if (!avx512) {
    try {
      BlasHandle h({1, "SkylakeX"});
      ADD_FAILURE() << "SkylakeX accepted on a CPU without AVX-512";
    } catch (const popper::Unsupported& e) {
      EXPECT_NE(std::string(e.what()).find("SIGILL"), std::string::npos) << e.what();
    }
  }
});

POPPER_FALSIFIER("FALSIFY-GEMM-009", [](const popper::Params& p) {
  const auto before = cuda::CublasContext::handles_created();
  cuda::CublasContext ctx;
  ASSERT_TRUE(ctx.on_device());
  EXPECT_EQ(cuda::CublasContext::handles_created(), before + 1);
  EXPECT_NE(ctx.stream(), nullptr) << "must use an explicit stream, not the legacy default";
  EXPECT_EQ(ctx.math_mode(), cuda::MathMode::Default);
  const double factor = p.number("tol_factor");
  std::mt19937_64 rng(11);
  std::uint64_t issued = 0;
  for (std::int64_t call = 0; call < p.integer("calls"); ++call)
    for (const auto& d : shape_list(p)) {
      const GemmShape s = padded(Layout::RowMajor, Op::NoTrans, Op::Trans, d.m, d.n, d.k, 1);
      const Operands<float> o = random_operands<float>(s, rng);
      std::vector<float> c = o.c;
      const auto backend = ctx.gemm_f32(s, 1.0f, o.a, o.b, 0.5f, c);
      record_cuda_entry(backend);
      ASSERT_EQ(backend, cuda::Backend::Cuda);
      ++issued;
      EXPECT_EQ(ctx.set_stream_calls(), ctx.gemm_calls());
      EXPECT_EQ(ctx.gemm_calls(), issued);
      EXPECT_EQ(ctx.last_bound_stream(), ctx.stream());
      const Verdict v =
          check_result<float>(s, c, reference_result(o, 1.0f, 0.5f), o.c, abs_product(o), 1.0, 0.5, factor);
      EXPECT_TRUE(v.ok) << v.message;
      std::vector<float> cb = o.c;
      ctx.gemm_f32_strided_batched(s, cuda::BatchStrides{1, 0, 0, 0}, 1.0f, o.a, o.b, 0.5f, cb);
      ++issued;
      EXPECT_EQ(ctx.set_stream_calls(), issued);
      EXPECT_EQ(ctx.last_bound_stream(), ctx.stream());
    }
  EXPECT_EQ(cuda::CublasContext::handles_created(), before + 1) << "a handle per call instead of per context";
});

POPPER_FALSIFIER("FALSIFY-GEMM-010", [](const popper::Params& p) {
  if (popper::device::cuda_status().usable())
    GTEST_SKIP() << "a CUDA device is usable: the decline path is not reachable";
  std::mt19937_64 rng(p.seed());
  const auto before = cuda::CublasContext::handles_created();
  cuda::CublasContext ctx;
  EXPECT_FALSE(ctx.on_device());
  const std::int64_t batch = p.integer("batch");
  for (const auto layout : kLayouts)
    for (const auto op : kOps)
      for (const auto& d : shape_list(p)) {
        const GemmShape s = padded(layout, op, Op::Trans, d.m, d.n, d.k, 1);
        const Operands<float> o = random_operands<float>(s, rng);
        std::vector<float> want = o.c;
        cpu::gemm(s, 0.75f, o.a, o.b, -0.5f, want);
        std::vector<float> got = o.c;
        EXPECT_EQ(ctx.gemm_f32(s, 0.75f, o.a, o.b, -0.5f, got), cuda::Backend::Cpu);
        EXPECT_TRUE(bitwise_equal(got, want)) << "gemm_f32 decline differs: " << describe(s);
        got = o.c;
        EXPECT_EQ(cuda::hand_gemm_f32(s, 0.75f, o.a, o.b, -0.5f, got), cuda::Backend::Cpu);
        EXPECT_TRUE(bitwise_equal(got, want)) << "hand_gemm_f32 decline differs: " << describe(s);

        // FP16: the CPU result on the same (FP16-rounded) inputs.
        std::vector<cuda::half_bits> ah(o.a.size()), bh(o.b.size());
        std::vector<float> af(o.a.size()), bf(o.b.size());
        for (std::size_t i = 0; i < ah.size(); ++i) af[i] = cuda::half_to_float(ah[i] = cuda::float_to_half(o.a[i]));
        for (std::size_t i = 0; i < bh.size(); ++i) bf[i] = cuda::half_to_float(bh[i] = cuda::float_to_half(o.b[i]));
        std::vector<float> want16 = o.c;
        cpu::gemm(s, 0.75f, af, bf, -0.5f, want16);
        got = o.c;
        EXPECT_EQ(ctx.gemm_f16(s, 0.75f, ah, bh, -0.5f, got), cuda::Backend::Cpu);
        EXPECT_TRUE(bitwise_equal(got, want16)) << "gemm_f16 decline differs: " << describe(s);
        got = o.c;
        EXPECT_EQ(cuda::hand_gemm_f16(s, 0.75f, ah, bh, -0.5f, got), cuda::Backend::Cpu);
        EXPECT_TRUE(bitwise_equal(got, want16)) << "hand_gemm_f16 decline differs: " << describe(s);
        // BF16 likewise.
        std::vector<cuda::bf16_bits> ab16(o.a.size()), bb16(o.b.size());
        for (std::size_t i = 0; i < ab16.size(); ++i)
          af[i] = cuda::bf16_to_float(ab16[i] = cuda::float_to_bf16(o.a[i]));
        for (std::size_t i = 0; i < bb16.size(); ++i)
          bf[i] = cuda::bf16_to_float(bb16[i] = cuda::float_to_bf16(o.b[i]));
        std::vector<float> want_bf16 = o.c;
        cpu::gemm(s, 0.75f, af, bf, -0.5f, want_bf16);
        got = o.c;
        EXPECT_EQ(cuda::hand_gemm_bf16(s, 0.75f, ab16, bb16, -0.5f, got), cuda::Backend::Cpu);
        EXPECT_TRUE(bitwise_equal(got, want_bf16)) << "hand_gemm_bf16 decline differs: " << describe(s);

        // Strided batch: matrix i is an independent GEMM at offset i * stride.
        const auto sa = static_cast<std::int64_t>(o.a.size()), sb = static_cast<std::int64_t>(o.b.size()),
                   sc = static_cast<std::int64_t>(o.c.size());
        std::vector<float> ab_a, ab_b, ab_c, want_c;
        for (std::int64_t i = 0; i < batch; ++i) {
          const Operands<float> oi = random_operands<float>(s, rng);
          ab_a.insert(ab_a.end(), oi.a.begin(), oi.a.end());
          ab_b.insert(ab_b.end(), oi.b.begin(), oi.b.end());
          ab_c.insert(ab_c.end(), oi.c.begin(), oi.c.end());
          std::vector<float> ci = oi.c;
          cpu::gemm(s, 0.75f, oi.a, oi.b, -0.5f, ci);
          want_c.insert(want_c.end(), ci.begin(), ci.end());
        }
        EXPECT_EQ(ctx.gemm_f32_strided_batched(s, {batch, sa, sb, sc}, 0.75f, ab_a, ab_b, -0.5f, ab_c),
                  cuda::Backend::Cpu);
        EXPECT_TRUE(bitwise_equal(ab_c, want_c)) << "strided batched decline differs: " << describe(s);
      }
  EXPECT_EQ(ctx.set_stream_calls(), 0u);
  EXPECT_EQ(ctx.gemm_calls(), 0u);
  EXPECT_EQ(ctx.stream(), nullptr);
  EXPECT_EQ(cuda::CublasContext::handles_created(), before);
  if (!::testing::Test::HasFailure()) record_cuda_entry(cuda::Backend::Cpu);  // the decline path is what was proven
  // Device-resident entries have nothing to decline to: explicit Unsupported.
  const GemmShape s = with_tight_ld({Layout::RowMajor, Op::NoTrans, Op::NoTrans, 2, 2, 2, 0, 0, 0});
  EXPECT_THROW(ctx.gemm_f32_device(s, 1.0f, {nullptr, 4}, {nullptr, 4}, 0.0f, {nullptr, 4}), popper::Unsupported);
  int dummy = 0;
  EXPECT_THROW(cuda::hand_gemm_f32_device(s, 1.0f, {nullptr, 4}, {nullptr, 4}, 0.0f, {nullptr, 4}, &dummy),
               popper::Unsupported);
  EXPECT_THROW(cuda::hand_gemm_f16_device(s, 1.0f, {nullptr, 4}, {nullptr, 4}, 0.0f, {nullptr, 4}, &dummy),
               popper::Unsupported);
  EXPECT_THROW(cuda::hand_gemm_bf16_device(s, 1.0f, {nullptr, 4}, {nullptr, 4}, 0.0f, {nullptr, 4}, &dummy),
               popper::Unsupported);
  EXPECT_THROW(cuda::DeviceBuffer<float>(16), popper::Unsupported);
});

constexpr bool kCudaCompiled = POPPER_HAVE_CUDA != 0;

POPPER_FALSIFIER("FALSIFY-GEMM-011", [](const popper::Params& p) {
  if (!kCudaCompiled) GTEST_SKIP() << "CUDA is not compiled in (POPPER_HAVE_CUDA=0): no ptxas log to check";
  const std::string path = (popper::build_root() / "gemm" / "hand_gemm_ptxas.log").string();
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing " << path << " (built by target popper_gemm_ptxas_log)";
  std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Mutants (inputs): a kernel built with a tile that needs 300 registers, or one that spills.
  if (popper::mutant::active("ptxas-log-over-limit"))
    log = std::regex_replace(log, std::regex(R"(Used \d+ registers)"), "Used 300 registers");
  if (popper::mutant::active("ptxas-log-spills"))
    log = std::regex_replace(log, std::regex(R"(\b0 bytes spill stores)"), "8 bytes spill stores");
  // Every kernel entry of the log (each instantiation of both hand kernels).
  const auto all = [&](const char* pattern) {
    std::vector<long> out;
    const std::regex re(pattern);
    for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator(); ++it)
      out.push_back(std::stol((*it)[1]));
    return out;
  };
  const auto registers = all(R"(Used (\d+) registers)"), smem = all(R"((\d+) bytes smem)"),
             spills = all(R"((\d+) bytes spill stores)");
  ASSERT_GE(registers.size(), static_cast<std::size_t>(p.integer("min_kernels")))
      << "fewer kernel entries than the hand kernels' instantiations:\n"
      << log;
  for (const long r : registers) EXPECT_LE(r, p.integer("max_registers")) << log;
  for (const long r : registers) EXPECT_GT(r, 0) << log;
  for (const long b : smem) EXPECT_LE(b, p.integer("max_smem_bytes")) << log;
  for (const long b : spills) EXPECT_EQ(b, 0) << "a hand kernel spills registers to local memory:\n" << log;
  ::testing::Test::RecordProperty("kernels", static_cast<int>(registers.size()));
  ::testing::Test::RecordProperty("max_registers",
                                  static_cast<int>(*std::max_element(registers.begin(), registers.end())));
  ::testing::Test::RecordProperty("max_smem_bytes",
                                  smem.empty() ? 0 : static_cast<int>(*std::max_element(smem.begin(), smem.end())));
});

// Mutant: a multi-threaded run that splits the k reduction in two halves
// (C = alpha A1 B1 + beta C, then C += alpha A2 B2): same value, other rounding.
void split_k_gemm(const GemmShape& s, double alpha, const std::vector<double>& a, const std::vector<double>& b,
                  double beta, std::vector<double>& c, int threads) {
  const std::int64_t k1 = s.k / 2;
  GemmShape s1 = s, s2 = s;
  s1.k = k1;
  s2.k = s.k - k1;
  // op(A) = A (NoTrans) and op(B) = B^T (Trans): columns of A and of B's rows at offset k1.
  const bool row = s.layout == Layout::RowMajor;
  const std::size_t a_off = static_cast<std::size_t>(row ? k1 : k1 * s.lda);
  const std::size_t b_off = static_cast<std::size_t>(row ? k1 : k1 * s.ldb);
  cpu::gemm(s1, alpha, std::span<const double>(a), std::span<const double>(b), beta, std::span<double>(c),
            {threads, cpu::Isa::Auto});
  cpu::gemm(s2, alpha, std::span<const double>(a).subspan(a_off), std::span<const double>(b).subspan(b_off), 1.0,
            std::span<double>(c), {threads, cpu::Isa::Auto});
}

POPPER_FALSIFIER("FALSIFY-GEMM-012", [](const popper::Params& p) {
  std::mt19937_64 rng(p.seed());
  const bool split_k = popper::mutant::active("gemm-split-k-across-threads");
  for (const auto layout : kLayouts)
    for (const auto& d : shape_list(p)) {
      const GemmShape s = padded(layout, Op::NoTrans, Op::Trans, d.m, d.n, d.k, 2);
      const Operands<double> o = random_operands<double>(s, rng);
      std::vector<double> one = o.c;
      cpu::gemm(s, 1.25, o.a, o.b, 0.5, one, {1, cpu::Isa::Auto});
      for (const auto t : p.integers("threads"))
        for (const auto sharing : b_sharings(t)) {
          const ScopedThreadedRun scope(sharing);
          std::vector<double> many = o.c;
          if (split_k) split_k_gemm(s, 1.25, o.a, o.b, 0.5, many, static_cast<int>(t));
          else cpu::gemm(s, 1.25, o.a, o.b, 0.5, many, {static_cast<int>(t), cpu::Isa::Auto});
          EXPECT_EQ(0, std::memcmp(one.data(), many.data(), one.size() * sizeof(double)))
              << "threads " << t << to_string(sharing) << " differ from threads 1: " << describe(s);
        }
    }
  if (!::testing::Test::HasFailure()) record_cpu_path(cpu::Isa::Auto);
});

POPPER_FALSIFIER("FALSIFY-GEMM-015", [](const popper::Params& p) {
  const double factor = p.number("tol_factor");
  const std::int64_t batch = p.integer("batch");
  cuda::CublasContext ctx;
  ASSERT_TRUE(ctx.on_device());
  std::mt19937_64 rng(13);
  for (const auto layout : kLayouts)
    for (const auto op_a : kOps)
      for (const auto op_b : kOps)
        for (const auto& d : shape_list(p)) {
          const GemmShape s = padded(layout, op_a, op_b, d.m, d.n, d.k, 1);
          const Operands<float> o = random_operands<float>(s, rng);
          const auto absprod = abs_product(o);
          const auto ref = reference_result(o, 0.5f, -1.0f);
          std::vector<float> c = o.c;
          const auto backend = ctx.gemm_f32(s, 0.5f, o.a, o.b, -1.0f, c);
          record_cuda_entry(backend);
          ASSERT_EQ(backend, cuda::Backend::Cuda);
          Verdict v = check_result<float>(s, c, ref, o.c, absprod, 0.5, -1.0, factor);
          EXPECT_TRUE(v.ok) << "cuBLAS: " << v.message;
          c = o.c;
          ASSERT_EQ(cuda::hand_gemm_f32(s, 0.5f, o.a, o.b, -1.0f, c), cuda::Backend::Cuda);
          v = check_result<float>(s, c, ref, o.c, absprod, 0.5, -1.0, factor);
          EXPECT_TRUE(v.ok) << "hand CUDA kernel: " << v.message;
          // Batch of identical problems: each slice equals the reference.
          const auto sa = static_cast<std::int64_t>(o.a.size()), sb = static_cast<std::int64_t>(o.b.size()),
                     sc = static_cast<std::int64_t>(o.c.size());
          std::vector<float> ba, bb, bc;
          for (std::int64_t i = 0; i < batch; ++i) {
            ba.insert(ba.end(), o.a.begin(), o.a.end());
            bb.insert(bb.end(), o.b.begin(), o.b.end());
            bc.insert(bc.end(), o.c.begin(), o.c.end());
          }
          ASSERT_EQ(ctx.gemm_f32_strided_batched(s, {batch, sa, sb, sc}, 0.5f, ba, bb, -1.0f, bc), cuda::Backend::Cuda);
          for (std::int64_t i = 0; i < batch; ++i) {
            const std::span<const float> slice(bc.data() + i * sc, static_cast<std::size_t>(sc));
            v = check_result<float>(s, slice, ref, o.c, absprod, 0.5, -1.0, factor);
            EXPECT_TRUE(v.ok) << "strided batched slice " << i << ": " << v.message;
          }
        }
});

}  // namespace
