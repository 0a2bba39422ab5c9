// The persistent worker pool behind parallel::run (parallel.hpp).
//
// Why not an OpenMP parallel region: its join barrier waits for every team
// thread, including one the OS has not scheduled yet. On a machine shared
// with other work (2 cores, load 4-8) a 2-thread apply of 2.5 ms can take
// 18 ms of CPU and 100 ms of wall time, spinning for a descheduled worker.
// Here the work is split the same static way, but the ranges ("slots") are
// claimed by whichever thread is free: the caller claims slots too, and
// waits only for slots that a running thread claimed. A worker that wakes
// late finds nothing left and goes back to sleep. Which thread runs a slot
// never changes its numbers: the split and the slot index (passed as
// `worker`, the key of per-worker scratch) are fixed.
//
// Protocol: `state` packs (generation << 32 | slots << 16 | next slot); the
// caller publishes a job by storing (generation + 1, its slots, 0) in one
// word, and workers claim with a CAS on that word. A worker holding a stale
// generation can never claim a slot of a later job, and every claim is
// checked against the slot count of its own job: were the count kept apart,
// a worker that read a finished job's state and then the next job's larger
// count would claim a slot of the finished job, run the next job's body
// early, and the slot would run twice. `done` counts finished slots; the
// caller returns when done == slots. Workers spin briefly for the next job,
// then sleep in std::atomic::wait (a futex on Linux).
#include "impl/common/parallel.hpp"

#include <immintrin.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

// OpenBLAS's thread-count API (declared here so this file needs no cblas.h).
extern "C" {
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
}

namespace popper::parallel {

BlasThreadsScope::BlasThreadsScope(int threads) : previous_(openblas_get_num_threads()) {
  openblas_set_num_threads(threads < 1 ? 1 : threads);
}
BlasThreadsScope::~BlasThreadsScope() { openblas_set_num_threads(previous_); }

namespace {
std::atomic<int>& exact_scopes() {
  static std::atomic<int> n{0};
  return n;
}
}  // namespace

bool exact_threads() {
  static const bool from_env = [] {
    const char* v = std::getenv("POPPER_EXACT_THREADS");
    return v && *v && *v != '0';
  }();
  return from_env || exact_scopes().load(std::memory_order_relaxed) > 0;
}
ScopedExactThreads::ScopedExactThreads() { exact_scopes().fetch_add(1); }
ScopedExactThreads::~ScopedExactThreads() { exact_scopes().fetch_sub(1); }

namespace {
// Workers 0 .. n-1 spin rather than sleep (ScopedSpinningWorkers).
std::atomic<int>& spinning_workers() {
  static std::atomic<int> n{0};
  return n;
}
}  // namespace
ScopedSpinningWorkers::ScopedSpinningWorkers(int threads)
    : previous_(spinning_workers().exchange(std::max(threads - 1, 0))) {
  wake(threads);  // those asleep now spin from here on
}
ScopedSpinningWorkers::~ScopedSpinningWorkers() { spinning_workers().store(previous_); }

int hardware_threads() {
  // The CPUs this thread may run on, not those online: a process pinned to 2
  // CPUs of a 16-CPU host would otherwise keep 15 workers, every one of which
  // a job wakes to contend for those 2 CPUs.
  cpu_set_t allowed;
  if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) > 0) return CPU_COUNT(&allowed);
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

namespace {

constexpr std::uint64_t kMaxSlots = 0xFFFF;
constexpr std::uint64_t generation_of(std::uint64_t s) { return s >> 32; }
constexpr std::uint64_t slots_of(std::uint64_t s) { return (s >> 16) & kMaxSlots; }
constexpr std::uint64_t next_slot_of(std::uint64_t s) { return s & kMaxSlots; }
thread_local bool t_in_pool = false;  // nested run() calls execute inline

class Pool {
 public:
  static Pool& instance() {
    static Pool pool(hardware_threads() - 1);
    return pool;
  }

  // Runs body over the slot ranges bounds[w]..bounds[w+1], w < slots; the
  // caller takes part. Returns after every slot finished; rethrows the first
  // exception a slot threw.
  void execute(const std::vector<std::size_t>& bounds, const RangeBody& body) {
    std::unique_lock<std::mutex> busy(caller_mu_, std::try_to_lock);
    const int slots = static_cast<int>(bounds.size()) - 1;
    // Another caller owns the pool, or more slots than the state word holds: run here.
    if (!busy.owns_lock() || workers_.empty() || static_cast<std::uint64_t>(slots) > kMaxSlots) {
      for (int w = 0; w < slots; ++w)
        if (bounds[w + 1] > bounds[w]) body(bounds[w], bounds[w + 1], w);
      return;
    }
    bounds_ = &bounds;
    body_ = &body;
    error_ = nullptr;
    done_.store(0, std::memory_order_relaxed);
    const std::uint64_t gen = (generation_of(state_.load(std::memory_order_relaxed)) + 1) & 0xFFFFFFFF;
    state_.store(gen << 32 | static_cast<std::uint64_t>(slots) << 16, std::memory_order_release);  // publish
    if (sleepers_.load(std::memory_order_acquire) > 0) state_.notify_all();
    t_in_pool = true;
    while (claim_and_run(gen)) {
    }
    t_in_pool = false;
    // Wait only for slots a running thread claimed (all are claimed by now).
    for (int spin = 0; done_.load(std::memory_order_acquire) < static_cast<std::uint64_t>(slots); ++spin) {
      if (spin < 4096) _mm_pause();
      else std::this_thread::yield();
    }
    if (error_) std::rethrow_exception(error_);
  }

 private:
  explicit Pool(int workers) {
    // Each worker starts from generation 0, not from whatever it reads once it
    // runs: a pool destroyed before a worker got going (a short process) has
    // already advanced the generation, and that worker would sleep through it.
    for (int i = 0; i < workers; ++i) workers_.emplace_back([this, i] { worker_loop(i, 0); });
  }
  ~Pool() {
    stop_.store(true);
    state_.fetch_add(std::uint64_t{1} << 32);
    state_.notify_all();
    for (auto& t : workers_) t.join();
  }

  // Claims the next slot of generation `gen` and runs it; false when none is left.
  bool claim_and_run(std::uint64_t gen) {
    std::uint64_t s = state_.load(std::memory_order_acquire);
    for (;;) {
      if (generation_of(s) != gen || next_slot_of(s) >= slots_of(s)) return false;
      if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire)) break;
    }
    const auto w = static_cast<std::size_t>(next_slot_of(s));
    const auto& b = *bounds_;
    try {
      if (b[w + 1] > b[w]) (*body_)(b[w], b[w + 1], static_cast<int>(w));
    } catch (...) {
      std::lock_guard<std::mutex> g(error_mu_);
      if (!error_) error_ = std::current_exception();
    }
    done_.fetch_add(1, std::memory_order_acq_rel);
    return true;
  }

  void worker_loop(int index, std::uint64_t seen) {
    t_in_pool = true;
    for (;;) {
      // Spin a little (a kernel often calls run() again at once), then sleep;
      // held spinning by a ScopedSpinningWorkers that covers this worker.
      std::uint64_t s = state_.load(std::memory_order_acquire);
      for (int spin = 0;
           generation_of(s) == seen && (spin < 2000 || index < spinning_workers().load(std::memory_order_relaxed));
           ++spin) {
        _mm_pause();
        s = state_.load(std::memory_order_acquire);
      }
      while (generation_of(s) == seen && !stop_.load()) {
        sleepers_.fetch_add(1, std::memory_order_acq_rel);
        state_.wait(s, std::memory_order_acquire);
        sleepers_.fetch_sub(1, std::memory_order_acq_rel);
        s = state_.load(std::memory_order_acquire);
      }
      if (stop_.load()) return;
      seen = generation_of(s);
      while (claim_and_run(seen)) {
      }
    }
  }

  std::vector<std::thread> workers_;
  std::mutex caller_mu_, error_mu_;
  std::atomic<std::uint64_t> state_{0};
  std::atomic<std::uint64_t> done_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  const std::vector<std::size_t>* bounds_ = nullptr;
  const RangeBody* body_ = nullptr;
  std::exception_ptr error_;
};

void run_bounds(const std::vector<std::size_t>& bounds, const RangeBody& body) {
  const int workers = static_cast<int>(bounds.size()) - 1;
  if (workers <= 1 || t_in_pool) {
    for (int w = 0; w < workers; ++w)
      if (bounds[w + 1] > bounds[w]) body(bounds[w], bounds[w + 1], w);
    return;
  }
  Pool::instance().execute(bounds, body);
}

}  // namespace

void run(std::size_t n, int threads, const RangeBody& body) {
  const std::size_t workers =
      std::max<std::size_t>(1, std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), n));
  std::vector<std::size_t> bounds(workers + 1);
  for (std::size_t w = 0; w <= workers; ++w) bounds[w] = w * n / workers;
  run_bounds(bounds, body);
}

void wake(int threads) {
  if (threads <= 1) return;
  std::atomic<int> arrived{0};
  // One slot a thread; each waits for the others, so the job ends only once
  // every worker has woken (the bound covers a worker that never comes).
  run(static_cast<std::size_t>(threads), threads, [&](std::size_t, std::size_t, int) {
    arrived.fetch_add(1, std::memory_order_acq_rel);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
    while (arrived.load(std::memory_order_acquire) < threads && std::chrono::steady_clock::now() < until) _mm_pause();
  });
}

void run_weighted(const std::vector<double>& cost, int threads, const RangeBody& body) {
  const std::size_t n = cost.size();
  const std::size_t workers =
      std::max<std::size_t>(1, std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), n));
  double total = 0;
  for (double c : cost) total += std::max(c, 0.0);
  std::vector<std::size_t> bounds(workers + 1, n);
  bounds[0] = 0;
  double acc = 0;
  std::size_t w = 1;
  for (std::size_t i = 0; i < n && w < workers; ++i) {
    acc += std::max(cost[i], 0.0);
    while (w < workers && acc >= total * static_cast<double>(w) / static_cast<double>(workers)) bounds[w++] = i + 1;
  }
  run_bounds(bounds, body);
}

}  // namespace popper::parallel
