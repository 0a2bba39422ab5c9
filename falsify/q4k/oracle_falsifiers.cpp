// llama.cpp (ggml) as the Q4_K oracle: FALSIFY-Q4K-001 (bit-exact
// dequantization), FALSIFY-Q4K-002 (quantizer error beside ggml's reference
// quantizer), FALSIFY-Q4K-014 (hand GEMV error beside ggml's CPU mat-vec);
// and FALSIFY-Q4K-003 (the quantizer's input contract).
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <random>

#include "popper/binding.hpp"
#include "impl/q4k/cpu_q4k.hpp"
#include "impl/q4k/lib_ggml.hpp"
#include "impl/q4k/reference.hpp"
#include "support.hpp"
#include "testbed.hpp"

namespace {

using namespace popper::q4k;
using namespace popper::q4k::testing;
using popper::cpu::Isa;

POPPER_FALSIFIER("FALSIFY-Q4K-001", [](const popper::Params& p) {
  std::mt19937_64 rng(p.seed());
  std::vector<Block> blocks(static_cast<std::size_t>(p.integer("random_blocks")));
  for (auto& b : blocks) {
    auto* bytes = reinterpret_cast<std::uint8_t*>(&b);
    for (int i = 0; i < kBlockBytes; ++i) bytes[i] = static_cast<std::uint8_t>(rng());
    b.d = random_finite_fp16(rng);
    b.dmin = random_finite_fp16(rng);
  }
  // Then every harness pattern: 8 positions x 64 x 64 (sc, m), two (d, dmin) pairs.
  for (auto [d, dmin] : {std::pair{0.5f, 0.25f}, std::pair{-3.25f, 6.0e-8f}})
    for (int j = 0; j < kSubBlocks; ++j)
      for (int sc = 0; sc < 64; ++sc)
        for (int m = 0; m < 64; ++m)
          blocks.push_back(pattern_block(float_to_fp16(d), float_to_fp16(dmin), j, sc, m).block);
  const std::size_t n = blocks.size() * kBlockWeights;
  std::vector<float> oracle(n), mine(n);
  ggml::dequantize_row(blocks, oracle);
  popper::record_backend(ggml::cpu_backend_tag());
  reference::dequantize_row(blocks, mine);
  popper::record_backend("reference");
  std::size_t at = first_difference(mine, oracle);
  ASSERT_EQ(at, n) << "reference vs ggml dequantize_row_q4_K: block " << at / kBlockWeights << " weight "
                   << at % kBlockWeights << ": " << mine[at] << " vs " << oracle[at] << " (seed " << p.seed() << ")";
  for (Isa isa : isas_under_test()) {
    cpu::dequantize_row(blocks, mine, isa);
    record_cpu(isa);
    at = first_difference(mine, oracle);
    ASSERT_EQ(at, n) << "cpu::dequantize_row " << popper::cpu::to_string(isa) << " vs ggml: block "
                     << at / kBlockWeights << " weight " << at % kBlockWeights << ": " << mine[at] << " vs "
                     << oracle[at];
  }
  std::printf("[FALSIFY-Q4K-001] %zu blocks (%zu random + harness patterns) bit-identical to ggml %s\n", blocks.size(),
              static_cast<std::size_t>(p.integer("random_blocks")), ggml::status().version.c_str());
});

std::vector<float> sample(const std::string& dist, std::size_t n, std::mt19937_64& rng) {
  std::normal_distribution<double> g(0, 1);
  std::uniform_real_distribution<double> u(-1, 1);
  std::student_t_distribution<double> t3(3);
  std::vector<float> x(n);
  for (auto& v : x) {
    if (dist == "uniform") v = static_cast<float>(u(rng));
    else if (dist == "gaussian") v = static_cast<float>(g(rng));
    else if (dist == "outliers") v = static_cast<float>(g(rng) * (u(rng) > 0.96 ? 20 : 1));
    else if (dist == "positive") v = static_cast<float>(0.5 * (u(rng) + 1));
    else if (dist == "student3") v = static_cast<float>(t3(rng));
    else if (dist == "sparse") v = u(rng) > 0.6 ? static_cast<float>(g(rng)) : 0.0f;
    else throw popper::InvalidArgument("unknown distribution " + dist);
  }
  return x;
}

struct Errors {
  double rel_rms = 0, max_abs = 0;
};
Errors errors(const std::vector<float>& x, const std::vector<Block>& q) {
  std::vector<float> w(x.size());
  reference::dequantize_row(q, w);
  double se = 0, ss = 0;
  Errors e;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = double(w[i]) - x[i];
    se += d * d, ss += double(x[i]) * x[i];
    e.max_abs = std::max(e.max_abs, std::fabs(d));
  }
  e.rel_rms = ss > 0 ? std::sqrt(se / ss) : std::sqrt(se);
  return e;
}

POPPER_FALSIFIER("FALSIFY-Q4K-002", [](const popper::Params& p) {
  std::mt19937_64 rng(p.seed());
  const double max_ratio = p.number("max_rms_ratio");
  const std::size_t n = static_cast<std::size_t>(p.integer("blocks")) * kBlockWeights;
  std::printf(
      "[FALSIFY-Q4K-002] relative RMS (max abs) error, popper vs ggml quantize_row_q4_K_ref, %zu values each:\n", n);
  for (const auto& dist : p.strings("distributions")) {
    const auto x = sample(dist, n, rng);
    std::vector<Block> mine(n / kBlockWeights), theirs(n / kBlockWeights);
    reference::quantize_row(x, mine);
    ggml::quantize_row_ref(x, theirs);
    const Errors a = errors(x, mine), b = errors(x, theirs);
    const double ratio = a.rel_rms / b.rel_rms;
    std::printf("  %-9s popper %.5f (%.4f)  ggml %.5f (%.4f)  ratio %.4f\n", dist.c_str(), a.rel_rms, a.max_abs,
                b.rel_rms, b.max_abs, ratio);
    EXPECT_LE(ratio, max_ratio) << dist << ": popper's RMS error " << a.rel_rms << " vs ggml's " << b.rel_rms
                                << " (seed " << p.seed() << ")";
  }
  popper::record_backend("reference");
  popper::record_backend(ggml::cpu_backend_tag());
});

POPPER_FALSIFIER("FALSIFY-Q4K-003", [](const popper::Params& p) {
  const double max_mag = p.number("max_magnitude");
  const bool ok = rc::check("the quantizer represents finite rows and rejects non-finite ones", [&] {
    const int nb = *rc::gen::inRange(1, 9);
    const auto n = static_cast<std::size_t>(nb * kBlockWeights);
    std::vector<float> x(n);
    const int style = *rc::gen::inRange(0, 5);
    const double mag = std::pow(10.0, *rc::gen::inRange(-6, static_cast<int>(std::log10(max_mag)) + 1));
    const auto seed = *rc::gen::arbitrary<std::uint32_t>();
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    for (std::size_t i = 0; i < n; ++i) {
      switch (style) {
        case 0: x[i] = static_cast<float>(mag * u(rng)); break;                                 // signed
        case 1: x[i] = static_cast<float>(mag * std::fabs(u(rng))); break;                      // positive
        case 2: x[i] = 0.0f; break;                                                             // zeros
        case 3: x[i] = static_cast<float>(-mag); break;                                         // constant
        default: x[i] = static_cast<float>(i % 2 ? mag * u(rng) : 1e-3 * mag * u(rng)); break;  // mixed scales
      }
    }
    std::vector<Block> q(n / kBlockWeights);
    reference::quantize_row(x, q);
    std::vector<float> w(n);
    reference::dequantize_row(q, w);
    for (std::size_t j = 0; j < n; j += kSubBlockWeights) {
      float lo = 0, hi = x[j];
      for (std::size_t i = j; i < j + kSubBlockWeights; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
      const double step = (double(hi) - lo) / 15;
      for (std::size_t i = j; i < j + kSubBlockWeights; ++i) {
        RC_ASSERT(std::isfinite(w[i]));
        // Inside the sub-block's range, up to the 6-bit rounding of its scale and min (each at most 1/63 of the
        // block's largest magnitude) and FP32 rounding: catches a mis-scaled or mis-offset block.
        const double blockmax = [&] {
          double mx = 0;
          for (std::size_t k = (i / kBlockWeights) * kBlockWeights; k < (i / kBlockWeights + 1) * kBlockWeights; ++k)
            mx = std::max(mx, std::fabs(double(x[k])));
          return mx;
        }();
        // FP16 scales underflow below 2^-24: then a weight can be off by up to 63 * 15 * 2^-24 < 2^-14 absolutely.
        RC_ASSERT(std::fabs(double(w[i]) - x[i]) <= 15 * step + 2 * blockmax / 63 + 1e-6 * blockmax + 0x1p-14);
      }
    }
    // A NaN or Inf anywhere is rejected, naming its index, before `q` is touched.
    const auto bad_at = *rc::gen::inRange<std::size_t>(0, n);
    x[bad_at] = *rc::gen::element(std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                                  -std::numeric_limits<float>::infinity());
    const std::vector<Block> before = q;
    try {
      reference::quantize_row(x, q);
      RC_FAIL("a non-finite input at " + std::to_string(bad_at) + " was quantized");
    } catch (const popper::InvalidArgument& e) {
      RC_ASSERT(std::string(e.what()).find(std::to_string(bad_at)) != std::string::npos);
    }
    RC_ASSERT(std::memcmp(before.data(), q.data(), q.size() * sizeof(Block)) == 0);
  });
  EXPECT_TRUE(ok);
  popper::record_backend("reference");
});

POPPER_FALSIFIER("FALSIFY-Q4K-014", [](const popper::Params& p) {
  std::printf("[FALSIFY-Q4K-014] max_r |y - y_ref| / sum|w x|:\n");
  for (const auto& s : p.list("shapes")) {
    const auto rows = s.integer("rows"), cols = s.integer("cols");
    const auto prob = testbed::make_random_problem(rows, cols, p.seed());
    const auto stats = testbed::row_stats(prob);
    std::vector<float> y(static_cast<std::size_t>(rows));
    cpu::gemv(prob.w.blocks, rows, cols, prob.x, y);
    record_cpu(Isa::Auto);
    const double hand = testbed::scaled_error(y, stats);
    double ggml_err = 0;
    for (bool repack : {false, true}) {
      ggml::CpuMatVec mv(prob.w.blocks, rows, cols, 1, repack);
      mv.run(prob.x, y);
      popper::record_backend(mv.backend());
      const double e = testbed::scaled_error(y, stats);
      std::printf("  %lldx%lld %-22s %.3e   hand %.3e\n", static_cast<long long>(rows), static_cast<long long>(cols),
                  mv.backend().c_str(), e, hand);
      ggml_err = repack ? std::min(ggml_err, e) : e;
    }
    EXPECT_LE(hand, ggml_err) << rows << "x" << cols << ": the hand kernel is less accurate than ggml-cpu";
  }
});

}  // namespace
