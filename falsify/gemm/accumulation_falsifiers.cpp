// FALSIFY-GEMM-006: FP32 accumulation over k = 4096 within f * gamma_{k+2},
// and exact on exactly representable inputs; FALSIFY-GEMM-007 (device): the
// FP16 GEMM accumulates in FP32.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "impl/gemm/cpu_gemm.hpp"
#include "impl/gemm/cuda_gemm.hpp"
#include "impl/gemm/lib_blas.hpp"
#include "testbed.hpp"
#include "popper/binding.hpp"

namespace {

using namespace popper::gemm;
using namespace popper::gemm::testbed;

// Largest |C - C_ref| / (|A||B|) over the matrix (row-major, beta = 0).
double max_rel(const std::vector<float>& c, const std::vector<float>& ref, const std::vector<double>& absprod) {
  double worst = 0.0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const double e = std::fabs(static_cast<double>(c[i]) - static_cast<double>(ref[i]));
    worst = std::max(worst, absprod[i] > 0 ? e / absprod[i] : (e > 0 ? INFINITY : 0.0));
  }
  return worst;
}

// Entries j/16 with integer j in [-8, 8]: every product is a multiple of 2^-8
// and every partial sum over k = 4096 has |s| <= 4096/4 = 2^10, so it needs at
// most 18 significant bits: FP32 (24 bits) holds every partial sum exactly in
// any summation order, and the only correct FP32 result is the exact one.
// A dropped term shows as an error of at least 2^-8 where that term is
// nonzero; an accumulator narrower than 18 bits (FP16: 11) shows as well.
std::vector<float> exact_entries(std::size_t n, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> d(-8, 8);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(d(rng)) / 16.0f;
  return v;
}

POPPER_FALSIFIER("FALSIFY-GEMM-006", [](const popper::Params& p) {
  const double factor = p.number("tol_factor");
  const std::int64_t m = p.integer("m"), n = p.integer("n"), k = p.integer("k");
  std::mt19937_64 rng(p.seed());
  const GemmShape s = with_tight_ld({Layout::RowMajor, Op::NoTrans, Op::NoTrans, m, n, k, 0, 0, 0});
  const Operands<float> o = random_operands<float>(s, rng, 0.0, 1.0);  // positive: no cancellation
  const auto absprod = abs_product(o);
  const auto ref = reference_result(o, 1.0f, 0.0f);
  const double bound = factor * gamma(k + 2, unit_roundoff<float>());

  // Naive sequential FP32 dot products: the textbook recursive summation.
  std::vector<float> naive(o.c.size());
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (std::int64_t q = 0; q < k; ++q)
        acc += o.a[static_cast<std::size_t>(i * k + q)] * o.b[static_cast<std::size_t>(q * n + j)];
      naive[static_cast<std::size_t>(i * n + j)] = acc;
    }
  // Mutant: the kernel's reduction drops the last of its k terms.
  std::vector<float> a_kernel = o.a;
  if (popper::mutant::active("gemm-drop-k-term"))
    for (std::int64_t i = 0; i < m; ++i) a_kernel[static_cast<std::size_t>(i * k + k - 1)] = 0.0f;
  std::vector<float> blas_c(o.c.size()), hand_c(o.c.size());
  const BlasHandle blas;
  blas.gemm(s, 1.0f, o.a, o.b, 0.0f, blas_c);
  const double r_naive = max_rel(naive, ref, absprod), r_blas = max_rel(blas_c, ref, absprod);
  EXPECT_LE(r_blas, bound) << "OpenBLAS FP32 at k = " << k;
  // Honest: the gamma bound holds for ANY summation order, so naive FP32
  // accumulation satisfies it too; the bound does not separate them.
  EXPECT_LE(r_naive, bound) << "naive FP32 summation exceeded the worst-case bound (would contradict Higham)";
  std::printf("[FALSIFY-GEMM-006] k=%lld bound f*gamma=%.3e  observed max rel err: naive %.3e  openblas %.3e",
              static_cast<long long>(k), bound, r_naive, r_blas);
  if (r_blas <= bound) popper::record_backend(openblas_tag(blas));
  std::map<cpu::Isa, bool> within;
  for (const auto isa : isas_to_test()) {
    cpu::gemm(s, 1.0f, a_kernel, o.b, 0.0f, hand_c, {1, isa});
    const double r = max_rel(hand_c, ref, absprod);
    EXPECT_LE(r, bound) << "cpu::gemm isa " << cpu::to_string(isa) << " at k = " << k;
    within[isa] = r <= bound;
    std::printf("  hand/%s %.3e", cpu::to_string(isa), r);
  }
  std::printf("\n");

  // Exactly representable inputs: every FP32 kernel must return the exact product.
  const std::vector<float> ea = exact_entries(o.a.size(), rng), eb = exact_entries(o.b.size(), rng);
  std::vector<float> ea_kernel = ea;
  if (popper::mutant::active("gemm-drop-k-term"))
    for (std::int64_t i = 0; i < m; ++i) ea_kernel[static_cast<std::size_t>(i * k + k - 1)] = 0.0f;
  const Operands<float> eo{s, ea, eb, std::vector<float>(o.c.size(), 0.0f)};
  const std::vector<float> exact = reference_result(eo, 1.0f, 0.0f);
  auto count_inexact = [&](const std::vector<float>& c) {
    std::size_t bad = 0;
    for (std::size_t i = 0; i < c.size(); ++i) bad += c[i] != exact[i];
    return bad;
  };
  std::vector<float> ec(o.c.size());
  blas.gemm(s, 1.0f, ea, eb, 0.0f, ec);
  EXPECT_EQ(count_inexact(ec), 0u) << "OpenBLAS is not exact on exactly representable inputs at k = " << k;
  for (const auto isa : isas_to_test()) {
    cpu::gemm(s, 1.0f, ea_kernel, eb, 0.0f, ec, {1, isa});
    const std::size_t bad = count_inexact(ec);
    EXPECT_EQ(bad, 0u) << "cpu::gemm isa " << cpu::to_string(isa) << ": " << bad << " of " << ec.size()
                       << " entries differ from the exact product (a dropped term or a narrow accumulator)";
    if (bad == 0 && within[isa]) record_cpu_path(isa);
  }
});

POPPER_FALSIFIER("FALSIFY-GEMM-007", [](const popper::Params& p) {
  const std::int64_t m = p.integer("m"), n = p.integer("n"), k = p.integer("k");
  cuda::CublasContext ctx;
  ASSERT_TRUE(ctx.on_device()) << "requires: [cuda] was met, yet the context declined";
  const GemmShape s = with_tight_ld({Layout::RowMajor, Op::NoTrans, Op::NoTrans, m, n, k, 0, 0, 0});
  const std::vector<cuda::half_bits> a(static_cast<std::size_t>(m * k), cuda::float_to_half(1.0f));
  const std::vector<cuda::half_bits> b(static_cast<std::size_t>(k * n), cuda::float_to_half(1.0f));
  std::vector<float> c(static_cast<std::size_t>(m * n), -1.0f);
  const auto backend = ctx.gemm_f16(s, 1.0f, a, b, 0.0f, c);
  record_cuda_entry(backend);
  ASSERT_EQ(backend, cuda::Backend::Cuda);
  for (const float v : c) ASSERT_EQ(v, static_cast<float>(k)) << "FP16 accumulation stalls at 2048; got " << v;

  // Random FP16 data: compare with the FP64 product of the rounded inputs.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<cuda::half_bits> ah(a.size()), bh(b.size());
  std::vector<float> af(a.size()), bf(b.size());
  for (std::size_t i = 0; i < ah.size(); ++i) af[i] = cuda::half_to_float(ah[i] = cuda::float_to_half(u(rng)));
  for (std::size_t i = 0; i < bh.size(); ++i) bf[i] = cuda::half_to_float(bh[i] = cuda::float_to_half(u(rng)));
  Operands<float> o{s, af, bf, std::vector<float>(c.size(), 0.0f)};
  const auto absprod = abs_product(o);
  const auto ref = reference_result(o, 1.0f, 0.0f);
  ASSERT_EQ(ctx.gemm_f16(s, 1.0f, ah, bh, 0.0f, c), cuda::Backend::Cuda);
  const Verdict v = check_result<float>(s, c, ref, o.c, absprod, 1.0, 0.0, 2.0);
  EXPECT_TRUE(v.ok) << v.message;
});

}  // namespace
