// Measured machine peaks, the denominators of every efficiency column.
//
// FMA throughput: each thread runs R independent accumulator chains
//   acc_r <- acc_r * m + c   (one vfmadd per chain per step, R = 12 registers,
// enough to cover FMA latency 4 x 2 pipes), FLOP = 2 * lanes * R * steps.
// Per core = one thread; all cores = one thread per online CPU, summed.
// Bandwidth: STREAM triad a[i] = b[i] + s * c[i] over three double arrays of
// max(4 x L3, 64 MiB) each; bytes = 3 * 8 * N per pass (STREAM convention:
// write-allocate traffic not counted). Best of several trials everywhere.
// Last-level cache, measured: read bandwidth of one core over working sets of
// 1 MiB .. 256 MiB (doubling); the LLC is the largest set still read >= 1.4x
// faster than the DRAM plateau (the two largest sets). A hypervisor's cpuid
// can report any L3 size (508 MiB on a 2-vCPU Zen 5 guest), so the roofline
// trusts this measurement, not the reported size (kept for the record).
// Rates are FLOP (bytes) per second of each thread's own CPU time, summed
// over threads: on a machine shared with other work this still measures what
// the cores do while they run, not the share the scheduler gave us.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/machine.hpp"

namespace popper::bench {

struct PeakResult {
  std::string fingerprint;
  std::string date;
  int cores = 1;
  double fp32_avx2_core = 0, fp32_avx2_all = 0;  // FLOP/s
  double fp64_avx2_core = 0, fp64_avx2_all = 0;
  bool avx512 = false;  // measured only when the CPU has AVX-512F
  double fp32_avx512_core = 0, fp32_avx512_all = 0;
  double fp64_avx512_core = 0, fp64_avx512_all = 0;
  double bandwidth_core = 0, bandwidth_all = 0;  // bytes/s
  double triad_array_mib = 0;
  double llc_bytes = 0;           // measured (see above); 0: not measured
  double llc_reported_bytes = 0;  // what the OS/cpuid says
  // A CUDA device's measured ceilings (device_peak.hpp, add_device_peak), the
  // device_* peak kinds; never cached here. 0: no device measured.
  std::string device;
  double device_fp32 = 0, device_f16 = 0, device_bf16 = 0;  // FLOP/s
  double device_bandwidth = 0;                              // bytes/s
};

PeakResult measure_peak(const MachineInfo& m, const std::function<void(const std::string&)>& progress = {});

std::string peak_to_json(const PeakResult& p);
PeakResult peak_from_json(const std::string& text);  // throws Error on bad content
std::optional<PeakResult> load_peak_cache(const std::string& path);
void save_peak_cache(const std::string& path, const PeakResult& p);

// Peak for an efficiency denominator: kind is fp32 | fp64 | bandwidth (or a
// device_* kind: the device's figure, whatever the host threads); the
// best ISA measured; threads == 1 -> per core, threads >= cores -> all cores,
// else per core x threads. 0 when unknown.
// The cached peak when its fingerprint matches this machine and refresh is
// false; otherwise measures and rewrites the cache.
PeakResult cached_or_measured_peak(const std::string& cache_path, const MachineInfo& m, bool refresh,
                                   const std::function<void(const std::string&)>& progress = {});

double peak_for(const PeakResult& p, const std::string& kind, int threads);
// Roofline bound of one row (family peak kind "roofline"): min(FP32 peak,
// bandwidth x work / bytes), in work per second; 0 when unknown.
double roofline_bound(const PeakResult& p, int threads, double work_per_iter, double bytes_per_iter);
// The value a row's pct_of_peak and a peak_fraction claim divide by the peak
// of `kind`: bytes/s for bandwidth, work/s otherwise; and that peak (roofline per row).
double row_peak(const PeakResult& p, const std::string& kind, int threads, double work_per_iter, double bytes_per_iter);

// CSV metadata: human-readable peak lines, plus "roofline_peaks" in a fixed
// machine-readable form the report parses (GFLOP/s, GB/s, MiB):
//   fp32=<core>/<all> fp64=<core>/<all> bw=<core>/<all> llc_mib=<measured> cores=<n>
std::vector<std::pair<std::string, std::string>> peak_metadata(const PeakResult& p);
std::string format_peak(const PeakResult& p);  // human-readable lines
std::string llc_text(const PeakResult& p);     // "32 MiB measured (...); 508 MiB reported by the CPU"

}  // namespace popper::bench
