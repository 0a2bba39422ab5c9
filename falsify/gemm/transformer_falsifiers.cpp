// FALSIFY-GEMM-005: row-major transformer GEMMs through transpose flags
// (forward Y = X W^T, backward dX = dY W, dW = dY^T X) with a negative
// control; FALSIFY-GEMM-013: hand kernel vs OpenBLAS on the bench shapes.
#include <gtest/gtest.h>

#include "impl/gemm/cpu_gemm.hpp"
#include "impl/gemm/cpu_gemm_blocking.hpp"
#include "impl/gemm/lib_blas.hpp"
#include "popper/binding.hpp"
#include "testbed.hpp"
#include "workloads/gemm/shapes.h"

namespace {

using namespace popper::gemm;
using namespace popper::gemm::testbed;

std::vector<float> random_vec(std::size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// One row-major product through flags, checked for BlasHandle and cpu::gemm.
// Returns the largest err/bound over both (for the negative control).
double product_ratio(const BlasHandle& blas, GemmShape s, const std::vector<float>& a, const std::vector<float>& b,
                     const std::vector<float>& ref_override_or_empty, double factor, const std::string& what,
                     bool expect_within) {
  s = with_tight_ld(s);
  // Mutant: the forward Y = X W^T is issued without its transpose flag.
  GemmShape call = s;
  if (expect_within && s.op_a == Op::NoTrans && s.op_b == Op::Trans && s.n == s.k &&
      popper::mutant::active("gemm-forward-without-transpose"))
    call.op_b = Op::NoTrans;
  Operands<float> o{s, a, b, std::vector<float>(c_elements(s), 0.0f)};
  const auto absprod = abs_product(o);
  const std::vector<float> ref =
      ref_override_or_empty.empty() ? reference_result(o, 1.0f, 0.0f) : ref_override_or_empty;
  double worst = 0.0;
  for (int impl = 0; impl < 2; ++impl) {
    std::vector<float> c(o.c.size(), 0.0f);
    if (impl == 0) {
      blas.gemm(call, 1.0f, o.a, o.b, 0.0f, c);
    } else {
      cpu::gemm(call, 1.0f, o.a, o.b, 0.0f, c, {2, cpu::Isa::Auto});
    }
    const Verdict v = check_result<float>(s, c, ref, o.c, absprod, 1.0, 0.0, factor);
    if (expect_within) {
      EXPECT_TRUE(v.ok) << what << (impl == 0 ? " [BlasHandle] " : " [cpu::gemm] ") << v.message;
      if (v.ok && impl == 0) popper::record_backend(openblas_tag(blas));
      if (v.ok && impl == 1) record_cpu_path(cpu::Isa::Auto);
    }
    worst = std::max(worst, v.worst_ratio);
  }
  return worst;
}

POPPER_FALSIFIER("FALSIFY-GEMM-005", [](const popper::Params& p) {
  const double factor = p.number("tol_factor");
  const std::int64_t scale = p.integer("scale");
  const std::int64_t tokens = p.integer("tokens") / scale;
  std::mt19937_64 rng(p.seed());
  const BlasHandle blas;
  int products = 0;
  bool control_done = false;
  for (const auto& layer : p.list("layers")) {
    const std::string name = layer.string("name");
    const std::int64_t in = layer.integer("in") / scale, out = layer.integer("out") / scale;
    const auto x = random_vec(static_cast<std::size_t>(tokens * in), rng);    // X  [tokens, in]
    const auto w = random_vec(static_cast<std::size_t>(out * in), rng);       // W  [out, in]
    const auto dy = random_vec(static_cast<std::size_t>(tokens * out), rng);  // dY [tokens, out]
    const auto L = Layout::RowMajor;
    // forward: Y = X W^T
    product_ratio(blas, {L, Op::NoTrans, Op::Trans, tokens, out, in, 0, 0, 0}, x, w, {}, factor,
                  name + " forward Y = X W^T", true);
    // backward data: dX = dY W
    product_ratio(blas, {L, Op::NoTrans, Op::NoTrans, tokens, in, out, 0, 0, 0}, dy, w, {}, factor,
                  name + " backward dX = dY W", true);
    // backward weight: dW = dY^T X
    product_ratio(blas, {L, Op::Trans, Op::NoTrans, out, in, tokens, 0, 0, 0}, dy, x, {}, factor,
                  name + " backward dW = dY^T X", true);
    products += 3;
    if (in == out && !control_done) {
      // Negative control: the forward with the wrong flag (X W instead of X W^T),
      // judged against the correct reference, must be far outside the bound.
      GemmShape right = with_tight_ld({L, Op::NoTrans, Op::Trans, tokens, out, in, 0, 0, 0});
      Operands<float> o{right, x, w, std::vector<float>(c_elements(right), 0.0f)};
      const auto ref = reference_result(o, 1.0f, 0.0f);
      const double ratio = product_ratio(blas, {L, Op::NoTrans, Op::NoTrans, tokens, out, in, 0, 0, 0}, x, w, ref,
                                         factor, name + " swapped op (negative control)", false);
      EXPECT_GT(ratio, p.number("negative_control_factor"))
          << "a wrong transpose flag went undetected on " << name << " (max err/bound " << ratio << ")";
      control_done = true;
    }
  }
  EXPECT_EQ(products, 21) << "expected 7 layers x 3 products";
  EXPECT_TRUE(control_done) << "no square layer for the negative control";
});

template <class T>
void agree_on_bench_shapes(const popper::Params& p, std::uint64_t offset) {
  const double factor = p.number("tol_factor");
  const int scale_full = static_cast<int>(p.integer("scale_full"));
  const int scale_full_k = static_cast<int>(p.integer("scale_full_k"));
  std::mt19937_64 rng(p.seed() + offset);
  const BlasHandle blas;
  // Some shape's k must span two KC blocks even with the largest KC any cache
  // can give (the upper clamp of the blocking), or the multi-block k path
  // goes untested on CPUs with a large L2.
  const std::size_t huge = std::size_t{1} << 30;
  std::int64_t k_max = 0;
  for (int i = 0; i < POPPER_GEMM_SHAPE_COUNT; ++i) {
    const auto& sh = POPPER_GEMM_SHAPES[i];
    const bool full = std::string(sh.set) == "full";
    const std::int64_t m = full ? sh.m / scale_full : sh.m, n = full ? sh.n / scale_full : sh.n,
                       k = full ? sh.k / scale_full_k : sh.k;
    k_max = std::max(k_max, k);
    const GemmShape s = with_tight_ld({Layout::RowMajor, Op::NoTrans, Op::NoTrans, m, n, k, 0, 0, 0});
    const Operands<T> o = random_operands<T>(s, rng);
    // |A||B| through the wrapper in double (fast; rounding is covered by the factor).
    std::vector<double> aa(o.a.size()), bb(o.b.size()), absprod(o.c.size());
    for (std::size_t j = 0; j < aa.size(); ++j) aa[j] = std::fabs(static_cast<double>(o.a[j]));
    for (std::size_t j = 0; j < bb.size(); ++j) bb[j] = std::fabs(static_cast<double>(o.b[j]));
    blas.gemm(s, 1.0, aa, bb, 0.0, absprod);
    std::vector<T> c_blas(o.c.size()), c_hand(o.c.size());
    blas.gemm(s, T(1), o.a, o.b, T(0), c_blas);
    cpu::gemm(s, T(1), o.a, o.b, T(0), c_hand);
    // Both are within f*gamma of the exact product, so within 2f*gamma of each other.
    const Verdict v = check_result<T>(s, c_hand, c_blas, o.c, absprod, 1.0, 0.0, 2.0 * factor);
    EXPECT_TRUE(v.ok) << sh.name << " (scaled " << m << "x" << n << "x" << k << "): " << v.message;
    if (v.ok) {
      record_cpu_path(cpu::Isa::Auto);
      popper::record_backend(openblas_tag(blas));
    }
  }
  const std::int64_t kc = cpu::blocking_for(1, 1, sizeof(T), {huge, huge, huge}, k_max).kc;
  EXPECT_GT(k_max, kc) << "no scaled shape spans two KC blocks (largest k " << k_max << ", KC " << kc
                       << " with the largest caches): lower params.scale_full_k";
}

POPPER_FALSIFIER("FALSIFY-GEMM-013", [](const popper::Params& p) {
  ASSERT_GT(POPPER_GEMM_SHAPE_COUNT, 0);
  agree_on_bench_shapes<float>(p, 0);
  agree_on_bench_shapes<double>(p, 1);
});

}  // namespace
