// popper's own CUDA GEMM kernels on the device: FALSIFY-GEMM-016 (the SIMT
// FP32 kernel) and FALSIFY-GEMM-017 (the tensor-core kernel, FP16 and BF16
// inputs with FP32 accumulation). Every layout and transpose, shapes ragged
// against the 128 x 128 block tile and the k step, leading dimensions that
// allow 16-byte reads and ones that do not, a base address off by one
// element, and alpha/beta with beta = 0 over a C full of NaN. On sm_90 the
// tensor-core grid runs under both of its kernels (WMMA and wgmma).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "impl/common/device.hpp"
#include "impl/gemm/cuda_gemm.hpp"
#include "impl/gemm/reference.hpp"
#include "popper/binding.hpp"
#include "testbed.hpp"

namespace {

using namespace popper::gemm;
using namespace popper::gemm::testbed;

constexpr Layout kLayouts[] = {Layout::RowMajor, Layout::ColMajor};
constexpr Op kOps[] = {Op::NoTrans, Op::Trans};

// A non-blocking stream of the test's own (the device entries refuse the legacy one).
struct Stream {
  cuda::CublasContext ctx;  // owns one
  cuda::StreamHandle get() const { return ctx.stream(); }
};

// Operands with C = NaN where beta == 0 (the kernel must not read it).
Operands<float> operands(const GemmShape& s, double beta, std::mt19937_64& rng) {
  Operands<float> o = random_operands<float>(s, rng);
  if (beta == 0.0) std::fill(o.c.begin(), o.c.end(), std::numeric_limits<float>::quiet_NaN());
  return o;
}

// Runs `entry` on the device-resident copies of x (x.size() + 1 elements, the
// data from element 1: a base address that is not 16-byte aligned).
template <class T>
cuda::DeviceSpan<const T> offset_by_one(cuda::DeviceBuffer<T>& buf, const std::vector<T>& x, cuda::StreamHandle st) {
  std::vector<T> shifted(x.size() + 1);
  std::copy(x.begin(), x.end(), shifted.begin() + 1);
  buf.upload(shifted, st);
  return {buf.cspan().data + 1, x.size()};
}

// The sweep both kernels are judged over: every layout, op(A), op(B), shape,
// ld padding and (alpha, beta) of the params, body(s, ab) on each, stopping
// at the first fatal failure (an ASSERT in body).
template <class Body>
void for_each_case(const popper::Params& p, Body body) {
  for (const auto layout : kLayouts)
    for (const auto op_a : kOps)
      for (const auto op_b : kOps)
        for (const auto& d : shape_list(p))
          for (const auto pad : p.integers("ld_pads"))
            for (const auto& ab : alpha_beta_list(p)) {
              body(padded(layout, op_a, op_b, d.m, d.n, d.k, pad), ab);
              if (::testing::Test::HasFatalFailure()) return;
            }
}

POPPER_FALSIFIER("FALSIFY-GEMM-016", [](const popper::Params& p) {
  const double factor = p.number("tol_factor");
  std::mt19937_64 rng(p.seed());
  ASSERT_TRUE(popper::device::cuda_status().usable());
  for_each_case(p, [&](const GemmShape& s, const AlphaBeta& ab) {
    const Operands<float> o = operands(s, ab.beta, rng);
    const auto ref = reference_result(o, static_cast<float>(ab.alpha), static_cast<float>(ab.beta));
    std::vector<float> c = o.c;
    const auto ran = cuda::hand_gemm_f32(s, static_cast<float>(ab.alpha), o.a, o.b, static_cast<float>(ab.beta), c);
    record_cuda_entry(ran);
    ASSERT_EQ(ran, cuda::Backend::Cuda);
    const Verdict v = check_result<float>(s, c, ref, o.c, abs_product(o), ab.alpha, ab.beta, factor);
    EXPECT_TRUE(v.ok) << "hand_gemm_f32: " << v.message;
  });
  if (::testing::Test::HasFatalFailure()) return;
  // Device-resident operands on a stream of the caller's, A and B at unaligned addresses.
  const Stream st;
  for (const auto& d : shape_list(p)) {
    const GemmShape s = padded(Layout::RowMajor, Op::NoTrans, Op::Trans, d.m, d.n, d.k, 0);
    const Operands<float> o = operands(s, 0.5, rng);
    const auto ref = reference_result(o, 1.5f, 0.5f);
    cuda::DeviceBuffer<float> da(o.a.size() + 1), db(o.b.size() + 1), dc(o.c.size());
    dc.upload(o.c, st.get());
    cuda::hand_gemm_f32_device(s, 1.5f, offset_by_one(da, o.a, st.get()), offset_by_one(db, o.b, st.get()), 0.5f,
                               dc.span(), st.get());
    std::vector<float> c(o.c.size());
    dc.download(c, st.get());
    const Verdict v = check_result<float>(s, c, ref, o.c, abs_product(o), 1.5, 0.5, factor);
    EXPECT_TRUE(v.ok) << "hand_gemm_f32_device, unaligned A and B: " << v.message;
  }
});

// The tensor-core kernel on inputs rounded to T: the reference is the exact
// product of the rounded inputs (FP64 accumulation), the bound the FP32 one
// with u doubled for the tensor cores' truncating alignment: gamma_{k+2}(2u).
template <class Bits>
void check_tensor_cores(const popper::Params& p, const char* name, Bits (*narrow)(float), float (*widen)(Bits),
                        cuda::Backend (*entry)(const GemmShape&, float, std::span<const Bits>, std::span<const Bits>,
                                               float, std::span<float>),
                        std::mt19937_64& rng) {
  const double factor = p.number("tol_factor");
  for_each_case(p, [&](const GemmShape& s, const AlphaBeta& ab) {
    Operands<float> o = operands(s, ab.beta, rng);
    std::vector<Bits> a(o.a.size()), b(o.b.size());
    for (std::size_t i = 0; i < a.size(); ++i) o.a[i] = widen(a[i] = narrow(o.a[i]));
    for (std::size_t i = 0; i < b.size(); ++i) o.b[i] = widen(b[i] = narrow(o.b[i]));
    const auto ref = reference_result(o, static_cast<float>(ab.alpha), static_cast<float>(ab.beta));
    std::vector<float> c = o.c;
    const auto ran = entry(s, static_cast<float>(ab.alpha), a, b, static_cast<float>(ab.beta), c);
    record_cuda_entry(ran);
    ASSERT_EQ(ran, cuda::Backend::Cuda);
    const double tc = factor * gamma(s.k + 2, 2 * unit_roundoff<float>()) / gamma(s.k + 2, unit_roundoff<float>());
    const Verdict v = check_result<float>(s, c, ref, o.c, abs_product(o), ab.alpha, ab.beta, tc);
    EXPECT_TRUE(v.ok) << name << ": " << v.message;
  });
  if (::testing::Test::HasFatalFailure()) return;
  // Exactly representable data: entries j/16, |j| <= 8, are exact in FP16 and
  // BF16; every partial sum is a multiple of 2^-8 below k/4 in magnitude, 18
  // significant bits, so an FP32 accumulator of any order returns the exact
  // product. A narrower accumulator or output (FP16, BF16) does not.
  const auto e = shape_list(p, "exact_shape").at(0);
  const GemmShape s = padded(Layout::RowMajor, Op::NoTrans, Op::Trans, e.m, e.n, e.k, 0);
  std::uniform_int_distribution<int> j(-8, 8);
  Operands<float> o{s, std::vector<float>(a_elements(s)), std::vector<float>(b_elements(s)),
                    std::vector<float>(c_elements(s))};
  std::vector<Bits> a(o.a.size()), b(o.b.size());
  for (std::size_t i = 0; i < a.size(); ++i) o.a[i] = widen(a[i] = narrow(static_cast<float>(j(rng)) / 16));
  for (std::size_t i = 0; i < b.size(); ++i) o.b[i] = widen(b[i] = narrow(static_cast<float>(j(rng)) / 16));
  std::vector<double> ad(o.a.begin(), o.a.end()), bd(o.b.begin(), o.b.end()), exact(o.c.size(), 0.0);
  reference::gemm<double>(s, 1.0, ad, bd, 0.0, exact);
  std::vector<float> c(o.c.size(), 0.0f);
  ASSERT_EQ(entry(s, 1.0f, a, b, 0.0f, c), cuda::Backend::Cuda);
  for (std::size_t i = 0; i < c.size(); ++i)
    ASSERT_EQ(static_cast<double>(c[i]), exact[i])
        << name << ": exact data, element " << i << " not exact (k = " << s.k << ")";
}

// POPPER_CUDA_TC_KERNEL set to `value` for the guard's life, then restored.
class TcKernelOverride {
 public:
  explicit TcKernelOverride(const char* value) {
    if (const char* v = std::getenv(kName)) saved_ = v;
    ::setenv(kName, value, 1);
  }
  ~TcKernelOverride() { saved_ ? ::setenv(kName, saved_->c_str(), 1) : ::unsetenv(kName); }
  TcKernelOverride(const TcKernelOverride&) = delete;
  TcKernelOverride& operator=(const TcKernelOverride&) = delete;

 private:
  static constexpr const char* kName = "POPPER_CUDA_TC_KERNEL";
  std::optional<std::string> saved_;
};

POPPER_FALSIFIER("FALSIFY-GEMM-017", [](const popper::Params& p) {
  std::mt19937_64 rng(p.seed());
  ASSERT_TRUE(popper::device::cuda_status().usable());
  // Where the wgmma kernel runs (sm_90), the whole grid under each kernel;
  // elsewhere under the WMMA kernel alone.
  const bool wgmma = cuda::hand_gemm_tc_wgmma_available();
  for (const char* kernel : {"wmma", "wgmma"}) {
    if (!wgmma && std::string_view(kernel) == "wgmma") continue;
    const TcKernelOverride use(kernel);
    const std::uint64_t before = cuda::hand_gemm_tc_wgmma_calls();
    const std::string f16 = std::string("hand_gemm_f16 (") + kernel + ")";
    const std::string bf16 = std::string("hand_gemm_bf16 (") + kernel + ")";
    check_tensor_cores<cuda::half_bits>(p, f16.c_str(), cuda::float_to_half, cuda::half_to_float, cuda::hand_gemm_f16,
                                        rng);
    if (::testing::Test::HasFatalFailure()) return;
    check_tensor_cores<cuda::bf16_bits>(p, bf16.c_str(), cuda::float_to_bf16, cuda::bf16_to_float, cuda::hand_gemm_bf16,
                                        rng);
    if (::testing::Test::HasFatalFailure()) return;
    const std::uint64_t took = cuda::hand_gemm_tc_wgmma_calls() - before;
    if (std::string_view(kernel) == "wgmma") EXPECT_GT(took, 0u) << "no call took the wgmma kernel";
    else EXPECT_EQ(took, 0u) << "POPPER_CUDA_TC_KERNEL=wmma, yet calls took the wgmma kernel";
  }
  // Device-resident operands at unaligned addresses: the guarded (non cp.async) copies.
  const Stream st;
  const auto d = shape_list(p).back();
  const GemmShape s = padded(Layout::ColMajor, Op::Trans, Op::NoTrans, d.m, d.n, d.k, 0);
  Operands<float> o = operands(s, 0.5, rng);
  std::vector<cuda::bf16_bits> a(o.a.size()), b(o.b.size());
  for (std::size_t i = 0; i < a.size(); ++i) o.a[i] = cuda::bf16_to_float(a[i] = cuda::float_to_bf16(o.a[i]));
  for (std::size_t i = 0; i < b.size(); ++i) o.b[i] = cuda::bf16_to_float(b[i] = cuda::float_to_bf16(o.b[i]));
  const auto ref = reference_result(o, 1.5f, 0.5f);
  cuda::DeviceBuffer<cuda::bf16_bits> da(a.size() + 1), db(b.size() + 1);
  cuda::DeviceBuffer<float> dc(o.c.size());
  dc.upload(o.c, st.get());
  cuda::hand_gemm_bf16_device(s, 1.5f, offset_by_one(da, a, st.get()), offset_by_one(db, b, st.get()), 0.5f, dc.span(),
                              st.get());
  std::vector<float> c(o.c.size());
  dc.download(c, st.get());
  const double tc =
      p.number("tol_factor") * gamma(s.k + 2, 2 * unit_roundoff<float>()) / gamma(s.k + 2, unit_roundoff<float>());
  const Verdict v = check_result<float>(s, c, ref, o.c, abs_product(o), 1.5, 0.5, tc);
  EXPECT_TRUE(v.ok) << "hand_gemm_bf16_device, unaligned A and B: " << v.message;
});

}  // namespace
