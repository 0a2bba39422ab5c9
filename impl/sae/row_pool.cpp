// RowThreadPool over parallel::run (row_pool.hpp): the caller is worker 0,
// the persistent OpenMP team supplies the rest; one worker runs inline.
#include "impl/sae/row_pool.hpp"

#include <algorithm>

#include "impl/common/parallel.hpp"

namespace popper::sae {

RowThreadPool::RowThreadPool(unsigned threads, popper::cpu::Isa isa)
    : threads_(threads == 0 ? 1 : threads), isa_(popper::cpu::resolve(isa, "sae row kernels")) {}

void RowThreadPool::run(std::size_t n_tasks, const Task& fn, unsigned workers) const {
  if (n_tasks == 0) return;
  const int w = static_cast<int>(std::max(1u, std::min(workers, threads_)));
  popper::parallel::run(n_tasks, w, [&](std::size_t begin, std::size_t end, int worker) {
    for (std::size_t t = begin; t < end; ++t) fn(t, static_cast<unsigned>(worker));
  });
}

}  // namespace popper::sae
