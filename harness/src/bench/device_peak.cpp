#include "bench/device_peak.hpp"
#include "bench/peak.hpp"

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "common/process.hpp"
#include "popper/error.hpp"
#include "popper/io.hpp"

namespace popper::bench {

namespace {

DevicePeak from_fields(const nlohmann::json& j) {
  DevicePeak p;
  p.name = j.at("name").get<std::string>();
  p.sm = j.at("sm").get<std::string>();
  p.multiprocessors = j.at("multiprocessors").get<int>();
  p.memory_bytes = j.at("memory_bytes").get<double>();
  p.fp32_fma = j.at("fp32_fma_flops").get<double>();
  p.fp32_gemm = j.at("fp32_gemm_flops").get<double>();
  p.tf32_gemm = j.at("tf32_gemm_flops").get<double>();
  p.f16_gemm = j.at("f16_gemm_flops").get<double>();
  p.bf16_gemm = j.at("bf16_gemm_flops").get<double>();
  p.copy_bandwidth = j.at("copy_bytes_per_s").get<double>();
  p.triad_bandwidth = j.at("triad_bytes_per_s").get<double>();
  for (double v : {p.fp32_fma, p.fp32_gemm, p.f16_gemm, p.bf16_gemm, p.copy_bandwidth})
    if (!(v > 0)) throw Error("the device probe reported a rate that is not positive");
  return p;
}

}  // namespace

DevicePeak device_peak_from_probe(const std::string& probe_json, const std::string& gpu, const std::string& date) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(probe_json);
  } catch (const nlohmann::json::exception&) {
    throw Error("popper_peak_device printed no JSON: " + probe_json.substr(0, 200));
  }
  if (!j.value("available", false))
    throw Error("no usable CUDA device: " + j.value("reason", std::string("(no reason)")));
  try {
    DevicePeak p = from_fields(j);
    p.gpu = gpu;
    p.date = date;
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("popper_peak_device's JSON lacks a field: ") + e.what());
  }
}

std::string device_peak_to_json(const DevicePeak& p) {
  const nlohmann::json j = {{"gpu", p.gpu},
                            {"date", p.date},
                            {"name", p.name},
                            {"sm", p.sm},
                            {"multiprocessors", p.multiprocessors},
                            {"memory_bytes", p.memory_bytes},
                            {"fp32_fma_flops", p.fp32_fma},
                            {"fp32_gemm_flops", p.fp32_gemm},
                            {"tf32_gemm_flops", p.tf32_gemm},
                            {"f16_gemm_flops", p.f16_gemm},
                            {"bf16_gemm_flops", p.bf16_gemm},
                            {"copy_bytes_per_s", p.copy_bandwidth},
                            {"triad_bytes_per_s", p.triad_bandwidth}};
  return j.dump(2) + "\n";
}

DevicePeak device_peak_from_json(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    DevicePeak p = from_fields(j);
    p.gpu = j.at("gpu").get<std::string>();
    p.date = j.at("date").get<std::string>();
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("device peak cache is not valid: ") + e.what());
  }
}

DevicePeak cached_or_measured_device_peak(const std::string& cache_dir, const std::string& bin_dir,
                                          const std::string& gpu, bool refresh,
                                          const std::function<void(const std::string&)>& progress) {
  namespace fs = std::filesystem;
  const std::string cache = cache_dir + "/peak-device.json";
  if (!refresh && fs::exists(cache)) {
    try {
      DevicePeak p = device_peak_from_json(read_file(cache));
      if (p.gpu == gpu) return p;
    } catch (const Error&) {
      // a bad cache is measured again, not fatal
    }
  }
  const std::string probe = bin_dir + "/popper_peak_device";
  if (!fs::exists(probe)) throw Error(probe + " not found: it is built only where CUDA (nvcc) is installed");
  if (progress) progress("peak: measuring the CUDA device (FP32 FMA, cuBLAS GEMMs, copy and triad)");
  const ProcessResult r = run_process({probe}, {}, {}, 600);
  if (r.timed_out) throw Error("popper_peak_device did not finish within 600 s");
  if (progress && !r.err.empty()) progress(r.err);
  const std::string date = [] {
    char buf[32];
    const std::time_t t = std::time(nullptr);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return std::string(buf);
  }();
  DevicePeak p = device_peak_from_probe(r.out, gpu, date);  // throws with the probe's reason
  write_file_atomic(cache, device_peak_to_json(p));
  return p;
}

double device_peak_for(const DevicePeak& p, const std::string& kind) {
  if (kind == "fp32" || kind == "f32") return p.fp32_fma;
  if (kind == "f16") return p.f16_gemm;
  if (kind == "bf16") return p.bf16_gemm;
  if (kind == "bandwidth") return p.copy_bandwidth;
  return 0;
}

std::string format_device_peak(const DevicePeak& p) {
  return fmt::format(
      "device       {} ({}, {} SMs, {:.0f} GiB), measured {}\n"
      "fp32 fma     {:.1f} TFLOP/s\n"
      "fp32 gemm    {:.1f} TFLOP/s (cuBLAS SGEMM, TF32 off)\n"
      "tf32 gemm    {:.1f} TFLOP/s\n"
      "f16 gemm     {:.1f} TFLOP/s (FP32 accumulation)\n"
      "bf16 gemm    {:.1f} TFLOP/s (FP32 accumulation)\n"
      "copy         {:.0f} GB/s (read + written)\n"
      "triad        {:.0f} GB/s (read + written)\n",
      p.name, p.sm, p.multiprocessors, p.memory_bytes / (1u << 30), p.date, p.fp32_fma * 1e-12, p.fp32_gemm * 1e-12,
      p.tf32_gemm * 1e-12, p.f16_gemm * 1e-12, p.bf16_gemm * 1e-12, p.copy_bandwidth * 1e-9, p.triad_bandwidth * 1e-9);
}

void add_device_peak(PeakResult& host, const DevicePeak& d) {
  host.device = d.name + " (" + d.sm + ")";
  host.device_fp32 = d.fp32_fma;
  host.device_f16 = d.f16_gemm;
  host.device_bf16 = d.bf16_gemm;
  host.device_bandwidth = d.copy_bandwidth;
}

}  // namespace popper::bench
