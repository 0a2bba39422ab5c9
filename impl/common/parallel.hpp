// The one parallel runtime every hand kernel uses: a process-wide OpenMP team
// (persistent threads, no creation per call).
//
//   parallel::run(n, threads, body)  calls body(begin, end, worker) on
//   min(threads, n) workers over contiguous ranges that cover [0, n) in
//   order: worker w gets [w*n/W, (w+1)*n/W). The split depends only on
//   (n, W), never on timing, so a kernel whose items are independent gives
//   the same bits for every thread count.
//
// threads <= 1 or n <= 1 runs inline on the caller: no OpenMP region, so the
// single-thread path is exactly the serial loop (and what callgrind counts).
// Vendor libraries called inside a body must run single-threaded
// (parallel::BlasThreadsScope in the wrapper), or threads multiply.
#pragma once
#include <cstddef>
#include <functional>
#include <vector>

namespace popper::parallel {

using RangeBody = std::function<void(std::size_t begin, std::size_t end, int worker)>;

void run(std::size_t n, int threads, const RangeBody& body);

// Workers the machine offers (online CPUs); the upper bound for `threads`.
int hardware_threads();

// Like run, but balances by cost: cost[i] >= 0 is item i's work; ranges are
// contiguous and split where the cumulative cost crosses w/W of the total.
void run_weighted(const std::vector<double>& cost, int threads, const RangeBody& body);

}  // namespace popper::parallel
