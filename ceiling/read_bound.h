/* The physical bound of a memory-bound ceiling row, in C (the rule of
 * impl/q4k/bandwidth_bound.hpp, which the C++ tiers use and
 * contracts/q4k/q4k-gemv-v1.yaml FALSIFY-Q4K-013 tests):
 *   read bandwidth B_r of the row's byte count on the same threads (each
 *   repetition the fastest way of workloads/common/read_sum.h), measured over
 *   `reps` repetitions before the timed calls and again after them; the
 *   row is invalid when bytes / median(t) exceeds (1 + POPPER_READ_BOUND_TIE)
 *   * max(B_r) * max(B_r) / min(B_r) of the probe that saw more
 *   (ceiling_read_bound_again), and still does after up to three more probes
 *   (ceiling_bound_check); a footprint whose share per thread fits a core's
 *   own cache is not judged (impl/q4k/read_bound_rule.h).
 * Header-only (static functions), C11 + POSIX threads. */
#ifndef POPPER_CEILING_READ_BOUND_H
#define POPPER_CEILING_READ_BOUND_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popper/ceiling_cli.h"
#include "impl/common/huge_pages.h"
#include "impl/q4k/read_bound_rule.h"
#include "workloads/common/read_sum.h"

struct ceiling_read_slice {
  const uint64_t* p;
  size_t n;
  int passes;
  int way; /* workloads/common/read_sum.h */
  uint64_t sum;
};

static void* ceiling_read_slice_run(void* arg) {
  struct ceiling_read_slice* s = (struct ceiling_read_slice*)arg;
  s->sum = 0;
  for (int k = 0; k < s->passes; ++k) s->sum += popper_read_sum(s->way, s->p, s->n);
  return NULL;
}

/* Bound in bytes per second (0 when it cannot be measured). */
static double ceiling_read_bound(double bytes, int threads, int reps) {
  const size_t n = (size_t)(bytes / 8.0) < 1024 ? 1024 : (size_t)(bytes / 8.0);
  /* On huge pages as the hand kernels' packed weights (impl/common/huge_pages.h). */
  uint64_t* buf = (uint64_t*)popper_buffer_alloc(n * sizeof *buf, 64, 1);
  if (!buf) return 0;
  for (size_t i = 0; i < n; ++i) buf[i] = i * 0x9E3779B97F4A7C15ULL;
  if (threads < 1) threads = 1;
  if (threads > 64) threads = 64;
  /* A small buffer is read several times per repetition (at least 64 MiB in
   * all), so thread start-up does not count as reading time. */
  const int passes = (int)((64.0 * 1024 * 1024) / (double)(n * 8) + 1);
  double lo = 0, hi = 0;
  volatile uint64_t sink = 0;
  for (int r = 0; r < reps + 1; ++r) {
    double bw = 0; /* the fastest way of this repetition */
    for (int way = 0; way < POPPER_READ_WAYS; ++way) {
      if (!popper_read_way_supported(way)) continue;
      pthread_t tid[64];
      struct ceiling_read_slice s[64];
      const double t0 = ceiling_now();
      for (int t = 0; t < threads; ++t) {
        const size_t b = n * (size_t)t / (size_t)threads, e = n * (size_t)(t + 1) / (size_t)threads;
        s[t].p = buf + b;
        s[t].n = e - b;
        s[t].passes = passes;
        s[t].way = way;
        s[t].sum = 0;
        pthread_create(&tid[t], NULL, ceiling_read_slice_run, &s[t]);
      }
      for (int t = 0; t < threads; ++t) pthread_join(tid[t], NULL);
      const double dt = ceiling_now() - t0;
      size_t read = 0;
      for (int t = 0; t < threads; ++t) sink = sink + s[t].sum, read += s[t].n - s[t].n % 32;
      if (dt > 0 && (double)read * 8.0 * passes / dt > bw) bw = (double)read * 8.0 * passes / dt;
    }
    if (r == 0 || bw <= 0) continue; /* the first pass warms up */
    if (lo == 0 || bw < lo) lo = bw;
    if (bw > hi) hi = bw;
  }
  (void)sink;
  popper_buffer_free(buf, n * sizeof *buf, 1);
  return lo > 0 ? hi * (hi / lo) : hi;
}

/* The bound measured again after the timed calls, after a pause that lets a
 * library's spinning workers sleep, and the larger of the two: the probe lasts
 * milliseconds, and one slowed by a passing neighbour on a shared machine
 * must not make an honest row "invalid". */
static double ceiling_read_bound_again(double before, double bytes, int threads, int reps) {
  const struct timespec pause = {0, 100 * 1000 * 1000};
  nanosleep(&pause, NULL);
  const double after = ceiling_read_bound(bytes, threads, reps);
  return after > before ? after : before;
}

static int ceiling_cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Writes "incorrect: invalid: ..." into verdict when the median of the
 * seconds-per-iteration samples beats the bound; returns 1 then, else 0.
 * A row above the bound is condemned only when it stays above up to three
 * longer probes (10 repetitions each, the largest bound kept), as
 * q4k::confirmed_bandwidth_verdict: a probe slowed as a whole by a neighbour
 * must not call a correct library incorrect; a row that skips bytes stays
 * above every probe. */
static int ceiling_bound_check(double bytes, double* seconds, int n, double bound, int threads, char* verdict,
                               size_t size) {
  if (n <= 0 || bound <= 0 || !popper_read_bound_applies(bytes, threads, popper_private_cache_bytes())) return 0;
  qsort(seconds, (size_t)n, sizeof *seconds, ceiling_cmp_double);
  const double median = n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
  const double achieved = median > 0 ? bytes / median : 0;
  const double tie = 1 + POPPER_READ_BOUND_TIE;
  int probes = 0;
  for (; achieved > bound * tie && probes < 3; ++probes) bound = ceiling_read_bound_again(bound, bytes, threads, 10);
  if (achieved <= bound * tie) return 0;
  snprintf(verdict, size,
           "incorrect: invalid: %.2f GB/s exceeds the read bound %.2f GB/s by more than %.0f%% after %d more probes",
           achieved * 1e-9, bound * 1e-9, 100 * POPPER_READ_BOUND_TIE, probes);
  return 1;
}

#endif
