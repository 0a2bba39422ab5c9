// Q4_K GEMV: FALSIFY-Q4K-004 (hand kernel within the derived bound),
// FALSIFY-Q4K-005 (thread determinism), FALSIFY-Q4K-007 / 008 (Vulkan and
// CUDA compute the Warp32 order exactly), FALSIFY-Q4K-009 (decline contract).
#include <gtest/gtest.h>

#include "impl/accum/accum.hpp"
#include "impl/common/device.hpp"
#include "impl/common/vulkan_runtime.hpp"
#include "popper/binding.hpp"
#include "impl/q4k/cpu_q4k.hpp"
#include "impl/q4k/device_q4k.hpp"
#include "support.hpp"
#include "testbed.hpp"

namespace {

using namespace popper::q4k;
using namespace popper::q4k::testing;
using popper::cpu::Isa;
namespace tb = popper::q4k::testbed;

POPPER_FALSIFIER("FALSIFY-Q4K-004", [](const popper::Params& p) {
  const auto threads = p.integers("threads");
  std::printf("[FALSIFY-Q4K-004] worst |y - y_ref| / bound per shape and input:");
  for (const auto& s : p.list("shapes")) {
    const auto rows = s.integer("rows"), cols = s.integer("cols");
    for (auto kind : {tb::XKind::Uniform, tb::XKind::Adversarial}) {
      const auto prob = tb::make_problem(rows, cols, p.seed() + static_cast<std::uint64_t>(rows * 131 + cols), kind);
      const auto stats = tb::row_stats(prob);
      double worst = 0;
      for_each_cpu_path([&](Isa isa) {
        for (auto t : threads) {
          std::vector<float> y(static_cast<std::size_t>(rows), std::numeric_limits<float>::quiet_NaN());
          cpu::gemv(prob.w.blocks, rows, cols, prob.x, y, {static_cast<int>(t), isa});
          record_cpu(isa);
          const auto c = tb::compare(y, stats, [&](std::size_t k) { return tb::hand_bound(stats, k, cols); });
          worst = std::max(worst, c.worst_ratio);
          EXPECT_TRUE(c.ok) << rows << "x" << cols << (kind == tb::XKind::Uniform ? " uniform x" : " adversarial x")
                            << " isa " << path_name(isa) << " threads " << t << ": " << c.message << " (seed "
                            << p.seed() << ")";
        }
      });
      std::printf(" %lldx%lld/%s %.3f", static_cast<long long>(rows), static_cast<long long>(cols),
                  kind == tb::XKind::Uniform ? "uni" : "adv", worst);
    }
  }
  std::printf("\n");
  // rows = 0 is a no-op, y untouched.
  std::vector<float> y{1.5f};
  cpu::gemv({}, 0, 256, std::vector<float>(256, 1.0f), y);
  EXPECT_EQ(y[0], 1.5f);
});

POPPER_FALSIFIER("FALSIFY-Q4K-005", [](const popper::Params& p) {
  for (const auto& s : p.list("shapes")) {
    const auto rows = s.integer("rows"), cols = s.integer("cols");
    const auto prob = tb::make_problem(rows, cols, p.seed());
    for_each_cpu_path([&](Isa isa) {
      std::vector<float> one(static_cast<std::size_t>(rows));
      cpu::gemv(prob.w.blocks, rows, cols, prob.x, one, {1, isa});
      record_cpu(isa);
      for (auto t : p.integers("threads")) {
        std::vector<float> many(one.size());
        cpu::gemv(prob.w.blocks, rows, cols, prob.x, many, {static_cast<int>(t), isa});
        const std::size_t at = first_difference(many, one);
        EXPECT_EQ(at, one.size()) << rows << "x" << cols << " isa " << path_name(isa) << ": threads " << t
                                  << " differs from threads 1 at row " << at;
      }
    });
  }
});

// Device GEMVs against the CPU emulation of the Warp32 order and the FP64 reference.
template <class Run>
void check_device(const popper::Params& p, const char* device, Run run) {
  for (const auto& s : p.list("shapes")) {
    const auto rows = s.integer("rows"), cols = s.integer("cols");
    const auto prob = tb::make_random_problem(rows, cols, p.seed() + static_cast<std::uint64_t>(rows));
    std::vector<float> emulated(static_cast<std::size_t>(rows)), y(emulated.size(), -1.0f);
    popper::accum::gemv_q4k(prob.w.blocks, rows, cols, prob.x, emulated, popper::accum::Order::Warp32, 2);
    const popper::device::Execution e = run(prob, y);
    record(e);
    // A decline is not a failure of the kernel: the harness reports the test
    // skipped (no evidence from the device), or failed under POPPER_REQUIRE_DEVICE=1.
    if (!e.ran_on(device)) return;
    const std::size_t at = first_difference(y, emulated);
    EXPECT_EQ(at, y.size()) << device << " " << rows << "x" << cols << ": row " << at << " = " << y[at]
                            << " but the Warp32 order gives " << emulated[at];
    std::vector<std::int64_t> sample;  // the bound on up to 512 rows (the reference is slow for 65537 rows)
    for (std::int64_t r = 0; r < rows; r += std::max<std::int64_t>(1, rows / 512)) sample.push_back(r);
    const auto stats = tb::row_stats(prob, sample);
    std::vector<float> ys;
    for (auto r : sample) ys.push_back(y[static_cast<std::size_t>(r)]);
    const auto c = tb::compare(ys, stats, [&](std::size_t k) { return tb::device_bound(stats, k, cols); });
    EXPECT_TRUE(c.ok) << device << " " << rows << "x" << cols << ": " << c.message;
    std::printf("[%s] %lldx%lld: bitwise Warp32, worst error / gamma bound %.3e\n", device,
                static_cast<long long>(rows), static_cast<long long>(cols), c.worst_ratio);
  }
}

POPPER_FALSIFIER("FALSIFY-Q4K-007", [](const popper::Params& p) {
  check_device(p, "vulkan", [](const tb::Problem& prob, std::vector<float>& y) {
    return gemv_vulkan(prob.w.blocks, prob.rows(), prob.cols(), prob.x, y);
  });
  if (!popper::vulkan::status().usable()) return;
  // A resident matrix reused with a new x must see the new x.
  const auto prob = tb::make_problem(40, 512, p.seed());
  VulkanMatrix m(prob.w.blocks, prob.rows(), prob.cols());
  std::vector<float> y(40), expect(40);
  record(m.gemv(prob.x, y));
  std::vector<float> x2 = tb::make_x(512, p.seed() + 1, tb::XKind::Positive);
  double device_seconds = 0;
  record(m.gemv(x2, y, {}, &device_seconds));
  popper::accum::gemv_q4k(prob.w.blocks, 40, 512, x2, expect, popper::accum::Order::Warp32);
  EXPECT_EQ(first_difference(y, expect), y.size()) << "VulkanMatrix reused with a new x returned a stale result";
  EXPECT_GT(device_seconds, 0.0);
  std::printf("[FALSIFY-Q4K-007] device %s, subgroup %u, dispatch time of 40x512 %.3g s (%s)\n",
              popper::vulkan::status().device.name.c_str(), popper::vulkan::status().device.subgroup_size,
              device_seconds, popper::vulkan::status().device.timestamps ? "device timestamps" : "host clock");
});

POPPER_FALSIFIER("FALSIFY-Q4K-008", [](const popper::Params& p) {
  check_device(p, "cuda", [](const tb::Problem& prob, std::vector<float>& y) {
    return gemv_cuda(prob.w.blocks, prob.rows(), prob.cols(), prob.x, y);
  });
});

POPPER_FALSIFIER("FALSIFY-Q4K-009", [](const popper::Params& p) {
  for (const auto& s : p.list("shapes")) {
    const auto rows = s.integer("rows"), cols = s.integer("cols");
    const auto prob = tb::make_problem(rows, cols, p.seed());
    const cpu::CpuOptions fallback{2, Isa::Auto};
    std::vector<float> cpu_y(static_cast<std::size_t>(rows)), y(cpu_y.size(), -1.0f);
    cpu::gemv(prob.w.blocks, rows, cols, prob.x, cpu_y, fallback);
    record_cpu(Isa::Auto);
    if (popper::device::cuda_status().usable()) {
      std::printf("[FALSIFY-Q4K-009] a CUDA device is present: the CUDA decline is not exercised here\n");
    } else {
      const auto e = gemv_cuda(prob.w.blocks, rows, cols, prob.x, y, fallback);
      record(e);
      EXPECT_TRUE(e.declined() && e.declined_device == "cuda") << "gemv_cuda without a device must report its decline";
      EXPECT_FALSE(e.decline_reason.empty());
      EXPECT_EQ(e.backend, cpu::backend_tag(fallback.isa));
      EXPECT_EQ(first_difference(y, cpu_y), y.size()) << "the CUDA decline path differs from cpu::gemv";
    }
    std::fill(y.begin(), y.end(), -1.0f);
    const auto v = gemv_vulkan(prob.w.blocks, rows, cols, prob.x, y, fallback);
    record(v);
    if (v.declined()) {
      EXPECT_EQ(v.declined_device, "vulkan");
      EXPECT_EQ(first_difference(y, cpu_y), y.size()) << "the Vulkan decline path differs from cpu::gemv";
    } else {
      EXPECT_TRUE(v.ran_on("vulkan")) << v.backend;
    }
  }
});

}  // namespace
