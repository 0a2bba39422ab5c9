// A small persistent thread pool for the Schur apply: run(n, fn) calls
// fn(task, worker) for every task in [0, n) and returns when all are done.
// Results are deterministic only because callers give tasks disjoint outputs
// whose summation order does not depend on which worker ran them.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace popper::sae {

class RowThreadPool {
 public:
  using Task = std::function<void(std::size_t task, unsigned worker)>;
  explicit RowThreadPool(unsigned threads);  // threads >= 1 (0 is treated as 1)
  ~RowThreadPool();
  RowThreadPool(const RowThreadPool&) = delete;
  RowThreadPool& operator=(const RowThreadPool&) = delete;

  unsigned threads() const { return threads_; }
  void run(std::size_t n_tasks, const Task& fn);

 private:
  void worker_loop(unsigned worker);
  void drain(unsigned worker);
  unsigned threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const Task* task_ = nullptr;
  std::size_t n_tasks_ = 0, next_ = 0, finished_ = 0;
  unsigned long long generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace popper::sae
