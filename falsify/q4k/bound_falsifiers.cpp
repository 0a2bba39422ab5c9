// FALSIFY-Q4K-013: the bandwidth-bound verdict of the q4k bench rows.
#include <gtest/gtest.h>

#include "popper/binding.hpp"
#include "impl/q4k/bandwidth_bound.hpp"
#include "impl/q4k/q4k.hpp"
#include "impl/q4k/read_bound_rule.h"
#include "workloads/common/read_sum.h"

namespace {

using namespace popper::q4k;

POPPER_FALSIFIER("FALSIFY-Q4K-013", [](const popper::Params&) {
  // Byte count: W, x and y.
  EXPECT_EQ(gemv_bytes(16384, 4096), 16384.0 * 4096 * 0.5625 + 4.0 * 4096 + 4.0 * 16384);
  EXPECT_EQ(gemv_bytes(0, 0), 0.0);

  const double bytes = 1e9;
  const std::vector<double> read = {40e9, 50e9};  // bound = 50 * 50/40 = 62.5 GB/s; with the tie 68.75
  // Median 1/60 s -> 60 GB/s: below the bound, valid; one fast outlier does not change the median.
  const std::vector<double> ok_times = {1.0 / 60, 1.0 / 55, 1.0 / 200, 1.0 / 58, 1.0 / 61};
  auto v = bandwidth_verdict(bytes, ok_times, read);
  EXPECT_TRUE(v.valid) << v.text;
  EXPECT_NEAR(v.bound, 62.5e9, 1);
  EXPECT_NEAR(v.achieved, 60e9, 1e-3 * 60e9);
  // Median 1/72 s -> 72 GB/s: 15% above the probe, faster than the hardware can read, invalid.
  const std::vector<double> fast = {1.0 / 72, 1.0 / 73, 1.0 / 71};
  v = bandwidth_verdict(bytes, fast, read);
  EXPECT_FALSE(v.valid);
  EXPECT_EQ(v.text.rfind("invalid:", 0), 0u) << v.text;
  // 66 GB/s: above the probe's bound by 5.6%, a tie a tuned kernel can reach
  // against the probe's generic loops: valid. Exactly at the tie's edge:
  // valid; just beyond it: invalid.
  EXPECT_TRUE(bandwidth_verdict(bytes, std::vector<double>{1.0 / 66}, read).valid);
  EXPECT_TRUE(bandwidth_verdict(bytes, std::vector<double>{1.0 / 68.75}, read).valid);
  EXPECT_FALSE(bandwidth_verdict(bytes, std::vector<double>{1.0 / 68.9}, read).valid);
  // No read measurement: nothing to judge.
  EXPECT_TRUE(bandwidth_verdict(bytes, fast, {}).valid);
  // No samples: valid with zero rate.
  EXPECT_TRUE(bandwidth_verdict(bytes, {}, read).valid);

  // Confirmation: a correct row above a probe slowed as a whole (bound 29.2 GB/s,
  // 32.1 with the tie, against a row at 34.5) is judged again by a fresh probe
  // that reads at 40 GB/s.
  const std::vector<double> honest = {1.0 / 34.5};
  std::vector<double> slowed = {25e9, 27e9};
  int probes = 0;
  auto fresh = [&] { return ++probes, std::vector<double>{40e9}; };
  ASSERT_FALSE(bandwidth_verdict(bytes, honest, slowed).valid);
  v = confirmed_bandwidth_verdict(bytes, honest, slowed, 3, fresh);
  EXPECT_TRUE(v.valid) << v.text;
  EXPECT_EQ(probes, 1);
  EXPECT_EQ(slowed.size(), 3u);  // the fresh samples join the row's read samples
  // A row that skips bytes (100 GB/s) stays above every probe: condemned after all three.
  std::vector<double> read2 = read;
  probes = 0;
  v = confirmed_bandwidth_verdict(bytes, std::vector<double>{1.0 / 100}, read2, 3, fresh);
  EXPECT_FALSE(v.valid);
  EXPECT_EQ(probes, 3);
  EXPECT_NE(v.text.find("after 3 more probes"), std::string::npos) << v.text;
  // A row within the first bound costs no probe.
  probes = 0;
  EXPECT_TRUE(confirmed_bandwidth_verdict(bytes, ok_times, read2, 3, fresh).valid);
  EXPECT_EQ(probes, 0);

  // Which rows a probe bounds: not those whose share per thread fits a core's
  // own cache (2 MiB here), nor any when that size is unknown (0: judged).
  const double l2 = 2.0 * 1024 * 1024;
  EXPECT_FALSE(popper_read_bound_applies(1.05e6, 1, l2));  // gate_256x1024 in FP32 on one core
  EXPECT_FALSE(popper_read_bound_applies(l2, 1, l2));
  EXPECT_TRUE(popper_read_bound_applies(4.2e6, 1, l2));   // gate_512x2048 in FP32
  EXPECT_FALSE(popper_read_bound_applies(3.0e6, 2, l2));  // 1.5 MB a core
  EXPECT_TRUE(popper_read_bound_applies(4.2e6, 2, l2));   // 2.1 MB a core
  EXPECT_TRUE(popper_read_bound_applies(1.05e6, 1, 0));
  EXPECT_TRUE(popper_read_bound_applies(1.05e6, 0, l2 / 4));  // threads < 1 counts as one

  // The read probes (bench/common/read_bandwidth.hpp, ceiling/read_bound.h)
  // keep the fastest of every way of reading: a way that skipped lines would
  // raise every bound. Each returns the sum of p[0 .. n - n % 32).
  for (std::size_t n : {std::size_t{32}, std::size_t{4096 + 31}, std::size_t{100000}}) {
    std::vector<std::uint64_t> words(n);
    std::uint64_t want = 0;
    for (std::size_t i = 0; i < n; ++i) {
      words[i] = (i + 1) * 0x9E3779B97F4A7C15ULL;
      if (i < n - n % 32) want += words[i];
    }
    for (int way = 0; way < POPPER_READ_WAYS; ++way) {
      if (!popper_read_way_supported(way)) continue;
      EXPECT_EQ(popper_read_sum(way, words.data(), n), want) << "way " << way << ", n " << n;
    }
  }
  popper::record_backend("reference");
});

}  // namespace
