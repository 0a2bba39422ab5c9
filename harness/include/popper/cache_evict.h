/* Evicting the caches before each timed call of a cold row
 * (popper/bench_protocol.hpp CacheMode): one rule for the suites
 * (popper/bench.hpp) and the raw-C ceilings (popper/ceiling_cli.h), so both
 * sides of a cold ratio evict alike. Header-only, C11 and C++. */
#ifndef POPPER_CACHE_EVICT_H
#define POPPER_CACHE_EVICT_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Bytes read before each cold call: POPPER_BENCH_EVICT_BYTES when set (bench
 * compare passes four times the LLC its probe measured: twice the most the
 * LLC can be, as the probe doubles its sizes), else twice the L3 the system
 * reports, within [32 MiB, 512 MiB] (a VM may report its host's whole L3). */
static inline size_t popper_evict_bytes(void) {
  const size_t lo = (size_t)32 << 20, hi = (size_t)512 << 20;
  const char* v = getenv("POPPER_BENCH_EVICT_BYTES");
  if (v && *v) {
    const double b = atof(v);
    if (b >= (double)(1 << 20) && b <= 16.0 * (double)hi) return (size_t)b;
  }
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  const size_t want = l3 > 0 ? 2 * (size_t)l3 : lo;
  return want < lo ? lo : want > hi ? hi : want;
}

/* Reads one word of every cache line of a buffer of popper_evict_bytes()
 * (allocated and written on the first call), so what the previous call left
 * in the caches is evicted. Returns the bytes read. */
static inline size_t popper_evict(void) {
  static unsigned long long* buf;
  static size_t lines;
  static volatile unsigned long long sink;
  if (!buf) {
    lines = popper_evict_bytes() / 64;
    buf = (unsigned long long*)malloc(lines * 64);
    if (!buf) {
      fprintf(stderr, "popper: cannot allocate %zu bytes to evict the caches\n", lines * 64);
      exit(1);
    }
    for (size_t i = 0; i < lines * 8; ++i) buf[i] = 1;
  }
  unsigned long long sum = 0;
  for (size_t i = 0; i < lines; ++i) sum += buf[i * 8];
  sink = sum;               /* volatile: the reads happen however the result is used */
  return (size_t)sink * 64; /* every word is 1: one per line read */
}

#endif
