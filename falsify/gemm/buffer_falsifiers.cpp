// FALSIFY-GEMM-004 (every entry point rejects short buffers before touching
// memory), KANI-GEMM-001/002 (bounded exhaustive: the check accepts exactly
// the sufficient buffers; required_elements equals 1 + the largest offset).
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <functional>

#include "impl/gemm/cpu_gemm.hpp"
#include "impl/gemm/cuda_gemm.hpp"
#include "impl/gemm/lib_blas.hpp"
#include "testbed.hpp"
#include "popper/binding.hpp"

namespace {

using namespace popper::gemm;
using namespace popper::gemm::testbed;

// Independent footprint: one past the largest offset any element of a stored
// rows x cols matrix has, found by visiting every element (no closed formula).
std::size_t brute_footprint(Layout layout, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  std::size_t end = 0;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t off = layout == Layout::RowMajor ? r * ld + c : c * ld + r;
      end = std::max(end, static_cast<std::size_t>(off) + 1);
    }
  return end;
}

struct Need {
  std::size_t a, b, c;
};

// What the reference loop reads: A and B only when m, n, k are all positive.
Need brute_need(const GemmShape& s) {
  const bool reads_ab = s.m > 0 && s.n > 0 && s.k > 0;
  const std::int64_t ar = s.op_a == Op::NoTrans ? s.m : s.k, ac = s.op_a == Op::NoTrans ? s.k : s.m;
  const std::int64_t br = s.op_b == Op::NoTrans ? s.k : s.n, bc = s.op_b == Op::NoTrans ? s.n : s.k;
  return {reads_ab ? brute_footprint(s.layout, ar, ac, s.lda) : 0,
          reads_ab ? brute_footprint(s.layout, br, bc, s.ldb) : 0, brute_footprint(s.layout, s.m, s.n, s.ldc)};
}

// Every public entry point, as "call with these lengths" on real buffers.
struct Entry {
  std::string name;
  std::function<void(const GemmShape&, std::size_t, std::size_t, std::size_t, std::vector<float>&)> call;
};

std::vector<Entry> entries(const BlasHandle& blas) {
  auto f32 = [](auto fn) {
    return [fn](const GemmShape& s, std::size_t la, std::size_t lb, std::size_t lc, std::vector<float>& c) {
      const std::vector<float> a(la, 1.0f), b(lb, 1.0f);
      fn(s, std::span<const float>(a), std::span<const float>(b), std::span<float>(c.data(), lc));
    };
  };
  auto f64 = [](auto fn) {
    return [fn](const GemmShape& s, std::size_t la, std::size_t lb, std::size_t lc, std::vector<float>& c) {
      const std::vector<double> a(la, 1.0), b(lb, 1.0);
      std::vector<double> cd(c.begin(), c.end());
      fn(s, std::span<const double>(a), std::span<const double>(b), std::span<double>(cd.data(), lc));
      for (std::size_t i = 0; i < c.size(); ++i) c[i] = static_cast<float>(cd[i]);
    };
  };
  std::vector<Entry> out;
  out.push_back({"reference<float>",
                 f32([](auto& s, auto a, auto b, auto c) { reference::gemm<float>(s, 1.0f, a, b, 0.5f, c); })});
  out.push_back({"reference<double>",
                 f64([](auto& s, auto a, auto b, auto c) { reference::gemm<double>(s, 1.0, a, b, 0.5, c); })});
  out.push_back(
      {"BlasHandle f32", f32([&blas](auto& s, auto a, auto b, auto c) { blas.gemm(s, 1.0f, a, b, 0.5f, c); })});
  out.push_back({"BlasHandle f64", f64([&blas](auto& s, auto a, auto b, auto c) { blas.gemm(s, 1.0, a, b, 0.5, c); })});
  out.push_back({"cpu::gemm f32", f32([](auto& s, auto a, auto b, auto c) { cpu::gemm(s, 1.0f, a, b, 0.5f, c); })});
  out.push_back({"cpu::gemm f64", f64([](auto& s, auto a, auto b, auto c) { cpu::gemm(s, 1.0, a, b, 0.5, c); })});
  out.push_back({"cuda gemm_f32", f32([](auto& s, auto a, auto b, auto c) {
                   cuda::CublasContext ctx;
                   ctx.gemm_f32(s, 1.0f, a, b, 0.5f, c);
                 })});
  out.push_back({"cuda gemm_f32_strided_batched", f32([](auto& s, auto a, auto b, auto c) {
                   cuda::CublasContext ctx;
                   ctx.gemm_f32_strided_batched(s, cuda::BatchStrides{1, 0, 0, 0}, 1.0f, a, b, 0.5f, c);
                 })});
  out.push_back({"cuda hand_gemm_f32",
                 f32([](auto& s, auto a, auto b, auto c) { cuda::hand_gemm_f32(s, 1.0f, a, b, 0.5f, c); })});
  out.push_back(
      {"cuda gemm_f16", [](const GemmShape& s, std::size_t la, std::size_t lb, std::size_t lc, std::vector<float>& c) {
         const std::vector<cuda::half_bits> a(la, cuda::float_to_half(1.0f)), b(lb, cuda::float_to_half(1.0f));
         cuda::CublasContext ctx;
         ctx.gemm_f16(s, 1.0f, a, b, 0.5f, std::span<float>(c.data(), lc));
       }});
  const auto half_entry = [](auto narrow, auto entry) {
    return [narrow, entry](const GemmShape& s, std::size_t la, std::size_t lb, std::size_t lc, std::vector<float>& c) {
      const std::vector<std::uint16_t> a(la, narrow(1.0f)), b(lb, narrow(1.0f));
      entry(s, 1.0f, a, b, 0.5f, std::span<float>(c.data(), lc));
    };
  };
  out.push_back({"cuda hand_gemm_f16", half_entry(cuda::float_to_half, cuda::hand_gemm_f16)});
  out.push_back({"cuda hand_gemm_bf16", half_entry(cuda::float_to_bf16, cuda::hand_gemm_bf16)});
  // Device-span entries get null pointers: the check must fire before any use.
  out.push_back({"cuda gemm_f32_device",
                 [](const GemmShape& s, std::size_t la, std::size_t lb, std::size_t lc, std::vector<float>&) {
                   cuda::CublasContext ctx;
                   ctx.gemm_f32_device(s, 1.0f, {nullptr, la}, {nullptr, lb}, 0.5f, {nullptr, lc});
                 }});
  out.push_back({"cuda hand_gemm_f32_device",
                 [](const GemmShape& s, std::size_t la, std::size_t lb, std::size_t lc, std::vector<float>&) {
                   cuda::hand_gemm_f32_device(s, 1.0f, {nullptr, la}, {nullptr, lb}, 0.5f, {nullptr, lc}, nullptr);
                 }});
  out.push_back({"cuda hand_gemm_f16_device",
                 [](const GemmShape& s, std::size_t la, std::size_t lb, std::size_t lc, std::vector<float>&) {
                   cuda::hand_gemm_f16_device(s, 1.0f, {nullptr, la}, {nullptr, lb}, 0.5f, {nullptr, lc}, nullptr);
                 }});
  out.push_back({"cuda hand_gemm_bf16_device",
                 [](const GemmShape& s, std::size_t la, std::size_t lb, std::size_t lc, std::vector<float>&) {
                   cuda::hand_gemm_bf16_device(s, 1.0f, {nullptr, la}, {nullptr, lb}, 0.5f, {nullptr, lc}, nullptr);
                 }});
  return out;
}

POPPER_FALSIFIER("FALSIFY-GEMM-004", [](const popper::Params& p) {
  const int max_dim = static_cast<int>(p.integer("max_dim"));
  const int max_pad = static_cast<int>(p.integer("max_pad"));
  const BlasHandle blas;  // restores the library's thread setting when the test ends
  const auto all = entries(blas);
  const bool ok = rc::check("short buffers are rejected before any access", [&] {
    const auto m = *rc::gen::inRange(1, max_dim + 1);
    const auto n = *rc::gen::inRange(1, max_dim + 1);
    const auto k = *rc::gen::inRange(1, max_dim + 1);
    const auto layout = *rc::gen::element(Layout::RowMajor, Layout::ColMajor);
    const auto op_a = *rc::gen::element(Op::NoTrans, Op::Trans);
    const auto op_b = *rc::gen::element(Op::NoTrans, Op::Trans);
    const auto pad = *rc::gen::inRange(0, max_pad + 1);
    const auto operand = *rc::gen::inRange(0, 3);
    const auto shrink = *rc::gen::inRange(1, 4);
    const GemmShape s = padded(layout, op_a, op_b, m, n, k, pad);
    const Need need = brute_need(s);
    std::size_t len[3] = {need.a, need.b, need.c};
    const std::size_t want = len[operand];
    len[operand] = want >= static_cast<std::size_t>(shrink) ? want - static_cast<std::size_t>(shrink) : 0;
    const char* name = operand == 0 ? "A" : operand == 1 ? "B" : "C";
    for (const auto& e : all) {
      std::vector<float> c(need.c);
      for (std::size_t i = 0; i < c.size(); ++i) c[i] = static_cast<float>(i) + 0.25f;  // sentinel
      const std::vector<float> before = c;
      try {
        e.call(s, len[0], len[1], len[2], c);
        RC_FAIL(e.name + ": accepted a short " + name + " buffer for " + describe(s));
      } catch (const popper::BufferTooSmall& ex) {
        RC_ASSERT(ex.operand() == std::string(name));
        RC_ASSERT(ex.required() == want);
        RC_ASSERT(ex.actual() == len[operand]);
      }
      RC_ASSERT(std::memcmp(c.data(), before.data(), c.size() * sizeof(float)) == 0);
    }
    // Invalid dimensions and leading dimensions are InvalidArgument, also first.
    for (const auto& e : all) {
      std::vector<float> c(need.c, 0.0f);
      GemmShape neg = s;
      neg.m = -1;
      RC_ASSERT_THROWS_AS(e.call(neg, need.a, need.b, need.c, c), popper::InvalidArgument);
      GemmShape short_ld = s;
      short_ld.ldc = (s.layout == Layout::RowMajor ? s.n : s.m) - 1;
      if (short_ld.ldc > 0) RC_ASSERT_THROWS_AS(e.call(short_ld, need.a, need.b, need.c, c), popper::InvalidArgument);
    }
  });
  EXPECT_TRUE(ok);
  if (ok) {  // the host entry points that refused (device entries check on the host before any device work)
    popper::record_backend("reference");
    popper::record_backend(openblas_tag(blas));
    record_cpu_path(cpu::Isa::Auto);
  }
});

// Buffer lengths enumerated for one operand: every length 0..bound, plus the
// boundary need-1, need, need+1 (need may exceed the bound).
std::vector<std::size_t> lengths_to_try(std::size_t need, std::size_t bound) {
  std::vector<std::size_t> out;
  for (std::size_t len = 0; len <= bound; ++len) out.push_back(len);
  for (std::size_t len = need > 0 ? need - 1 : 0; len <= need + 1; ++len)
    if (len > bound) out.push_back(len);
  return out;
}

POPPER_HARNESS("KANI-GEMM-001", [](const popper::Params& p) {
  const std::int64_t bound = p.bound();
  const std::int64_t max_pad = p.integer("max_ld_pad");
  std::uint64_t checked = 0, mismatches = 0;
  std::string first;
  for (std::int64_t m = 0; m <= bound; ++m)
    for (std::int64_t n = 0; n <= bound; ++n)
      for (std::int64_t k = 0; k <= bound; ++k)
        for (const auto layout : kLayouts)
          for (const auto op_a : kOps)
            for (const auto op_b : kOps)
              for (const std::int64_t pad : {std::int64_t{-1}, max_pad}) {
                // pad -1: leading dimensions left 0 ("tight", filled in by the check).
                const GemmShape s = pad < 0 ? GemmShape{layout, op_a, op_b, m, n, k, 0, 0, 0}
                                            : padded(layout, op_a, op_b, m, n, k, pad);
                const Need need = brute_need(with_tight_ld(s));
                const std::size_t needs[3] = {need.a, need.b, need.c};
                for (int operand = 0; operand < 3; ++operand)
                  for (const std::size_t len : lengths_to_try(needs[operand], static_cast<std::size_t>(bound))) {
                    std::size_t lens[3] = {need.a, need.b, need.c};
                    lens[operand] = len;
                    const bool sufficient = len >= needs[operand];
                    bool accepted = false, named_right = false;
                    try {
                      check_gemm_args(s, lens[0], lens[1], lens[2]);
                      accepted = true;
                    } catch (const popper::BufferTooSmall& e) {
                      named_right = e.operand() == std::string(operand == 0   ? "A"
                                                               : operand == 1 ? "B"
                                                                              : "C") &&
                                    e.required() == needs[operand] && e.actual() == len;
                    }
                    ++checked;
                    if (accepted != sufficient || (!accepted && !named_right)) {
                      if (mismatches++ == 0)
                        first = describe(s) + " operand " + std::to_string(operand) + " len " + std::to_string(len) +
                                " need " + std::to_string(needs[operand]);
                    }
                  }
                // A leading dimension one below tight is rejected as InvalidArgument.
                {
                  GemmShape bad = s;
                  bad.ldc = with_tight_ld(GemmShape{layout, op_a, op_b, m, n, k, 0, 0, 0}).ldc - 1;
                  if (bad.ldc >= 1) {
                    ++checked;
                    try {
                      check_gemm_args(bad, need.a, need.b, need.c + 100);
                      if (mismatches++ == 0) first = "accepted short ldc: " + describe(bad);
                    } catch (const popper::InvalidArgument&) {
                    }
                  }
                }
              }
  EXPECT_EQ(mismatches, 0u) << "first mismatch: " << first;
  EXPECT_GT(checked, 100000u) << "enumeration smaller than expected";
  ::testing::Test::RecordProperty("cases", static_cast<int>(checked));
});

POPPER_HARNESS("KANI-GEMM-002", [](const popper::Params& p) {
  const std::int64_t bound = p.bound();
  const std::int64_t max_pad = p.integer("max_ld_pad");
  std::uint64_t checked = 0;
  for (const auto layout : kLayouts)
    for (std::int64_t rows = 0; rows <= bound; ++rows)
      for (std::int64_t cols = 0; cols <= bound; ++cols) {
        const std::int64_t inner = layout == Layout::RowMajor ? cols : rows;
        for (std::int64_t ld = std::max<std::int64_t>(1, inner); ld <= std::max<std::int64_t>(1, inner) + max_pad;
             ++ld) {
          ASSERT_EQ(required_elements(layout, rows, cols, ld), brute_footprint(layout, rows, cols, ld))
              << layout_name(layout) << " rows=" << rows << " cols=" << cols << " ld=" << ld;
          ++checked;
        }
      }
  EXPECT_EQ(checked, static_cast<std::uint64_t>(2 * (bound + 1) * (bound + 1) * (max_pad + 1)));
});

}  // namespace
