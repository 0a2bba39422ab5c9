// bench_gemm's device tiers (POPPER_BENCH_DEVICE=cuda; `popper bench compare
// --family gemm --device`): gemm_device.cpp.
#pragma once
#include <string>

namespace popper::gemm::bench_device {

// The value of POPPER_BENCH_DEVICE: "" (the CPU tiers) or "cuda"; anything
// else is a usage error the caller reports.
std::string requested_device();

// Registers gemm/{wrapped,hand}/<shape>/{f32,f16,bf16}/threads:1 on the device.
void register_device_tiers();

// The backends the device rows are tagged with: cuBLAS and the hand kernels
// on "cuda:sm_XX" ("cuda" when no device is usable: the rows are then skipped).
std::string wrapped_backend();
std::string hand_backend();

}  // namespace popper::gemm::bench_device
