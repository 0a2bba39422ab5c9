// Peak FMA throughput and triad bandwidth (method in peak.hpp).
#include "popper/io.hpp"
#include "bench/peak.hpp"

#include <immintrin.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <time.h>

#include <nlohmann/json.hpp>

#include "bench/csv.hpp"
#include "popper/error.hpp"

namespace popper::bench {
namespace {

volatile double g_sink = 0;  // keeps the chains' results alive
// The chains' factor and addend, read through volatile: as constants, a
// compiler sees that the chains' start values are fixed points of
// a * mul + add in their precision, and clang deletes the loops (its peak
// read infinite, and the calibration below overflowed).
volatile float g_mul_f32 = 0.99999994f, g_add_f32 = 1e-7f;
volatile double g_mul_f64 = 0.9999999999, g_add_f64 = 1e-10;

// The FMA chains. target attributes let this file build without -mavx2; the
// functions are only called after the CPU flags say they are safe.
#define POPPER_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
constexpr int kChains = 12;

__attribute__((target("avx2,fma"))) double chains_avx2_f32(long steps) {
#define DECL(i) __m256 a##i = _mm256_set1_ps(1.0f + 0.001f * (i));
  POPPER_CHAINS(DECL)
#undef DECL
  const __m256 mul = _mm256_set1_ps(g_mul_f32), add = _mm256_set1_ps(g_add_f32);
  for (long s = 0; s < steps; ++s) {
#define STEP(i) a##i = _mm256_fmadd_ps(a##i, mul, add);
    POPPER_CHAINS(STEP)
#undef STEP
  }
  __m256 sum = _mm256_setzero_ps();
#define SUM(i) sum = _mm256_add_ps(sum, a##i);
  POPPER_CHAINS(SUM)
#undef SUM
  alignas(32) float out[8];
  _mm256_store_ps(out, sum);
  return out[0];
}

__attribute__((target("avx2,fma"))) double chains_avx2_f64(long steps) {
#define DECL(i) __m256d a##i = _mm256_set1_pd(1.0 + 0.001 * (i));
  POPPER_CHAINS(DECL)
#undef DECL
  const __m256d mul = _mm256_set1_pd(g_mul_f64), add = _mm256_set1_pd(g_add_f64);
  for (long s = 0; s < steps; ++s) {
#define STEP(i) a##i = _mm256_fmadd_pd(a##i, mul, add);
    POPPER_CHAINS(STEP)
#undef STEP
  }
  __m256d sum = _mm256_setzero_pd();
#define SUM(i) sum = _mm256_add_pd(sum, a##i);
  POPPER_CHAINS(SUM)
#undef SUM
  alignas(32) double out[4];
  _mm256_store_pd(out, sum);
  return out[0];
}

__attribute__((target("avx512f"))) double chains_avx512_f32(long steps) {
#define DECL(i) __m512 a##i = _mm512_set1_ps(1.0f + 0.001f * (i));
  POPPER_CHAINS(DECL)
#undef DECL
  const __m512 mul = _mm512_set1_ps(g_mul_f32), add = _mm512_set1_ps(g_add_f32);
  for (long s = 0; s < steps; ++s) {
#define STEP(i) a##i = _mm512_fmadd_ps(a##i, mul, add);
    POPPER_CHAINS(STEP)
#undef STEP
  }
  __m512 sum = _mm512_setzero_ps();
#define SUM(i) sum = _mm512_add_ps(sum, a##i);
  POPPER_CHAINS(SUM)
#undef SUM
  alignas(64) float out[16];
  _mm512_store_ps(out, sum);
  return static_cast<double>(out[0]);
}

__attribute__((target("avx512f"))) double chains_avx512_f64(long steps) {
#define DECL(i) __m512d a##i = _mm512_set1_pd(1.0 + 0.001 * (i));
  POPPER_CHAINS(DECL)
#undef DECL
  const __m512d mul = _mm512_set1_pd(g_mul_f64), add = _mm512_set1_pd(g_add_f64);
  for (long s = 0; s < steps; ++s) {
#define STEP(i) a##i = _mm512_fmadd_pd(a##i, mul, add);
    POPPER_CHAINS(STEP)
#undef STEP
  }
  __m512d sum = _mm512_setzero_pd();
#define SUM(i) sum = _mm512_add_pd(sum, a##i);
  POPPER_CHAINS(SUM)
#undef SUM
  alignas(64) double out[8];
  _mm512_store_pd(out, sum);
  return out[0];
}

using ChainFn = double (*)(long);

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// FLOP/s of `threads` copies of fn running together; best of `trials`. Each
// thread's rate is its FLOP over its own CPU time, so a machine shared with
// other processes still yields the cores' throughput while they run (time
// the scheduler gives to others is not counted); all-core = sum of rates.
double fma_rate(ChainFn fn, int lanes, int threads, int trials) {
  long steps = 1 << 20;  // calibrated so one trial takes ~0.25 s of CPU time
  for (;;) {
    const double c0 = thread_cpu_seconds();
    g_sink = g_sink + fn(steps);
    const double dt = thread_cpu_seconds() - c0;
    if (dt > 0.05) {
      steps = static_cast<long>(static_cast<double>(steps) * 0.25 / dt) + 1;
      break;
    }
    if (steps > (1L << 40))
      throw Error("the FMA chains ran 2^40 steps in under 0.05 s: the compiler removed their loop");
    steps *= 4;
  }
  const double flop_per_thread = 2.0 * lanes * kChains * static_cast<double>(steps);
  double best = 0;
  for (int t = 0; t < trials; ++t) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> rates(static_cast<std::size_t>(threads));
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(threads));
    for (int i = 0; i < threads; ++i)
      pool.emplace_back([&, i] {
        ready.fetch_add(1);
        while (!go.load()) {
        }
        const double c0 = thread_cpu_seconds();
        const double r = fn(steps);
        const double dt = thread_cpu_seconds() - c0;
        g_sink = g_sink + r;
        rates[static_cast<std::size_t>(i)] = dt > 0 ? flop_per_thread / dt : 0;
      });
    while (ready.load() < threads) {
    }
    go.store(true);
    for (auto& th : pool) th.join();
    double sum = 0;
    for (double r : rates) sum += r;
    best = std::max(best, sum);
  }
  return best;
}

// Triad over [begin, end) of each array.
void triad(double* a, const double* b, const double* c, std::size_t begin, std::size_t end, double s) {
  for (std::size_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
}

// Bytes/s of the triad, per-thread CPU time as above; best of `trials`.
double triad_rate(std::size_t n, int threads, int trials) {
  std::unique_ptr<double[]> a(new double[n]), b(new double[n]), c(new double[n]);
  auto parallel = [&](auto&& body) {
    std::vector<double> rates(static_cast<std::size_t>(threads));
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) {
      const std::size_t lo = n * static_cast<std::size_t>(i) / static_cast<std::size_t>(threads);
      const std::size_t hi = n * static_cast<std::size_t>(i + 1) / static_cast<std::size_t>(threads);
      pool.emplace_back([&, lo, hi, i] {
        const double c0 = thread_cpu_seconds();
        body(lo, hi);
        const double dt = thread_cpu_seconds() - c0;
        rates[static_cast<std::size_t>(i)] = dt > 0 ? 3.0 * 8.0 * static_cast<double>(hi - lo) / dt : 0;
      });
    }
    for (auto& th : pool) th.join();
    double sum = 0;
    for (double r : rates) sum += r;
    return sum;
  };
  // First touch by the same partition that runs the triad.
  parallel([&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      a[i] = 0;
      b[i] = 1.0;
      c[i] = 2.0;
    }
  });
  double best = 0;
  for (int t = 0; t < trials; ++t)
    best = std::max(best,
                    parallel([&](std::size_t lo, std::size_t hi) { triad(a.get(), b.get(), c.get(), lo, hi, 3.0); }));
  g_sink = g_sink + a[n / 2];
  return best;
}

// Read bandwidth of one thread over n doubles (best of `trials`, wall time).
__attribute__((target("avx2"))) double read_rate(const double* a, std::size_t n, int trials) {
  const std::size_t passes = std::max<std::size_t>(1, (std::size_t{256} << 20) / (n * 8));
  double best = 0;
  for (int t = 0; t < trials; ++t) {
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t p = 0; p < passes; ++p)
      for (std::size_t i = 0; i + 16 <= n; i += 16) {
        s0 = _mm256_add_pd(s0, _mm256_load_pd(a + i));
        s1 = _mm256_add_pd(s1, _mm256_load_pd(a + i + 4));
        s2 = _mm256_add_pd(s2, _mm256_load_pd(a + i + 8));
        s3 = _mm256_add_pd(s3, _mm256_load_pd(a + i + 12));
      }
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    alignas(32) double out[4];
    _mm256_store_pd(out, _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)));
    g_sink = g_sink + out[0];
    if (dt > 0) best = std::max(best, static_cast<double>(passes * n * 8) / dt);
  }
  return best;
}

// The largest working set still read >= 1.4x faster than DRAM (peak.hpp).
double measure_llc_bytes(const std::function<void(const std::string&)>& say) {
  const std::size_t max_bytes = std::size_t{256} << 20;
  void* raw = std::aligned_alloc(64, max_bytes);
  if (!raw) return 0;
  std::unique_ptr<double, void (*)(void*)> buf(static_cast<double*>(raw), std::free);
  for (std::size_t i = 0; i < max_bytes / 8; ++i) buf.get()[i] = 1.0;
  std::vector<std::pair<std::size_t, double>> curve;
  for (std::size_t bytes = std::size_t{1} << 20; bytes <= max_bytes; bytes *= 2)
    curve.emplace_back(bytes, read_rate(buf.get(), bytes / 8, 3));
  const double dram = std::max(curve[curve.size() - 1].second, curve[curve.size() - 2].second);
  double llc = 0;
  std::string text;
  for (const auto& [bytes, bw] : curve) {
    if (bw >= 1.4 * dram && bytes < max_bytes / 2) llc = static_cast<double>(bytes);
    text += " " + std::to_string(bytes >> 20) + "MiB:" + std::to_string(static_cast<int>(bw * 1e-9));
  }
  if (say) say("peak: read GB/s by working set:" + text);
  return llc;
}

// L3 size: sysfs first (sysconf is wrong under some hypervisors), then sysconf, then 32 MiB.
std::size_t l3_bytes() {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index3/size");
  std::string s;
  if (in >> s && !s.empty()) {
    std::size_t mult = 1;
    if (s.back() == 'K') mult = 1024;
    if (s.back() == 'M') mult = std::size_t{1024} * 1024;
    try {
      const std::size_t v = std::stoul(s) * mult;
      if (v > 0) return v;
    } catch (const std::exception&) {
    }
  }
  const long l3 = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
  return l3 > 0 ? static_cast<std::size_t>(l3) : std::size_t{32} << 20;
}

}  // namespace

PeakResult measure_peak(const MachineInfo& m, const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  PeakResult p;
  p.fingerprint = fingerprint(m);
  p.cores = m.cores;
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  p.date = date;
  const int trials = 3;
  if (has_isa(m, "avx2") && has_isa(m, "fma")) {
    say("peak: FP32 AVX2 FMA");
    p.fp32_avx2_core = fma_rate(chains_avx2_f32, 8, 1, trials);
    p.fp32_avx2_all = fma_rate(chains_avx2_f32, 8, m.cores, trials);
    say("peak: FP64 AVX2 FMA");
    p.fp64_avx2_core = fma_rate(chains_avx2_f64, 4, 1, trials);
    p.fp64_avx2_all = fma_rate(chains_avx2_f64, 4, m.cores, trials);
  }
  if (has_isa(m, "avx512f")) {
    p.avx512 = true;
    say("peak: AVX-512 FMA");
    p.fp32_avx512_core = fma_rate(chains_avx512_f32, 16, 1, trials);
    p.fp32_avx512_all = fma_rate(chains_avx512_f32, 16, m.cores, trials);
    p.fp64_avx512_core = fma_rate(chains_avx512_f64, 8, 1, trials);
    p.fp64_avx512_all = fma_rate(chains_avx512_f64, 8, m.cores, trials);
  }
  const std::size_t bytes =
      std::min(std::max<std::size_t>(4 * l3_bytes(), std::size_t{64} << 20), std::size_t{512} << 20);
  p.triad_array_mib = static_cast<double>(bytes) / (1 << 20);
  say("peak: triad bandwidth (3 x " + std::to_string(bytes >> 20) + " MiB)");
  p.bandwidth_core = triad_rate(bytes / 8, 1, 5);
  p.bandwidth_all = triad_rate(bytes / 8, m.cores, 5);
  say("peak: last-level cache size (read bandwidth by working set)");
  p.llc_reported_bytes = static_cast<double>(l3_bytes());
  p.llc_bytes = measure_llc_bytes(say);
  return p;
}

std::string peak_to_json(const PeakResult& p) {
  nlohmann::json j = {{"fingerprint", p.fingerprint},
                      {"date", p.date},
                      {"cores", p.cores},
                      {"fp32_avx2_core", p.fp32_avx2_core},
                      {"fp32_avx2_all", p.fp32_avx2_all},
                      {"fp64_avx2_core", p.fp64_avx2_core},
                      {"fp64_avx2_all", p.fp64_avx2_all},
                      {"avx512", p.avx512},
                      {"fp32_avx512_core", p.fp32_avx512_core},
                      {"fp32_avx512_all", p.fp32_avx512_all},
                      {"fp64_avx512_core", p.fp64_avx512_core},
                      {"fp64_avx512_all", p.fp64_avx512_all},
                      {"bandwidth_core", p.bandwidth_core},
                      {"bandwidth_all", p.bandwidth_all},
                      {"triad_array_mib", p.triad_array_mib},
                      {"llc_bytes", p.llc_bytes},
                      {"llc_reported_bytes", p.llc_reported_bytes}};
  return j.dump(2) + "\n";
}

PeakResult peak_from_json(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    PeakResult p;
    p.fingerprint = j.at("fingerprint").get<std::string>();
    p.date = j.at("date").get<std::string>();
    p.cores = j.at("cores").get<int>();
    p.fp32_avx2_core = j.at("fp32_avx2_core").get<double>();
    p.fp32_avx2_all = j.at("fp32_avx2_all").get<double>();
    p.fp64_avx2_core = j.at("fp64_avx2_core").get<double>();
    p.fp64_avx2_all = j.at("fp64_avx2_all").get<double>();
    p.avx512 = j.at("avx512").get<bool>();
    p.fp32_avx512_core = j.at("fp32_avx512_core").get<double>();
    p.fp32_avx512_all = j.at("fp32_avx512_all").get<double>();
    p.fp64_avx512_core = j.at("fp64_avx512_core").get<double>();
    p.fp64_avx512_all = j.at("fp64_avx512_all").get<double>();
    p.bandwidth_core = j.at("bandwidth_core").get<double>();
    p.bandwidth_all = j.at("bandwidth_all").get<double>();
    p.triad_array_mib = j.value("triad_array_mib", 0.0);
    p.llc_bytes = j.value("llc_bytes", 0.0);
    p.llc_reported_bytes = j.value("llc_reported_bytes", 0.0);
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("peak cache is not valid: ") + e.what());
  }
}

std::optional<PeakResult> load_peak_cache(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  try {
    return peak_from_json(ss.str());
  } catch (const Error&) {
    return std::nullopt;  // a bad cache is re-measured, not fatal
  }
}

void save_peak_cache(const std::string& path, const PeakResult& p) { write_file_atomic(path, peak_to_json(p)); }

PeakResult cached_or_measured_peak(const std::string& cache_path, const MachineInfo& m, bool refresh,
                                   const std::function<void(const std::string&)>& progress) {
  if (!refresh)
    if (auto cached = load_peak_cache(cache_path);
        cached && cached->fingerprint == fingerprint(m) && cached->llc_bytes > 0)  // older caches lack the LLC
      return *cached;
  PeakResult p = measure_peak(m, progress);
  save_peak_cache(cache_path, p);
  return p;
}

double peak_for(const PeakResult& p, const std::string& kind, int threads) {
  double core = 0, all = 0;
  if (kind == "fp32") {
    core = p.avx512 ? std::max(p.fp32_avx512_core, p.fp32_avx2_core) : p.fp32_avx2_core;
    all = p.avx512 ? std::max(p.fp32_avx512_all, p.fp32_avx2_all) : p.fp32_avx2_all;
  } else if (kind == "fp64") {
    core = p.avx512 ? std::max(p.fp64_avx512_core, p.fp64_avx2_core) : p.fp64_avx2_core;
    all = p.avx512 ? std::max(p.fp64_avx512_all, p.fp64_avx2_all) : p.fp64_avx2_all;
  } else if (kind == "bandwidth") {
    core = p.bandwidth_core;
    all = p.bandwidth_all;
  } else if (kind == "device_fp32") {
    return p.device_fp32;
  } else if (kind == "device_f16") {
    return p.device_f16;
  } else if (kind == "device_bf16") {
    return p.device_bf16;
  } else if (kind == "device_bandwidth") {
    return p.device_bandwidth;
  } else {
    return 0;
  }
  if (threads <= 1) return core;
  if (threads >= p.cores) return all;
  return std::min(all, core * threads);
}

double roofline_bound(const PeakResult& p, int threads, double work_per_iter, double bytes_per_iter) {
  const double flops = peak_for(p, "fp32", threads), bw = peak_for(p, "bandwidth", threads);
  if (flops <= 0 || bw <= 0 || work_per_iter <= 0) return 0;
  if (bytes_per_iter <= 0) return flops;
  return std::min(flops, bw * work_per_iter / bytes_per_iter);
}

double row_peak(const PeakResult& p, const std::string& kind, int threads, double work_per_iter,
                double bytes_per_iter) {
  if (kind == "roofline") return roofline_bound(p, threads, work_per_iter, bytes_per_iter);
  return peak_for(p, kind, threads);
}

std::vector<std::pair<std::string, std::string>> peak_metadata(const PeakResult& p) {
  auto g = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", v * 1e-9);
    return std::string(b);
  };
  std::vector<std::pair<std::string, std::string>> md = {
      {"peak_fp32_avx2_gflops", g(p.fp32_avx2_core) + " per core, " + g(p.fp32_avx2_all) + " all cores"},
      {"peak_fp64_avx2_gflops", g(p.fp64_avx2_core) + " per core, " + g(p.fp64_avx2_all) + " all cores"},
      {"peak_avx512", p.avx512 ? "fp32 " + g(p.fp32_avx512_core) + "/" + g(p.fp32_avx512_all) + " fp64 " +
                                     g(p.fp64_avx512_core) + "/" + g(p.fp64_avx512_all) + " GFLOP/s core/all"
                               : "not available (CPU has no AVX-512F)"},
      {"peak_triad_gbs", g(p.bandwidth_core) + " per core, " + g(p.bandwidth_all) + " all cores"},
      {"peak_measured", p.date}};
  char rl[256];
  std::snprintf(rl, sizeof rl, "fp32=%.2f/%.2f fp64=%.2f/%.2f bw=%.2f/%.2f llc_mib=%.0f cores=%d",
                peak_for(p, "fp32", 1) * 1e-9, peak_for(p, "fp32", p.cores) * 1e-9, peak_for(p, "fp64", 1) * 1e-9,
                peak_for(p, "fp64", p.cores) * 1e-9, p.bandwidth_core * 1e-9, p.bandwidth_all * 1e-9,
                p.llc_bytes / (1 << 20), p.cores);
  md.emplace_back("roofline_peaks", rl);
  md.emplace_back("llc", llc_text(p));
  return md;
}

std::string llc_text(const PeakResult& p) {
  char b[160];
  std::snprintf(b, sizeof b, "%.0f MiB measured (read bandwidth drops to DRAM above it); %.0f MiB reported by the CPU",
                p.llc_bytes / (1 << 20), p.llc_reported_bytes / (1 << 20));
  return b;
}

std::string format_peak(const PeakResult& p) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "machine      %s (%d cores), measured %s\n", p.fingerprint.c_str(), p.cores,
                p.date.c_str());
  out << line;
  std::snprintf(line, sizeof line, "FP32 AVX2    %9.2f GFLOP/s per core  %9.2f GFLOP/s all cores\n",
                p.fp32_avx2_core * 1e-9, p.fp32_avx2_all * 1e-9);
  out << line;
  std::snprintf(line, sizeof line, "FP64 AVX2    %9.2f GFLOP/s per core  %9.2f GFLOP/s all cores\n",
                p.fp64_avx2_core * 1e-9, p.fp64_avx2_all * 1e-9);
  out << line;
  if (p.avx512) {
    std::snprintf(line, sizeof line, "FP32 AVX-512 %9.2f GFLOP/s per core  %9.2f GFLOP/s all cores\n",
                  p.fp32_avx512_core * 1e-9, p.fp32_avx512_all * 1e-9);
    out << line;
    std::snprintf(line, sizeof line, "FP64 AVX-512 %9.2f GFLOP/s per core  %9.2f GFLOP/s all cores\n",
                  p.fp64_avx512_core * 1e-9, p.fp64_avx512_all * 1e-9);
    out << line;
  } else {
    out << "AVX-512      not available (CPU has no AVX-512F)\n";
  }
  std::snprintf(line, sizeof line, "triad        %9.2f GB/s per core     %9.2f GB/s all cores (3 x %.0f MiB arrays)\n",
                p.bandwidth_core * 1e-9, p.bandwidth_all * 1e-9, p.triad_array_mib);
  out << line;
  out << "LLC          " << llc_text(p) << "\n";
  return out.str();
}

}  // namespace popper::bench
