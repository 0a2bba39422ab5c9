// Read bandwidth of a footprint on the workers a kernel uses: the least time
// any kernel must spend to read those bytes (header-only, as fill.hpp).
// Memory-bound suites (q4k, decode) judge each timed row against it
// (judge_read_bound): a row faster than this is physically impossible.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <span>
#include <thread>
#include <vector>

#include "impl/common/huge_pages.hpp"
#include "impl/common/parallel.hpp"
#include "impl/q4k/bandwidth_bound.hpp"
#include "impl/q4k/read_bound_rule.h"
#include "popper/bench_protocol.hpp"
#include "popper/cache_evict.h"
#include "workloads/common/read_sum.h"

namespace popper::suite {

// Read bandwidth of `bytes` on `threads` workers (bytes per second per
// repetition): a streaming sum, the least any kernel must spend to read them.
// Cold: every timed pass reads the bytes once, after the caches were evicted
// (popper/cache_evict.h, outside the timing), as a cold row's call meets them.
// Each repetition times every way of reading this CPU supports (read_sum.h)
// and keeps the fastest. A timing counts only if its ranges ran on as many
// distinct threads as asked: parallel::run lets the caller take the range of
// a worker that wakes late, and a "2-thread" read done by one thread is half
// the bound (27.1 GB/s at 2 threads against 27.8 at one, where other 2-thread
// probes read 56-57). Such a timing is retried up to 3 times.
inline std::vector<double> read_bandwidth(std::size_t bytes, int threads, int reps,
                                          popper::bench::CacheMode cache = popper::bench::CacheMode::Warm) {
  const bool cold = cache == popper::bench::CacheMode::Cold;
  const std::size_t n = std::max<std::size_t>(bytes / sizeof(std::uint64_t), 1024);
  // On huge pages, as the hand kernels' packed weights: a probe on small pages is no bound for them.
  std::vector<std::uint64_t, memory::HugePageAllocator<std::uint64_t>> buf(n);
  for (std::size_t i = 0; i < n; ++i) buf[i] = i * 0x9E3779B97F4A7C15ULL;
  // A small buffer is read several times per repetition (at least 64 MiB in
  // all), so dispatching the workers does not count as reading time.
  const int passes =
      cold ? 1 : static_cast<int>(64.0 * 1024 * 1024 / static_cast<double>(n * sizeof(std::uint64_t)) + 1);
  const std::size_t ranges = std::min(n / 32, static_cast<std::size_t>(std::max(threads, 1)));  // parallel::run's
  std::vector<double> out;
  volatile std::uint64_t sink = 0;
  for (int r = 0; r < reps + 1; ++r) {
    double best = 0;
    for (int way = 0; way < POPPER_READ_WAYS; ++way) {
      if (!popper_read_way_supported(way)) continue;
      for (int attempt = 0; attempt < 4; ++attempt) {
        std::vector<std::uint64_t> partial(ranges, 0);
        std::vector<std::thread::id> ran(ranges);
        if (cold && popper_evict() < popper_evict_bytes()) return {};  // no cold bound without an eviction
        const auto t0 = std::chrono::steady_clock::now();
        popper::parallel::run(n / 32, threads, [&](std::size_t b, std::size_t e, int w) {
          ran[static_cast<std::size_t>(w)] = std::this_thread::get_id();
          for (int k = 0; k < passes; ++k)
            partial[static_cast<std::size_t>(w)] += popper_read_sum(way, buf.data() + 32 * b, 32 * (e - b));
        });
        const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        for (auto p : partial) sink = sink + p;
        std::sort(ran.begin(), ran.end());
        if (std::unique(ran.begin(), ran.end()) != ran.end()) continue;  // fewer threads read than asked
        best = std::max(best, double(n / 32 * 32 * sizeof(std::uint64_t)) * passes / dt);
        break;
      }
    }
    if (r > 0 && best > 0) out.push_back(best);  // the first pass warms up
  }
  (void)sink;
  return out;
}

// The probe again, after a pause that lets the kernel's workers sleep.
inline std::vector<double> read_bandwidth_after_pause(std::size_t bytes, int threads, int reps) {
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return read_bandwidth(bytes, threads, reps);
}

// Whether judge_read_bound probes again after the timed calls before judging.
// A suite that keeps its kernel (and the kernel's worker threads) alive from
// one timed loop to the next must not probe between them: a ggml backend left
// idle through a probe ran its 2-thread mat-vec 6-8x slower for the rest of its
// life (ceiling/ggml_q4k_raw.c). Such a suite probes once, before the kernel
// exists, and probes again only for a row above that bound.
enum class ProbeAfterTiming { always, only_above_bound };

// The verdict of a timed row on `bytes` per call (`probe_bytes` the footprint
// `read` was measured on): the probe again after the timed calls, appended to
// `read` (a probe lasts milliseconds, and one slowed by a passing neighbour on
// a shared machine must not make an honest row "invalid"), and for a row still
// above the bound, up to three longer probes before it is condemned. A
// footprint each thread's share of which fits a core's own cache is not judged
// (impl/q4k/read_bound_rule.h).
inline q4k::BandwidthVerdict judge_read_bound(double bytes, std::span<const double> seconds, std::vector<double>& read,
                                              std::size_t probe_bytes, int threads,
                                              ProbeAfterTiming after = ProbeAfterTiming::always) {
  if (read.empty() || !popper_read_bound_applies(double(probe_bytes), threads, popper_private_cache_bytes()))
    return q4k::bandwidth_verdict(bytes, seconds, {});  // no bound was asked for, or none holds
  if (after == ProbeAfterTiming::always) {
    const auto again = read_bandwidth_after_pause(probe_bytes, threads, 5);
    read.insert(read.end(), again.begin(), again.end());
  }
  return q4k::confirmed_bandwidth_verdict(bytes, seconds, read, 3,
                                          [&] { return read_bandwidth_after_pause(probe_bytes, threads, 10); });
}

}  // namespace popper::suite
