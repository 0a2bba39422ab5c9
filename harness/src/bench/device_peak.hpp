// Measured ceilings of a CUDA device, the denominators of GPU rows: what
// `popper peak --device` prints and caches (<build>/peak-device.json, keyed by
// the GPU's name and driver). The measurement is tools/popper_peak_device.cu
// (CUDA, built with the kernels); the harness only runs it and reads its JSON:
//   fp32_fma      sustained FP32 FMA, FLOP/s (8 independent chains a thread)
//   fp32_gemm     cuBLAS SGEMM with TF32 off, FLOP/s (the f32 rows' ceiling)
//   tf32/f16/bf16_gemm  cuBLAS GemmEx, FP32 accumulation, FLOP/s
//   copy, triad   device memory, bytes read + written per second
#pragma once
#include <functional>
#include <optional>
#include <string>

namespace popper::bench {

struct DevicePeak {
  std::string gpu;   // the machine's GPU line (nvidia-smi name, driver): the cache key
  std::string name;  // the device's own name
  std::string sm;    // "sm_90"
  std::string date;
  int multiprocessors = 0;
  double memory_bytes = 0;
  double fp32_fma = 0, fp32_gemm = 0, tf32_gemm = 0, f16_gemm = 0, bf16_gemm = 0;  // FLOP/s
  double copy_bandwidth = 0, triad_bandwidth = 0;                                  // bytes/s
};

// The probe's JSON -> DevicePeak; throws Error when it says the device is
// unavailable (with its reason) or when the text is not the probe's.
DevicePeak device_peak_from_probe(const std::string& probe_json, const std::string& gpu, const std::string& date);
std::string device_peak_to_json(const DevicePeak& p);
DevicePeak device_peak_from_json(const std::string& text);  // the cache's form; throws Error

// The cached peak (<cache_dir>/peak-device.json) when it names this GPU and
// refresh is false; otherwise runs <bin_dir>/popper_peak_device and rewrites
// the cache. Throws Error (with the reason) when there is no device or no probe.
DevicePeak cached_or_measured_device_peak(const std::string& cache_dir, const std::string& bin_dir,
                                          const std::string& gpu, bool refresh,
                                          const std::function<void(const std::string&)>& progress = {});

// The denominator of a GPU row's efficiency: kind f32 -> the FP32 FMA rate,
// f16 / bf16 -> that tensor-core GEMM rate, bandwidth -> copy; 0 when unknown.
double device_peak_for(const DevicePeak& p, const std::string& kind);

// Puts the device's FP32 FMA, f16 / bf16 tensor-core GEMM and copy rates
// into the device_* kinds of a host peak (what a device run's rows divide by).
struct PeakResult;
void add_device_peak(PeakResult& host, const DevicePeak& d);

std::string format_device_peak(const DevicePeak& p);  // human-readable lines

}  // namespace popper::bench
