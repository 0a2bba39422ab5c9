// Shared pieces of every bench_<family> suite (header-only: a .cpp in a
// bench/ subfolder would become an executable).
//
//  - popper_bench_call_<tier>(f): the timed call, never inlined, so the CI gate
//    can count exactly the kernel's instructions with
//    valgrind --tool=callgrind --toggle-collect='*popper_bench_call_hand*'.
//  - fixed_iterations(): POPPER_BENCH_ITERATIONS=N pins Google Benchmark's
//    iteration count (1.7 has no "Nx" min-time syntax) for the gate.
//  - injected_slowdown(): POPPER_BENCH_INJECT_SLOWDOWN=<fraction f> makes the
//    hand tier do f times its own work: popper_bench_call_hand repeats the
//    kernel call once whenever the accumulated debt reaches a whole call, so
//    over N calls it runs N + floor(N f) of them. The extra work is the
//    kernel itself, so it scales with the kernel in every family and thread
//    configuration (N = 4 or 8 gate iterations makes f = 0.25 exact).
//  - run_suite(argc, argv, backends): the end of every suite's main; it first
//    keeps freed memory in the process (keep_freed_memory).
#pragma once
#include <benchmark/benchmark.h>

#include <malloc.h>

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

namespace popper::suite {

// Written by each wrapper with its own value: the bodies differ, so the
// compiler's identical-code folding cannot merge the three into one symbol
// (which would make callgrind attribute every tier to one name).
inline volatile int popper_bench_last_tier = 0;

// Fraction of extra work the hand tier must do (0 when unset or invalid).
inline double injected_slowdown() {
  const char* v = std::getenv("POPPER_BENCH_INJECT_SLOWDOWN");
  if (!v || !*v) return 0;
  const double f = std::strtod(v, nullptr);
  return f > 0 && f < 100 ? f : 0;
}

template <class F>
[[gnu::noinline]] void popper_bench_call_hand(F& f) {
  popper_bench_last_tier = 1;
  f();
  static const double slowdown = injected_slowdown();
  static double debt = 0;
  for (debt += slowdown; debt >= 1.0; debt -= 1.0) f();  // the injected work: whole extra calls
  benchmark::ClobberMemory();
}
template <class F>
[[gnu::noinline]] void popper_bench_call_wrapped(F& f) {
  popper_bench_last_tier = 2;
  f();
  benchmark::ClobberMemory();
}
template <class F>
[[gnu::noinline]] void popper_bench_call_reference(F& f) {
  popper_bench_last_tier = 3;
  f();
  benchmark::ClobberMemory();
}

// 0 when unset: Google Benchmark chooses the iteration count.
inline int fixed_iterations() {
  const char* v = std::getenv("POPPER_BENCH_ITERATIONS");
  if (!v || !*v) return 0;
  const long n = std::strtol(v, nullptr, 10);
  return n > 0 && n < 1000000 ? static_cast<int>(n) : 0;
}

// Deterministic fill in [-1, 1): the same LCG as the ceiling programs.
template <class T>
void fill_uniform(std::vector<T>& v, std::uint64_t seed) {
  std::uint64_t x = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (auto& e : v) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    e = static_cast<T>(static_cast<double>(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
}

// The backend a tier's rows ran on, as the suite reports it ("openblas:Haswell", "cpu:avx2").
struct TierBackend {
  const char* tier;  // hand | wrapped | reference | ...
  std::string backend;
};

// Freed memory stays in the process: no allocation is a private mmap, and the
// heap is never trimmed. Google Benchmark calls a benchmark function again for
// every repetition and sizing run, so a suite builds and frees its operands
// (and its verification copies) between timed loops. On a virtual machine that
// hands freed pages back to its host, the first call after freeing 75 MB took
// 130 ms instead of 3 (bench_q4k big_32768x4096 on a 2-core EPYC VM): a 0.2 s
// repetition of such calls measured 2-2.5x slow. The ceiling programs do the same
// (ceiling_open), so every tier is timed in the same state.
inline void keep_freed_memory() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
}

// The end of every suite's main: each tier's backend goes into the JSON
// context as popper_backend_<tier> (the bench tooling reads it), then Google
// Benchmark runs what the suite registered. Returns main's exit code.
inline int run_suite(int argc, char** argv, std::initializer_list<TierBackend> backends) {
  for (const TierBackend& b : backends) benchmark::AddCustomContext(std::string("popper_backend_") + b.tier, b.backend);
  keep_freed_memory();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace popper::suite
