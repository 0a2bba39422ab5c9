// solve_batched_k1_border and the pack-level dispatch: dimensions and ridges
// are checked first (usage errors throw), then one kernel serves the class;
// Auto tries the device and declines to the Hand kernel.
#include <cmath>
#include <string>

#include "impl/arrow/kernels.hpp"
#include "impl/common/device.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::arrow {

namespace {
void check_ridges(double rho_t, double rho_beta) {
  if (!std::isfinite(rho_t)) throw InvalidArgument("arrow: rho_t must be finite, got " + std::to_string(rho_t));
  if (!std::isfinite(rho_beta))
    throw InvalidArgument("arrow: rho_beta must be finite, got " + std::to_string(rho_beta));
}

template <class SolveOne>
std::vector<ArrowResult> solve_dense_each(const BatchedK1Pack& pack, std::span<const AtomSlice> slices, double rho_t,
                                          double rho_beta, unsigned threads, SolveOne solve_one) {
  std::vector<std::optional<ArrowResult>> tmp(slices.size());
  std::vector<double> cost(slices.size());
  for (std::size_t a = 0; a < slices.size(); ++a) {
    const double N = static_cast<double>(slices[a].rows * slices[a].d + slices[a].k);
    cost[a] = N * N * N + 1.0;
  }
  // Independent problems: threads across atoms, the vendor library single-
  // threaded inside each (else its threads multiply with ours on tiny factors).
  const popper::parallel::BlasThreadsScope one_blas_thread(1);
  run_partitioned(cost, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t a = begin; a < end; ++a) tmp[a].emplace(solve_one(view_of(pack, slices[a]), rho_t, rho_beta));
  });
  std::vector<ArrowResult> out;
  out.reserve(slices.size());
  for (auto& r : tmp) out.push_back(std::move(*r));
  return out;
}
}  // namespace

std::vector<ArrowResult> solve_pack(const BatchedK1Pack& pack, double rho_t, double rho_beta,
                                    const ArrowSolveOptions& options, bool* declined) {
  check_ridges(rho_t, rho_beta);
  const std::vector<AtomSlice> slices = index_pack(pack);
  if (declined) *declined = false;
  switch (options.kernel) {
    case ArrowKernel::Reference:
      return solve_dense_each(pack, slices, rho_t, rho_beta, options.threads, reference::solve_dense);
    case ArrowKernel::Lapack:
      return solve_dense_each(pack, slices, rho_t, rho_beta, options.threads, lapack::solve_dense);
    default: break;
  }
  RawOutputs out;
  out.resize_for(slices);
  if (options.kernel == ArrowKernel::Auto) {
    if (run_cuda(pack, slices, rho_t, rho_beta, out))
      return finalize(pack, slices, out, rho_t, rho_beta, options.threads);
    if (declined) *declined = true;
    out.resize_for(slices);  // a failed device attempt leaves nothing behind
  }
  if (options.kernel == ArrowKernel::Auto && POPPER_MUTANT("arrow-decline-uses-lapack"))
    return solve_dense_each(pack, slices, rho_t, rho_beta, options.threads, lapack::solve_dense);
  if (options.kernel == ArrowKernel::Structured) run_structured(pack, slices, rho_t, rho_beta, options.threads, out);
  else run_hand(pack, slices, rho_t, rho_beta, options.threads, out, options.isa);
  return finalize(pack, slices, out, rho_t, rho_beta, options.threads);
}

std::vector<ArrowResult> solve_pack_cuda(const BatchedK1Pack& pack, double rho_t, double rho_beta, unsigned cpu_threads,
                                         bool* declined) {
  return solve_pack(pack, rho_t, rho_beta, ArrowSolveOptions{ArrowKernel::Auto, cpu_threads}, declined);
}

std::vector<ArrowResult> solve_batched_k1_border(std::span<const ArrowSystem> systems, double rho_t, double rho_beta,
                                                 const ArrowSolveOptions& options) {
  check_ridges(rho_t, rho_beta);
  const BatchedK1Pack pack = pack_systems(systems);  // checks every atom's dims before any work
  return solve_pack(pack, rho_t, rho_beta, options);
}

std::string backend_of(ArrowKernel kernel) {
  switch (kernel) {
    case ArrowKernel::Reference: return "reference";
    case ArrowKernel::Lapack: return "lapacke";
    case ArrowKernel::Structured: return "cpu:scalar";
    case ArrowKernel::Auto:
      if (popper::device::cuda_status().usable()) return popper::device::cuda_status().backend_tag();
      [[fallthrough]];
    case ArrowKernel::Hand: return hand_uses_avx2() ? "cpu:avx2" : "cpu:scalar";
  }
  return "unknown";
}

}  // namespace popper::arrow
