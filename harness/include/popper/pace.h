/* The pace probe's loop: one fixed, register-only FMA loop, timed on the
 * calling thread. popper bench compare times it on a process's CPUs before
 * and after the process (bench/pace.hpp); the suites (popper/bench.hpp) and
 * the raw-C ceilings (popper/ceiling_cli.h) time it around each repetition of
 * a 1-thread row, where the host's share of the core can change within a
 * process. One loop for all three, so every reading is on one scale.
 * Header-only, C11 and C++. */
#ifndef POPPER_PACE_H
#define POPPER_PACE_H

#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* About 7 ms on a Zen 3 core (10 FMAs every 5 cycles): longer than a time
 * slice, so a thread competing for the CPU shows. */
#define POPPER_PACE_ITERATIONS 4500000L

/* acc = acc * m + c converges to 0.1: no denormal, no overflow, whatever n. */
#if defined(__x86_64__)
/* Ten independent chains cover the FMA latency on both pipes: bound by their throughput. */
__attribute__((noinline, unused, target("avx2,fma"))) static double popper_pace_loop_avx2(long n) {
  const __m256d m = _mm256_set1_pd(0.999999), c = _mm256_set1_pd(1e-7);
  __m256d a0 = _mm256_set1_pd(1.0), a1 = _mm256_set1_pd(1.1), a2 = _mm256_set1_pd(1.2), a3 = _mm256_set1_pd(1.3),
          a4 = _mm256_set1_pd(1.4), a5 = _mm256_set1_pd(1.5), a6 = _mm256_set1_pd(1.6), a7 = _mm256_set1_pd(1.7),
          a8 = _mm256_set1_pd(1.8), a9 = _mm256_set1_pd(1.9);
  for (long i = 0; i < n; ++i) {
    a0 = _mm256_fmadd_pd(a0, m, c), a1 = _mm256_fmadd_pd(a1, m, c), a2 = _mm256_fmadd_pd(a2, m, c);
    a3 = _mm256_fmadd_pd(a3, m, c), a4 = _mm256_fmadd_pd(a4, m, c), a5 = _mm256_fmadd_pd(a5, m, c);
    a6 = _mm256_fmadd_pd(a6, m, c), a7 = _mm256_fmadd_pd(a7, m, c), a8 = _mm256_fmadd_pd(a8, m, c);
    a9 = _mm256_fmadd_pd(a9, m, c);
  }
  const __m256d s = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)),
                                                _mm256_add_pd(_mm256_add_pd(a4, a5), _mm256_add_pd(a6, a7))),
                                  _mm256_add_pd(a8, a9));
  double out[4];
  _mm256_storeu_pd(out, s);
  return out[0] + out[1] + out[2] + out[3];
}
#endif

/* Without FMA: ten multiply-add chains, bound by their latency (they see a
 * rival on the CPU, not a sibling's use of the pipes). */
__attribute__((noinline, unused)) static double popper_pace_loop_portable(long n) {
  double a[10];
  for (int j = 0; j < 10; ++j) a[j] = 1.0 + 0.1 * j;
  for (long i = 0; i < n; ++i)
    for (int j = 0; j < 10; ++j) a[j] = a[j] * 0.999999 + 1e-7;
  double s = 0;
  for (int j = 0; j < 10; ++j) s += a[j];
  return s;
}

/* Seconds of the loop on the calling thread: the AVX2 FMA loop where the CPU
 * has it and `widest` is set, else the portable one. */
static inline double popper_pace_seconds(int widest) {
  static volatile long iterations = POPPER_PACE_ITERATIONS; /* read each time: no two loops are folded into one */
  volatile double sink;                                     /* the result is used, so the loop is kept */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
#if defined(__x86_64__)
  if (widest && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    sink = popper_pace_loop_avx2(iterations);
  else
#endif
    sink = popper_pace_loop_portable(iterations);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  (void)sink;
  return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

/* The pace around one repetition of a 1-thread row: the loop before it and
 * after it, the slower of the two; a probe that ended under 2 ms before this
 * repetition began (the previous one's "after") serves as its "before". Call
 * popper_pace_begin() before the repetition, popper_pace_end() after it.
 * Rows on more threads are not probed here: their own workers may still spin
 * on the CPUs after the timed loop, and the probe would read the kernel. */
struct popper_pace_state {
  double last;     /* seconds of the last probe */
  double last_end; /* CLOCK_MONOTONIC seconds when it ended (0: none yet) */
  double before;
};

static inline struct popper_pace_state* popper_pace_state_here(void) {
  static struct popper_pace_state s;
  return &s;
}

static inline double popper_pace_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void popper_pace_begin(void) {
  struct popper_pace_state* s = popper_pace_state_here();
  if (s->last_end > 0 && popper_pace_clock() - s->last_end < 2e-3) s->before = s->last;
  else s->before = popper_pace_seconds(1);
}

static inline double popper_pace_end(void) {
  struct popper_pace_state* s = popper_pace_state_here();
  s->last = popper_pace_seconds(1);
  s->last_end = popper_pace_clock();
  return s->before > s->last ? s->before : s->last;
}

#endif
