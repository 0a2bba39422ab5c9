// Q4_K format: KANI-Q4K-001 (every 6-bit scale/min pattern dequantizes per
// the format on the reference and every hand ISA), KANI-Q4K-002 (FP16
// conversions against the hardware), KANI-Q4K-003 and FALSIFY-Q4K-006
// (argument checks before any memory access), and the `ggml` capability.
#include <gtest/gtest.h>
#include <cpuid.h>
#include <immintrin.h>
#include <rapidcheck.h>

#include <functional>
#include <limits>

#include "impl/accum/accum.hpp"
#include "popper/binding.hpp"
#include "impl/q4k/device_q4k.hpp"
#include "impl/q4k/lib_ggml.hpp"
#include "impl/q4k/reference.hpp"
#include "support.hpp"

namespace {

using namespace popper::q4k;
using namespace popper::q4k::testing;
using popper::cpu::Isa;

// ggml is available when popper was built with it and a CPU backend loads.
POPPER_CAPABILITY("ggml", [] {
  const auto& s = ggml::status();
  return popper::CapabilityStatus{s.usable(), s.usable() ? "" : s.reason};
});

POPPER_HARNESS("KANI-Q4K-001", [](const popper::Params& p) {
  const int bound = static_cast<int>(p.bound());
  const auto dv = p.numbers("d_values"), mv = p.numbers("dmin_values");
  ASSERT_EQ(dv.size(), mv.size()) << "d_values and dmin_values are zipped pairwise";
  std::size_t checked = 0;
  for (std::size_t pair = 0; pair < dv.size(); ++pair) {
    const std::uint16_t d = float_to_fp16(static_cast<float>(dv[pair])),
                        dmin = float_to_fp16(static_cast<float>(mv[pair]));
    for (int j = 0; j < kSubBlocks; ++j) {
      std::vector<Block> blocks;
      std::vector<float> expect;
      for (int sc = 0; sc < bound; ++sc)
        for (int m = 0; m < bound; ++m) {
          const PatternBlock pb = pattern_block(d, dmin, j, sc, m);
          blocks.push_back(pb.block);
          for (int i = 0; i < kBlockWeights; ++i) expect.push_back(spec_weight(pb, i));
        }
      std::vector<float> got(expect.size());
      reference::dequantize_row(blocks, got);
      popper::record_backend("reference");
      const std::size_t at = first_difference(got, expect);
      ASSERT_EQ(at, expect.size()) << "reference: d=" << dv[pair] << " dmin=" << mv[pair] << " sub-block " << j
                                   << " pattern " << at / kBlockWeights << " weight " << at % kBlockWeights << ": got "
                                   << got[at] << " expected " << expect[at];
      for (Isa isa : isas_under_test()) {
        std::fill(got.begin(), got.end(), 0.0f);
        cpu::dequantize_row(blocks, got, isa);
        record_cpu(isa);
        const std::size_t k = first_difference(got, expect);
        ASSERT_EQ(k, expect.size()) << "cpu::dequantize_row isa " << popper::cpu::to_string(isa) << ": sub-block " << j
                                    << " pattern " << k / kBlockWeights << " weight " << k % kBlockWeights << ": got "
                                    << got[k] << " expected " << expect[k];
      }
      checked += blocks.size();
    }
  }
  std::printf(
      "[KANI-Q4K-001] %zu blocks (8 sub-block positions x %d x %d scale/min patterns x %zu (d, dmin) pairs) "
      "bit-exact on the reference and %zu hand ISA(s)\n",
      checked, bound, bound, dv.size(), isas_under_test().size());
});

// The hardware conversions (F16C) as the oracle.
__attribute__((target("f16c"))) float hw_half_to_float(std::uint16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) std::uint16_t hw_float_to_half(float f) {
  // vcvtps2ph on one lane: clang's _cvtss_sh is a compound literal, which C++ lacks.
  const __m128i h = _mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return static_cast<std::uint16_t>(_mm_extract_epi16(h, 0));
}

POPPER_HARNESS("KANI-Q4K-002", [](const popper::Params& p) {
  // CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports has no "f16c").
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & bit_F16C))
    GTEST_SKIP() << "the CPU has no F16C to compare against";
  const auto n = static_cast<std::uint32_t>(p.bound());
  for (std::uint32_t h = 0; h < n; ++h) {
    const float mine = fp16_to_float(static_cast<std::uint16_t>(h)),
                hw = hw_half_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(hw)) {
      ASSERT_TRUE(std::isnan(mine)) << "half 0x" << std::hex << h << " is NaN but converts to " << mine;
      continue;
    }
    ASSERT_EQ(std::bit_cast<std::uint32_t>(mine), std::bit_cast<std::uint32_t>(hw)) << "half 0x" << std::hex << h;
  }
  // float -> half: every upper 16 bits with low halves at and around the rounding boundaries.
  const std::uint32_t lows[] = {0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x2FFF,
                                0x3000, 0x3001, 0x7FFF, 0xE000, 0xF000, 0xFFFF};
  std::size_t checked = 0;
  for (std::uint32_t hi = 0; hi < n; ++hi)
    for (std::uint32_t lo : lows) {
      const float f = std::bit_cast<float>(hi << 16 | lo);
      const std::uint16_t hw = hw_float_to_half(f), mine = float_to_fp16(f);
      ++checked;
      if (std::isnan(f)) {
        ASSERT_EQ(mine & 0x7C00, 0x7C00) << "NaN must stay NaN";
        ASSERT_NE(mine & 0x03FF, 0) << "NaN must stay NaN";
        continue;
      }
      ASSERT_EQ(mine, hw) << "float bits 0x" << std::hex << (hi << 16 | lo) << " (" << f << ")";
    }
  popper::record_backend("reference");
  std::printf("[KANI-Q4K-002] %u half patterns and %zu floats around every rounding boundary match F16C\n", n, checked);
});

POPPER_HARNESS("KANI-Q4K-003", [](const popper::Params& p) {
  const std::int64_t max_rows = p.bound();
  std::size_t cases = 0;
  for (std::int64_t rows = 0; rows <= max_rows; ++rows)
    for (std::int64_t cols : {0, 128, 256, 512, 768}) {
      const bool bad_cols = cols % kBlockWeights != 0;
      const std::int64_t need_w = bad_cols ? 0 : rows * (cols / kBlockWeights);
      for (std::int64_t w = std::max<std::int64_t>(0, need_w - 2); w <= need_w + 1; ++w)
        for (std::int64_t x = std::max<std::int64_t>(0, cols - 2); x <= cols + 1; ++x)
          for (std::int64_t y = std::max<std::int64_t>(0, rows - 2); y <= rows + 1; ++y) {
            ++cases;
            const auto call = [&] {
              check_gemv_args(rows, cols, static_cast<std::size_t>(w), static_cast<std::size_t>(x),
                              static_cast<std::size_t>(y));
            };
            if (bad_cols) {
              EXPECT_THROW(call(), popper::InvalidArgument) << "cols " << cols;
              continue;
            }
            const char* expect = w < need_w ? "W" : x < cols ? "x" : y < rows ? "y" : nullptr;
            if (!expect) {
              EXPECT_NO_THROW(call()) << "rows " << rows << " cols " << cols << " w " << w << " x " << x << " y " << y;
              continue;
            }
            try {
              call();
              ADD_FAILURE() << "accepted short " << expect << ": rows " << rows << " cols " << cols << " w " << w
                            << " x " << x << " y " << y;
            } catch (const popper::BufferTooSmall& e) {
              EXPECT_EQ(e.operand(), expect);
            }
          }
    }
  EXPECT_THROW(check_gemv_args(-1, 256, 0, 256, 0), popper::InvalidArgument);
  EXPECT_THROW(check_gemv_args(1, -256, 0, 0, 1), popper::InvalidArgument);
  popper::record_backend("reference");
  std::printf("[KANI-Q4K-003] %zu (rows, cols, |W|, |x|, |y|) cases\n", cases);
});

// FALSIFY-Q4K-006: every entry, one short buffer at a time.
POPPER_FALSIFIER("FALSIFY-Q4K-006", [](const popper::Params&) {
  const bool ok = rc::check("every Q4_K entry rejects a short buffer before touching memory", [] {
    const auto rows = *rc::gen::inRange<std::int64_t>(0, 9);
    const auto cols = *rc::gen::element<std::int64_t>(0, 256, 512, 1024, 300);
    const int which = *rc::gen::inRange(0, 3);  // 0: W, 1: x, 2: y
    const auto shrink = *rc::gen::inRange<std::int64_t>(1, 4);
    const bool bad_cols = cols % kBlockWeights != 0;
    const std::int64_t need_w = bad_cols ? 0 : rows * (cols / kBlockWeights);
    const std::int64_t need[3] = {need_w, cols, rows};
    std::int64_t len[3] = {need_w, cols, rows};
    if (!bad_cols) {
      RC_PRE(need[which] > 0);
      len[which] = std::max<std::int64_t>(0, need[which] - shrink);
    }
    std::vector<Block> w(static_cast<std::size_t>(len[0]));
    for (auto& b : w) b = Block{float_to_fp16(0.5f), float_to_fp16(0.25f), {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {}};
    std::vector<float> x(static_cast<std::size_t>(len[1]), 1.0f);
    std::vector<float> y(static_cast<std::size_t>(len[2]) + 4, -7.0f);
    std::vector<double> yd(y.size(), -7.0);
    const std::vector<float> y0 = y;
    const std::span<float> ys(y.data(), static_cast<std::size_t>(len[2]));
    const std::span<double> yds(yd.data(), static_cast<std::size_t>(len[2]));
    const char* names[3] = {"W", "x", "y"};
    std::vector<std::pair<const char*, std::function<void()>>> entries = {
        {"reference::gemv", [&] { reference::gemv(w, rows, cols, x, yds); }},
        {"cpu::gemv", [&] { cpu::gemv(w, rows, cols, x, ys); }},
        {"cpu::PackedWeights + gemv", [&] { cpu::gemv(cpu::PackedWeights(w, rows, cols), x, ys); }},
        {"gemv_vulkan", [&] { gemv_vulkan(w, rows, cols, x, ys); }},
        {"gemv_cuda", [&] { gemv_cuda(w, rows, cols, x, ys); }},
        {"VulkanMatrix", [&] { VulkanMatrix(w, rows, cols).gemv(x, ys); }},
        {"accum::gemv_q4k", [&] { popper::accum::gemv_q4k(w, rows, cols, x, ys, popper::accum::Order::Warp32); }},
    };
    for (auto& [name, fn] : entries) {
      try {
        fn();
        RC_FAIL(std::string(name) + " accepted a short " + names[which] + " (rows " + std::to_string(rows) + ", cols " +
                std::to_string(cols) + ")");
      } catch (const popper::BufferTooSmall& e) {
        RC_ASSERT(!bad_cols);
        RC_ASSERT(e.operand() == std::string(names[which]));
        RC_ASSERT(e.required() == static_cast<std::size_t>(need[which]));
        RC_ASSERT(e.actual() == static_cast<std::size_t>(len[which]));
      } catch (const popper::InvalidArgument&) {
        RC_ASSERT(bad_cols);
      }
      RC_ASSERT(std::memcmp(y.data(), y0.data(), y.size() * sizeof(float)) == 0);
    }
    // Row entries: a row of n values needs n / 256 blocks.
    if (which == 0 && !bad_cols && cols > 0) {
      std::vector<float> out(static_cast<std::size_t>(cols) *
                             static_cast<std::size_t>(std::max<std::int64_t>(rows, 1)));
      std::vector<Block> few(out.size() / kBlockWeights - 1);
      RC_ASSERT_THROWS_AS(reference::dequantize_row(few, out), popper::BufferTooSmall);
      RC_ASSERT_THROWS_AS(cpu::dequantize_row(few, out), popper::BufferTooSmall);
      RC_ASSERT_THROWS_AS(reference::quantize_row(out, few), popper::BufferTooSmall);
    }
  });
  EXPECT_TRUE(ok);
  popper::record_backend("reference");
});

}  // namespace
