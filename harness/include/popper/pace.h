/* The pace probe's loop: a fixed amount of work, timed on the calling
 * thread. popper bench compare times it on a process's CPUs before and after
 * the process (bench/pace.hpp); the suites (popper/bench.hpp) and the raw-C
 * ceilings (popper/ceiling_cli.h) time it around each repetition of a
 * 1-thread row, where the host's share of the core can change within a
 * process. One loop for all three, so every reading is on one scale.
 *
 * Its FMAs take their addends from an L1-resident buffer, so it is bound by
 * the FP pipes and the load ports at once, and a tenant on the core's other
 * hyperthread slows it whichever of the two it uses. The load ports are the
 * ones that move small kernels: over 600 repetitions on a Zen 3 guest,
 * OpenBLAS's 1-thread 64^3 DGEMM read 15 us or 18-19 us; an FMA loop with
 * constant addends read within 6% in both states, this loop 1.06-1.09x its
 * fastest (median) in the first and 1.32-1.5x in the second.
 * Header-only, C11 and C++. */
#ifndef POPPER_PACE_H
#define POPPER_PACE_H

#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* About 7 ms on a Zen 3 core (10 FMAs and 10 loads every 5 cycles): longer
 * than a time slice, so a thread competing for the CPU shows. */
#define POPPER_PACE_ITERATIONS 4500000L
/* Per iteration, ten 32-byte loads (40 doubles); 25 iterations a pass over
 * the buffer, 8000 bytes: in every L1 data cache. */
#define POPPER_PACE_STEP 40
#define POPPER_PACE_ROUND 25
#define POPPER_PACE_DOUBLES (POPPER_PACE_ROUND * POPPER_PACE_STEP)

/* The addends (zeros), behind a volatile pointer so no compiler folds the loads. */
static inline const double* popper_pace_addends(void) {
  static const double buf[POPPER_PACE_DOUBLES] __attribute__((aligned(64))) = {0};
  static const double* volatile opaque = buf;
  return opaque;
}

/* acc = acc * m + addend decays from 1-2 toward addend / (1 - m): no overflow,
 * and no denormal below 7e8 iterations. The loops are timed, so a sanitizer
 * build leaves their loads unchecked: clang at -O0 checks every vector they
 * move, and the probes would spend the budgets of the runs they pace. */
#if defined(__x86_64__)
/* Ten independent chains cover the FMA latency on both pipes, each FMA's
 * addend a 32-byte load: bound by the FMA and the load throughput. */
__attribute__((noinline, unused, no_sanitize("address"), target("avx2,fma"))) static double popper_pace_loop_avx2(
    const double* addends, long n) {
  const __m256d m = _mm256_set1_pd(0.999999);
  __m256d a0 = _mm256_set1_pd(1.0), a1 = _mm256_set1_pd(1.1), a2 = _mm256_set1_pd(1.2), a3 = _mm256_set1_pd(1.3),
          a4 = _mm256_set1_pd(1.4), a5 = _mm256_set1_pd(1.5), a6 = _mm256_set1_pd(1.6), a7 = _mm256_set1_pd(1.7),
          a8 = _mm256_set1_pd(1.8), a9 = _mm256_set1_pd(1.9);
  for (long i = 0; i < n; i += POPPER_PACE_ROUND) {
    const double* p = addends;
    for (int k = 0; k < POPPER_PACE_ROUND; ++k, p += POPPER_PACE_STEP) {
      a0 = _mm256_fmadd_pd(a0, m, _mm256_load_pd(p)), a1 = _mm256_fmadd_pd(a1, m, _mm256_load_pd(p + 4));
      a2 = _mm256_fmadd_pd(a2, m, _mm256_load_pd(p + 8)), a3 = _mm256_fmadd_pd(a3, m, _mm256_load_pd(p + 12));
      a4 = _mm256_fmadd_pd(a4, m, _mm256_load_pd(p + 16)), a5 = _mm256_fmadd_pd(a5, m, _mm256_load_pd(p + 20));
      a6 = _mm256_fmadd_pd(a6, m, _mm256_load_pd(p + 24)), a7 = _mm256_fmadd_pd(a7, m, _mm256_load_pd(p + 28));
      a8 = _mm256_fmadd_pd(a8, m, _mm256_load_pd(p + 32)), a9 = _mm256_fmadd_pd(a9, m, _mm256_load_pd(p + 36));
    }
  }
  const __m256d s = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)),
                                                _mm256_add_pd(_mm256_add_pd(a4, a5), _mm256_add_pd(a6, a7))),
                                  _mm256_add_pd(a8, a9));
  double out[4];
  _mm256_storeu_pd(out, s);
  return out[0] + out[1] + out[2] + out[3];
}
#endif

/* Without FMA: ten multiply-add chains with loaded addends, bound by their
 * latency (they see a rival on the CPU, not a sibling's use of the pipes). */
__attribute__((noinline, unused, no_sanitize("address"))) static double popper_pace_loop_portable(const double* addends,
                                                                                                  long n) {
  double a[10];
  for (int j = 0; j < 10; ++j) a[j] = 1.0 + 0.1 * j;
  for (long i = 0; i < n; i += POPPER_PACE_ROUND)
    for (int k = 0; k < POPPER_PACE_ROUND; ++k)
      for (int j = 0; j < 10; ++j) a[j] = a[j] * 0.999999 + addends[POPPER_PACE_STEP * k + 4 * j];
  double s = 0;
  for (int j = 0; j < 10; ++j) s += a[j];
  return s;
}

/* Whether the probe runs the AVX2 loop: where the CPU has AVX2 and FMA and `widest` is set. */
static inline int popper_pace_runs_avx2(int widest) {
#if defined(__x86_64__)
  return widest && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  (void)widest;
  return 0;
#endif
}

static inline double popper_pace_loop(int widest, const double* addends, long n) {
#if defined(__x86_64__)
  if (popper_pace_runs_avx2(widest)) return popper_pace_loop_avx2(addends, n);
#endif
  return popper_pace_loop_portable(addends, n);
}

static inline double popper_pace_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds of the loop on the calling thread. */
static inline double popper_pace_seconds(int widest) {
  static volatile long iterations = POPPER_PACE_ITERATIONS; /* read each time: no two loops are folded into one */
  volatile double sink;                                     /* the result is used, so the loop is kept */
  const double* addends = popper_pace_addends();
  const double t0 = popper_pace_clock();
  sink = popper_pace_loop(widest, addends, iterations);
  (void)sink;
  return popper_pace_clock() - t0;
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
