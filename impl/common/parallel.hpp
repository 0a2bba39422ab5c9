// The one parallel runtime every hand kernel uses: a process-wide pool of
// persistent worker threads (no creation per call; parallel.cpp says why it
// is not an OpenMP region: a shared machine descheduled its workers).
//
//   parallel::run(n, threads, body)  calls body(begin, end, worker) on
//   min(threads, n) workers over contiguous ranges that cover [0, n) in
//   order: worker w gets [w*n/W, (w+1)*n/W). The split depends only on
//   (n, W), never on timing, so a kernel whose items are independent gives
//   the same bits for every thread count.
//
// threads <= 1 or n <= 1 runs inline on the caller: no pool involved, so the
// single-thread path is exactly the serial loop (and what callgrind counts).
// The ranges are fixed by (n, W); whichever thread is free runs a range, and
// `worker` is the range's index (the key for per-worker scratch), so a
// descheduled thread delays nothing it has not started. A run() inside a
// body runs inline.
// Vendor libraries called inside a body must run single-threaded
// (parallel::BlasThreadsScope in the wrapper), or threads multiply.
//
// Choosing the thread count is the caller's job, from its problem size: each
// kernel passes min(requested, work / its minimum work per thread), so a call
// too small to amortize waking the team runs on one thread and is never
// slower with more threads requested.
#pragma once
#include <cstddef>
#include <functional>
#include <vector>

namespace popper::parallel {

using RangeBody = std::function<void(std::size_t begin, std::size_t end, int worker)>;

void run(std::size_t n, int threads, const RangeBody& body);

// Returns once `threads` threads (the caller's included) run a pool job, or
// after 1 ms: a run() that follows at once finds the workers spinning, as a
// run() right after another does, not asleep. For a caller that idled long
// enough for the workers to sleep and does not want to time their waking
// (a bench's cold row, after its eviction). threads <= 1: nothing.
void wake(int threads);

// The CPUs the calling thread may run on (its affinity; the online CPUs when
// that cannot be read): the pool's size, and the default for `threads`.
int hardware_threads();

// Like run, but balances by cost: cost[i] >= 0 is item i's work; ranges are
// contiguous and split where the cumulative cost crosses w/W of the total.
void run_weighted(const std::vector<double>& cost, int threads, const RangeBody& body);

// The size rules above, switched off: while a ScopedExactThreads lives (any
// thread), kernels use exactly the thread count they were asked for, so a
// falsifier of thread-count independence is never vacuous on a small input.
// POPPER_EXACT_THREADS=1 in the environment does the same for a process.
bool exact_threads();
class ScopedExactThreads {
 public:
  ScopedExactThreads();
  ~ScopedExactThreads();
  ScopedExactThreads(const ScopedExactThreads&) = delete;
  ScopedExactThreads& operator=(const ScopedExactThreads&) = delete;
};

// While a ScopedSpinningWorkers(threads) lives (any thread), the workers a
// run() on `threads` threads takes part spin for the next run() instead of
// going to sleep (it wakes them if they sleep); the others sleep as before. For a bench's cold row, which
// idles the workers through each eviction (milliseconds) where back-to-back
// calls, a decode's GEMVs, never let them sleep: a core left idle that long
// starts the next call slower (on a 2-vCPU Zen 4 guest the woken worker's half
// of a 2-thread Q4_K GEMV ran 1.5x longer than the caller's), and ggml's
// threadpool polls through the same gap by default.
class ScopedSpinningWorkers {
 public:
  explicit ScopedSpinningWorkers(int threads);
  ~ScopedSpinningWorkers();
  ScopedSpinningWorkers(const ScopedSpinningWorkers&) = delete;
  ScopedSpinningWorkers& operator=(const ScopedSpinningWorkers&) = delete;

 private:
  int previous_;
};

// Sets OpenBLAS's thread count for the scope and restores it after (RAII):
// wrapped tiers that loop over independent problems run the library on one
// thread and parallelise across problems, as a user would.
class BlasThreadsScope {
 public:
  explicit BlasThreadsScope(int threads);
  ~BlasThreadsScope();
  BlasThreadsScope(const BlasThreadsScope&) = delete;
  BlasThreadsScope& operator=(const BlasThreadsScope&) = delete;

 private:
  int previous_;
};

}  // namespace popper::parallel
