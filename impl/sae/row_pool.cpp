// RowThreadPool: workers sleep on a generation counter; the caller thread
// also takes tasks, so threads == 1 spawns nothing.
#include "sae/row_pool.hpp"

namespace popper::sae {

RowThreadPool::RowThreadPool(unsigned threads) : threads_(threads == 0 ? 1 : threads) {
  for (unsigned w = 1; w < threads_; ++w) workers_.emplace_back([this, w] { worker_loop(w); });
}

RowThreadPool::~RowThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void RowThreadPool::drain(unsigned worker) {
  std::unique_lock<std::mutex> lk(mu_);
  while (next_ < n_tasks_) {
    const std::size_t t = next_++;
    const Task* fn = task_;
    lk.unlock();
    try {
      (*fn)(t, worker);
    } catch (...) {
      std::lock_guard<std::mutex> g(mu_);
      if (!error_) error_ = std::current_exception();
    }
    lk.lock();
    if (++finished_ == n_tasks_) done_cv_.notify_all();
  }
}

void RowThreadPool::worker_loop(unsigned worker) {
  unsigned long long seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      start_cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    drain(worker);
  }
}

void RowThreadPool::run(std::size_t n_tasks, const Task& fn) {
  if (n_tasks == 0) return;
  if (threads_ == 1) {
    for (std::size_t t = 0; t < n_tasks; ++t) fn(t, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    task_ = &fn;
    n_tasks_ = n_tasks;
    next_ = 0;
    finished_ = 0;
    error_ = nullptr;
    ++generation_;
  }
  start_cv_.notify_all();
  drain(0);
  std::exception_ptr err;
  {
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return finished_ == n_tasks_; });
    task_ = nullptr;
    n_tasks_ = 0;
    err = error_;
  }
  if (err) std::rethrow_exception(err);
}

}  // namespace popper::sae
