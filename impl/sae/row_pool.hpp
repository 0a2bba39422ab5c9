// The Schur apply's handle on the one parallel runtime (common/parallel.hpp):
// a thread budget and the ISA of the row kernels, no threads of its own.
// run(n, fn, workers) calls fn(task, worker) for every task in [0, n) on at
// most `workers` (<= threads()) workers over static contiguous task ranges,
// and returns when all are done. Results are deterministic only because
// callers give tasks disjoint outputs whose summation order does not depend
// on which worker ran them.
#pragma once
#include <cstddef>
#include <functional>

#include "impl/common/cpu_features.hpp"

namespace popper::sae {

class RowThreadPool {
 public:
  using Task = std::function<void(std::size_t task, unsigned worker)>;
  // threads >= 1 (0 is treated as 1); isa picks the row kernels (Auto: widest).
  explicit RowThreadPool(unsigned threads, popper::cpu::Isa isa = popper::cpu::Isa::Auto);

  unsigned threads() const { return threads_; }
  popper::cpu::Isa isa() const { return isa_; }
  void run(std::size_t n_tasks, const Task& fn) const { run(n_tasks, fn, threads_); }
  void run(std::size_t n_tasks, const Task& fn, unsigned workers) const;

 private:
  unsigned threads_;
  popper::cpu::Isa isa_;
};

}  // namespace popper::sae
