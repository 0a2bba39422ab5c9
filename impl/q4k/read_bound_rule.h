/* When a read-bandwidth probe bounds a timed row (the bandwidth_bound of
 * contracts/q4k/q4k-gemv-v1.yaml), shared by the C++ tiers
 * (impl/q4k/bandwidth_bound.hpp, bench/common/read_bandwidth.hpp) and the C
 * ceilings (ceiling/read_bound.h). C11 and C++. */
#ifndef POPPER_IMPL_Q4K_READ_BOUND_RULE_H
#define POPPER_IMPL_Q4K_READ_BOUND_RULE_H

#include <unistd.h>

/* Mutation point of FALSIFY-Q4K-013 (as in workloads/common/read_sum.h). */
#ifdef __cplusplus
#include "popper/mutant.hpp"
#else
#ifndef POPPER_MUTANT
#define POPPER_MUTANT(name) 0
#endif
#endif

/* How far above its probe a row may read before the probe condemns it: the
 * ways of workloads/common/read_sum.h are generic loops, and a tuned kernel
 * can tie or slightly beat them, while a row that skips bytes or mistimes its
 * calls reads far faster. */
#define POPPER_READ_BOUND_TIE 0.10

/* Bytes of one core's own (L2) cache as the C library reports it; 0 unknown. */
static inline double popper_private_cache_bytes(void) {
  const long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return v > 0 ? (double)v : 0.0;
}

/* Whether a probe of `bytes` on `threads` bounds a row: not when each
 * thread's share fits a core's own cache (private_cache bytes, 0: unknown).
 * There a core reads at its load ports' rate, which no generic loop is sure
 * to reach: OpenBLAS's SGEMV read 1 MB held in a 2 MiB L2 at 113 GB/s
 * against every way's 102 (an Intel Xeon). Beyond it the bytes stream from
 * the shared cache or DRAM, whose rate the probe measures. */
static inline int popper_read_bound_applies(double bytes, int threads, double private_cache) {
  const double share = bytes / (threads < 1 ? 1 : threads);
  /* Mutation point (read-bound-share-ignores-threads): the whole footprint against one core's cache. */
  if (POPPER_MUTANT("read-bound-share-ignores-threads")) return !(private_cache > 0 && bytes <= private_cache);
  return !(private_cache > 0 && share <= private_cache);
}

#endif
