// The bench API: what a family's Google Benchmark suite is written with, the
// one header it includes. A family declares its axes (shapes, precisions,
// thread counts, tiers) on a Family, and one body per case:
//
//   popper::bench::Family("dot")
//       .shapes({"n_4k", "n_1m"}).precisions({"f32"}).threads({1})
//       .tiers({Tier::Wrapped, Tier::Hand})
//       .add([](benchmark::State& st, const popper::bench::Case& c) {
//         ...build operands, run the tier once, check it...
//         popper::bench::measure(st, c, verdict, [&] { kernel(...); }, {.work = 2.0 * n, .bytes = 8.0 * n});
//       });
//   return popper::bench::run_suite(argc, argv, {{Tier::Hand, "cpu:avx2"}, ...});
//
// From those the framework makes the cross product and each benchmark's name
// (popper/bench_protocol.hpp: the one format the harness parses), skips a row
// with its typed verdict when the check failed, times each tier's call
// through a never-inlined function per tier (popper_bench_call_<tier>: the
// symbols the instruction gate's callgrind toggle counts), and adds the
// self-tests' injected slowdown to the hand tier.
//
// Environment read here: POPPER_BENCH_ITERATIONS=N pins the iteration count
// (the gate), POPPER_BENCH_INJECT_SLOWDOWN=f makes the hand tier do (1 + f)
// times its work (the check's self-test).
#pragma once
#include <benchmark/benchmark.h>

#include <malloc.h>

#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "popper/bench_protocol.hpp"

namespace popper::bench {

// 0 when unset or invalid: Google Benchmark chooses the iteration count.
inline int fixed_iterations() {
  const char* v = std::getenv("POPPER_BENCH_ITERATIONS");
  if (!v || !*v) return 0;
  const long n = std::strtol(v, nullptr, 10);
  return n > 0 && n < 1000000 ? static_cast<int>(n) : 0;
}

// Fraction of extra work the hand tier must do (0 when unset or invalid).
inline double injected_slowdown() {
  const char* v = std::getenv("POPPER_BENCH_INJECT_SLOWDOWN");
  if (!v || !*v) return 0;
  const double f = std::strtod(v, nullptr);
  return f > 0 && f < 100 ? f : 0;
}

// Written by each wrapper with its own value: the bodies differ, so the
// compiler's identical-code folding cannot merge them into one symbol (which
// would make callgrind attribute every tier to one name).
inline volatile int popper_bench_last_tier = 0;

// The hand tier repeats the call whenever the injected debt reaches a whole
// call: over N calls it runs N + floor(N f) of them, work that scales with
// the kernel in every family (N = 4 or 8 gate iterations makes f = 0.25 exact).
template <class F>
[[gnu::noinline]] void popper_bench_call_hand(F& f) {
  popper_bench_last_tier = 1;
  f();
  static const double slowdown = injected_slowdown();
  static double debt = 0;
  for (debt += slowdown; debt >= 1.0; debt -= 1.0) f();
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
template <class F>
[[gnu::noinline]] void popper_bench_call_pack(F& f) {
  popper_bench_last_tier = 4;
  f();
  benchmark::ClobberMemory();
}
template <class F>
[[gnu::noinline]] void popper_bench_call_device(F& f) {
  popper_bench_last_tier = 5;
  f();
  benchmark::ClobberMemory();
}

// One timed call of `tier`. A suite has no ceiling tier (the raw-C programs
// time it), so Ceiling times like Reference.
template <class F>
void call_tier(Tier tier, F& f) {
  switch (tier) {
    case Tier::Hand: popper_bench_call_hand(f); break;
    case Tier::Wrapped: popper_bench_call_wrapped(f); break;
    case Tier::Pack: popper_bench_call_pack(f); break;
    case Tier::Device: popper_bench_call_device(f); break;
    case Tier::Reference:
    case Tier::Ceiling: popper_bench_call_reference(f); break;
  }
}

// One point of a family's cross product.
struct Case {
  std::string family;
  Tier tier = Tier::Hand;
  int shape = 0;  // index into the family's shape axis
  std::string shape_name, precision;
  int threads = 1;
  BenchName name() const { return {family, tier, shape_name, precision, threads}; }
};

// Work per call, reported as the counters the harness reads: `work` in the
// family's unit (FLOP or items), `bytes` the compulsory traffic of the roofline.
struct Work {
  double work = 0;
  double bytes = 0;
  const char* unit = "flop";  // flop | items: the family descriptor's work_unit
};

// Ends a row that will not be timed: Google Benchmark reports it as an error
// whose message is the verdict's label.
inline void skip(benchmark::State& state, const Verdict& v) { state.SkipWithError(v.label.c_str()); }

// Whether a row with this verdict is timed: verified, or not verified (the
// oracle itself, or a check over budget that says what it did instead).
inline bool timeable(const Verdict& v) { return v.kind == VerdictKind::Verified || v.kind == VerdictKind::NotVerified; }

// Times `call` as the case's tier when the verdict allows, else skips the
// row with the verdict.
template <class F>
void measure(benchmark::State& state, const Case& c, const Verdict& v, F&& call, const Work& w) {
  if (!timeable(v)) return skip(state, v);
  for (auto _ : state) call_tier(c.tier, call);
  state.SetLabel(v.label);
  if (w.work > 0) state.counters[w.unit] = benchmark::Counter(w.work);
  if (w.bytes > 0) state.counters["bytes"] = benchmark::Counter(w.bytes);
}

// A family's axes and its per-case body; add() registers the cross product.
class Family {
 public:
  using Body = std::function<void(benchmark::State&, const Case&)>;
  using Keep = std::function<bool(const Case&)>;

  explicit Family(std::string name) : name_(std::move(name)) {}
  Family& shapes(std::vector<std::string> names) {
    shapes_ = std::move(names);
    return *this;
  }
  // The names of a workload table's shapes (any array of structs with a `name`).
  template <class Shape>
  Family& shapes(const Shape* table, int count) {
    shapes_.clear();
    for (int i = 0; i < count; ++i) shapes_.emplace_back(table[i].name);
    return *this;
  }
  Family& precisions(std::vector<std::string> p) {
    precisions_ = std::move(p);
    return *this;
  }
  Family& threads(std::vector<int> t) {
    threads_ = std::move(t);
    return *this;
  }
  Family& tiers(std::vector<Tier> t) {
    tiers_ = std::move(t);
    return *this;
  }
  // Only the cases `keep` accepts are registered (a reference tier on small shapes only).
  Family& where(Keep keep) {
    keep_ = std::move(keep);
    return *this;
  }
  Family& unit(benchmark::TimeUnit u) {
    unit_ = u;
    return *this;
  }
  // The body times each iteration itself (state.SetIterationTime: device events).
  Family& manual_time() {
    manual_time_ = true;
    return *this;
  }

  // Registers shape-major, then tier, precision and threads: the order the
  // suites always ran in.
  std::vector<Case> cases() const {
    std::vector<Case> out;
    for (std::size_t s = 0; s < shapes_.size(); ++s)
      for (Tier t : tiers_)
        for (const std::string& p : precisions_)
          for (int n : threads_) {
            Case c{name_, t, static_cast<int>(s), shapes_[s], p, n};
            if (!keep_ || keep_(c)) out.push_back(std::move(c));
          }
    return out;
  }

  void add(const Body& body) const {
    const int iterations = fixed_iterations();
    for (Case& c : cases()) {
      const std::string name = format_bench_name(c.name());
      auto* b = benchmark::RegisterBenchmark(name.c_str(), [body, c](benchmark::State& st) { body(st, c); });
      if (manual_time_) b->UseManualTime();
      else b->UseRealTime();
      b->Unit(unit_);
      if (iterations > 0) b->Iterations(iterations);
    }
  }

 private:
  std::string name_;
  std::vector<std::string> shapes_, precisions_;
  std::vector<int> threads_{1};
  std::vector<Tier> tiers_;
  Keep keep_;
  benchmark::TimeUnit unit_ = benchmark::kMillisecond;
  bool manual_time_ = false;
};

// Freed memory stays in the process: no allocation is a private mmap, and the
// heap is never trimmed. Google Benchmark calls a benchmark again for every
// repetition and sizing run, so a suite that frees its operands between
// timed loops would, on a VM that hands freed pages back to its host, time
// the first calls after re-faulting them (a 75 MB operand: 130 ms instead of
// 3). The ceiling programs do the same (ceiling_open).
inline void keep_freed_memory() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
}

// The backend a tier's rows ran on, as the suite reports it ("openblas:Haswell", "cpu:avx2").
struct TierBackend {
  Tier tier;
  std::string backend;
};

// The end of every suite's main: each tier's backend goes into the JSON
// context as popper_backend_<tier>, then Google Benchmark runs what the suite
// registered. Returns main's exit code.
inline int run_suite(int argc, char** argv, std::initializer_list<TierBackend> backends) {
  for (const TierBackend& b : backends)
    benchmark::AddCustomContext(std::string("popper_backend_").append(to_string(b.tier)), b.backend);
  keep_freed_memory();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace popper::bench
