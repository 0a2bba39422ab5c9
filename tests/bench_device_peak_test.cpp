// The device peak's probe protocol and cache (harness/src/bench/device_peak.hpp).
#include <gtest/gtest.h>

#include "bench/device_peak.hpp"
#include "popper/error.hpp"

using namespace popper::bench;

namespace {

const char* kProbe =
    R"({"available": true, "name": "NVIDIA H100 80GB HBM3", "sm": "sm_90", "multiprocessors": 132, )"
    R"("memory_bytes": 85520809984, "l2_bytes": 52428800, "cuda_runtime": 13000, "cuda_driver": 13000, "reps": 10, )"
    R"("gemm_n": 8192, "fp32_fma_flops": 6.1e13, "fp32_gemm_flops": 5.17e13, "tf32_gemm_flops": 3.7e14, )"
    R"("f16_gemm_flops": 6.66e14, "bf16_gemm_flops": 7.9e14, "copy_bytes_per_s": 3.0e12, "triad_bytes_per_s": 3.1e12})";

}  // namespace

TEST(DevicePeak, ProbeJsonBecomesThePeakAndRoundTripsThroughTheCache) {
  const DevicePeak p = device_peak_from_probe(kProbe, "NVIDIA H100 80GB HBM3, 580.159.04", "2026-11-26T20:00:00Z");
  EXPECT_EQ(p.sm, "sm_90");
  EXPECT_EQ(p.multiprocessors, 132);
  EXPECT_DOUBLE_EQ(device_peak_for(p, "f32"), 6.1e13);
  EXPECT_DOUBLE_EQ(device_peak_for(p, "bf16"), 7.9e14);
  EXPECT_DOUBLE_EQ(device_peak_for(p, "f16"), 6.66e14);
  EXPECT_DOUBLE_EQ(device_peak_for(p, "bandwidth"), 3.0e12);
  EXPECT_DOUBLE_EQ(device_peak_for(p, "fp64"), 0) << "an unknown kind has no denominator";
  const DevicePeak back = device_peak_from_json(device_peak_to_json(p));
  EXPECT_EQ(back.gpu, p.gpu);
  EXPECT_EQ(back.name, p.name);
  EXPECT_DOUBLE_EQ(back.bf16_gemm, p.bf16_gemm);
  EXPECT_DOUBLE_EQ(back.triad_bandwidth, p.triad_bandwidth);
  EXPECT_NE(format_device_peak(p).find("790.0 TFLOP/s"), std::string::npos) << format_device_peak(p);
}

TEST(DevicePeak, AnUnavailableDeviceIsAnErrorWithItsReason) {
  try {
    device_peak_from_probe(R"({"available": false, "reason": "no CUDA device"})", "none", "d");
    FAIL() << "an unavailable device must not give a peak";
  } catch (const popper::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
  }
  EXPECT_THROW(device_peak_from_probe("Segmentation fault", "none", "d"), popper::Error);
  EXPECT_THROW(device_peak_from_probe(R"({"available": true, "name": "x"})", "none", "d"), popper::Error);
  std::string zero = kProbe;
  zero.replace(zero.find("6.1e13"), 6, "0.0e00");
  EXPECT_THROW(device_peak_from_probe(zero, "none", "d"), popper::Error) << "a zero rate is no ceiling";
}
