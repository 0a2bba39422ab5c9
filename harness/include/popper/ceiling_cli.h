/* What every ceiling program shares: arguments, timing, the deterministic fill
 * and the CSV rows of the bench producer protocol (baselines/README.md).
 *
 *   ceiling_<name> [--shape NAME]... [--reps N] [--threads T] [--precision P] [--min-time S]
 *                  [--cache warm|cold] [--list-shapes] [--probe]
 *
 * --probe prints the vendor configuration the library selected in this
 * environment ("# config: <name>") and exits without running a kernel: the
 * harness uses it to learn which kernels a setting (OPENBLAS_CORETYPE,
 * BLIS_ARCH_TYPE) really loads before timing anything (vendors.hpp).
 * stdout: the header line, then one row per repetition
 *   family,tier,backend,shape,precision,threads,rep,iterations,seconds_per_iter,
 *   flop_per_iter,bytes_per_iter,verdict,pace_seconds
 * (pace_seconds: the pace probe around that repetition on a 1-thread row,
 * popper/pace.h; 0 when not probed)
 * --min-time: seconds one repetition lasts at least (default 0.2; bench
 * compare passes its own, as it does to the suites).
 * --cache cold: every timed call starts with its operands out of the caches
 * (popper_evict, not timed), as popper/bench.hpp times a suite's cold rows.
 * Only a program that set ceiling_cold_supported accepts it.
 * stderr: progress. A program that cannot run here prints "# skipped: <why>"
 * as its first stdout line and exits 0. Header-only (static functions), C11. */
#ifndef POPPER_CEILING_CLI_H
#define POPPER_CEILING_CLI_H

#define _POSIX_C_SOURCE 200809L
#ifndef _DEFAULT_SOURCE /* and madvise, MADV_HUGEPAGE: the read probe's buffer (impl/common/huge_pages.h) */
#define _DEFAULT_SOURCE 1
#endif
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "popper/cache_evict.h"
#include "popper/ceiling_count.h"
#include "popper/pace.h"
#include "popper/turns.h"

#define CEILING_MAX_FILTERS 64

struct ceiling_args {
  const char* filters[CEILING_MAX_FILTERS];
  int nfilters;
  int reps;              /* >= 1 */
  int threads;           /* >= 1 */
  int list;              /* --list-shapes */
  int probe;             /* --probe */
  const char* precision; /* NULL: every precision */
  int cold;              /* --cache cold */
};

/* Set to 1 by a program whose timing loop honours args.cold, before parsing. */
static int ceiling_cold_supported = 0;

/* Seconds on CLOCK_MONOTONIC. */
static double ceiling_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds one repetition lasts at least (--min-time). */
static double ceiling_min_rep_seconds = 0.2;

/* Set by ceiling_parse_args under --cache cold. */
static int ceiling_cold_mode = 0;

/* Seconds one popper_evict takes, measured once (cold runs only). */
static double ceiling_evict_seconds(void) {
  static double seconds = -1;
  if (seconds < 0) {
    popper_evict(); /* the first call allocates and writes the buffer */
    const double t0 = ceiling_now();
    popper_evict();
    seconds = ceiling_now() - t0;
  }
  return seconds;
}

/* Iterations per repetition so that one repetition lasts at least
 * ceiling_min_rep_seconds, given one call's seconds
 * (ceiling_repetition_iterations measures them). A cold
 * repetition counts its evictions too, as popper/bench.hpp's cold rows do:
 * a call far shorter than the eviction would otherwise make it last many
 * times the min time. */
static long ceiling_iterations(double one_call_seconds) {
  const double min_rep = ceiling_min_rep_seconds;
  const double per_iter = one_call_seconds + (ceiling_cold_mode ? ceiling_evict_seconds() : 0);
  long iters = per_iter > 0 ? (long)(min_rep / per_iter) + 1 : 1;
  return iters < 1 ? 1 : iters;
}

/* Deterministic fill in [-1, 1): the 64-bit LCG the bench suites also use
 * (popper::bench::fill_uniform, popper/bench_protocol.hpp), so every tier
 * sees the same data. */
static void ceiling_fill(void* buf, size_t count, int is_f64, unsigned long long seed) {
  unsigned long long x = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (size_t i = 0; i < count; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const double v = (double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    if (is_f64) ((double*)buf)[i] = v;
    else ((float*)buf)[i] = (float)v;
  }
}

static double ceiling_pace_seconds = 0; /* the last timed repetition's pace; 0 when not probed */

/* Set once a repetition on several threads left a thread of this process
 * running POPPER_TURN_IDLE_WAIT_SECONDS after its timed loop: in turns that
 * thread runs beside the other tiers' repetitions, on their CPUs, and slows
 * them alone. Every row printed after it is invalid (ceiling_row_verdict),
 * as popper/bench.hpp makes a suite's row. */
static int ceiling_threads_left_running = 0;

/* Set once a cold call was timed after an eviction that read less than
 * popper_evict_bytes() (its buffer could not be allocated): that row and the
 * ones after it are invalid, as popper/bench.hpp makes a suite's. */
static int ceiling_not_evicted = 0;

/* Around a repetition a program times itself: on one thread, the pace
 * around it (popper/pace.h) goes to ceiling_pace_seconds for its row; after
 * it, a process run in turns hands the CPUs on. */
static inline void ceiling_pace_begin(const struct ceiling_args* a) {
  if (a->threads == 1) popper_pace_begin();
}
static inline void ceiling_pace_end(const struct ceiling_args* a) {
  ceiling_pace_seconds = a->threads == 1 ? popper_pace_end() : 0;
  if (a->threads > 1 && popper_turn_wait_idle()) ceiling_threads_left_running = 1;
  popper_turn_yield(); /* the next process run in turns times its repetition now (popper/turns.h) */
}

/* The verdict a row is printed with: the program's own, or invalid once a
 * repetition left a thread running (ceiling_threads_left_running) or timed a
 * cold call the caches were not evicted for (ceiling_not_evicted). */
static inline const char* ceiling_row_verdict(const char* verdict) {
  if (ceiling_threads_left_running) return "invalid: " POPPER_TURN_LEFT_RUNNING;
  return ceiling_not_evicted ? "invalid: " POPPER_NOT_EVICTED : verdict;
}

/* Seconds per call over `iters` calls of call(ctx): timed as one batch
 * (warm), or each call alone after popper_evict, which is not timed (cold),
 * between ceiling_pace_begin and ceiling_pace_end. A warm batch follows one
 * untimed call, as a suite's timed loop follows its check's call
 * (popper/bench.hpp): the first call after the other side's turn finds the
 * caches holding the other's operands and a library's workers asleep. */
static double ceiling_time_calls(const struct ceiling_args* a, long iters, void (*call)(void*), void* ctx) {
  ceiling_pace_begin(a);
  double total = 0;
  if (!a->cold) {
    call(ctx);
    const double t0 = ceiling_now();
    for (long it = 0; it < iters; ++it) call(ctx);
    total = ceiling_now() - t0;
  } else {
    for (long it = 0; it < iters; ++it) {
      if (popper_evict() < popper_evict_bytes()) ceiling_not_evicted = 1;
      const double t0 = ceiling_now();
      call(ctx);
      total += ceiling_now() - t0;
    }
  }
  ceiling_pace_end(a);
  return total / (double)iters;
}

/* Iterations per repetition of call(ctx), so that one lasts at least
 * --min-time. Warm, from a batch timed after a call, grown tenfold until it
 * lasts a tenth of the min time, as Google Benchmark sizes the suites'
 * repetitions: one call after set-up is no steady call (at 2 threads it also
 * wakes the library's workers), and sized from it a 64^3 repetition lasted
 * half the suites'. Cold, from one call after an eviction (ceiling_iterations). */
static long ceiling_repetition_iterations(const struct ceiling_args* a, void (*call)(void*), void* ctx) {
  if (a->cold) {
    popper_evict();
    const double t0 = ceiling_now();
    call(ctx);
    return ceiling_iterations(ceiling_now() - t0);
  }
  call(ctx);
  for (long n = 1;; n *= 10) {
    const double t0 = ceiling_now();
    for (long it = 0; it < n; ++it) call(ctx);
    const double t = ceiling_now() - t0;
    if (t >= 0.1 * ceiling_min_rep_seconds || n >= 100000000L) return ceiling_iterations(t / (double)n);
  }
}

/* 0: run; 1: --help printed (exit 0); 2: bad arguments, message printed (exit 2). */
static int ceiling_parse_args(int argc, char** argv, struct ceiling_args* a, const char* program) {
  memset(a, 0, sizeof *a);
  a->reps = 5;
  a->threads = 1;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (strcmp(arg, "--list-shapes") == 0) {
      a->list = 1;
    } else if (strcmp(arg, "--probe") == 0) {
      a->probe = 1;
    } else if (i + 1 < argc && strcmp(arg, "--shape") == 0) {
      if (a->nfilters == CEILING_MAX_FILTERS) {
        fprintf(stderr, "%s: too many --shape\n", program);
        return 2;
      }
      a->filters[a->nfilters++] = argv[++i];
    } else if (i + 1 < argc && strcmp(arg, "--reps") == 0) {
      a->reps = ceiling_parse_count(argv[++i], CEILING_MAX_REPS);
    } else if (i + 1 < argc && strcmp(arg, "--threads") == 0) {
      a->threads = ceiling_parse_count(argv[++i], CEILING_MAX_THREADS);
    } else if (i + 1 < argc && strcmp(arg, "--precision") == 0) {
      a->precision = argv[++i];
    } else if (i + 1 < argc && strcmp(arg, "--cache") == 0) {
      const char* mode = argv[++i];
      if (strcmp(mode, "cold") != 0 && strcmp(mode, "warm") != 0) {
        fprintf(stderr, "%s: --cache is warm or cold, not '%s'\n", program, mode);
        return 2;
      }
      a->cold = ceiling_cold_mode = strcmp(mode, "cold") == 0;
      if (a->cold && !ceiling_cold_supported) {
        fprintf(stderr, "%s: does not time cold (--cache cold)\n", program);
        return 2;
      }
    } else if (i + 1 < argc && strcmp(arg, "--min-time") == 0) {
      ceiling_min_rep_seconds = atof(argv[++i]);
      if (!(ceiling_min_rep_seconds > 0)) {
        fprintf(stderr, "%s: --min-time must be > 0 seconds\n", program);
        return 2;
      }
    } else {
      const int help = strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
      if (!help) fprintf(stderr, "%s: unknown or incomplete argument: %s\n", program, arg);
      fprintf(help ? stdout : stderr,
              "usage: %s [--shape NAME]... [--reps N] [--threads T] [--precision P] [--min-time S] "
              "[--cache warm|cold] [--list-shapes] [--probe]\n",
              program);
      return help ? 1 : 2;
    }
  }
  if (a->reps < 1 || a->threads < 1) {
    fprintf(stderr, "%s: " CEILING_COUNT_ERROR, program, CEILING_MAX_REPS, CEILING_MAX_THREADS);
    return 2;
  }
  return 0;
}

static int ceiling_shape_selected(const struct ceiling_args* a, const char* shape) {
  if (a->nfilters == 0) return 1;
  for (int i = 0; i < a->nfilters; ++i)
    if (strcmp(a->filters[i], shape) == 0) return 1;
  return 0;
}

static int ceiling_precision_selected(const struct ceiling_args* a, const char* precision) {
  return a->precision == NULL || strcmp(a->precision, precision) == 0;
}

/* The opening of every ceiling main: parse the arguments, check that each
 * --shape names one of the program's `count` shapes (shape_name(i)), and
 * answer --list-shapes with a line per shape (list_line(i); the name when
 * NULL). Returns -1 when the program goes on to run, else main's exit code:
 * 0 after --help or --list-shapes, 2 on a bad argument or an unknown shape.
 * Freed memory stays in the process from here on, as in the suites
 * (popper::bench::keep_freed_memory, popper/bench.hpp: a VM that hands freed
 * pages back to its host slows the next ~130 ms of calls). */
static int ceiling_open(int argc, char** argv, const char* program, int count, const char* (*shape_name)(int),
                        void (*list_line)(int), struct ceiling_args* a) {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
  const int rc = ceiling_parse_args(argc, argv, a, program);
  if (rc) return rc == 1 ? 0 : 2;
  for (int i = 0; i < a->nfilters; ++i) {
    int found = 0;
    for (int s = 0; s < count; ++s) found |= strcmp(a->filters[i], shape_name(s)) == 0;
    if (!found) {
      fprintf(stderr, "%s: unknown shape: %s (see --list-shapes)\n", program, a->filters[i]);
      return 2;
    }
  }
  if (a->list) {
    for (int s = 0; s < count; ++s) {
      if (list_line) list_line(s);
      else printf("%s\n", shape_name(s));
    }
    return 0;
  }
  popper_turn_yield(); /* started: wait for this process's first turn (popper/turns.h) */
  return -1;
}

static void ceiling_print_header(void) {
  printf(
      "family,tier,backend,shape,precision,threads,rep,iterations,seconds_per_iter,flop_per_iter,"
      "bytes_per_iter,verdict,pace_seconds\n");
}

/* One CSV row; pace_seconds: the pace around that repetition (0: not probed);
 * the verdict is ceiling_row_verdict's. */
static void ceiling_print_paced_row(const char* family, const char* backend, const char* shape, const char* precision,
                                    int threads, int rep, long iterations, double seconds_per_iter,
                                    double work_per_iter, double bytes_per_iter, const char* verdict,
                                    double pace_seconds) {
  printf("%s,ceiling,%s,%s,%s,%d,%d,%ld,%.9e,%.6e,%.6e,%s,%.6e\n", family, backend, shape, precision, threads, rep,
         iterations, seconds_per_iter, work_per_iter, bytes_per_iter, ceiling_row_verdict(verdict), pace_seconds);
  fflush(stdout);
}

/* One CSV row for the repetition ceiling_time_calls timed last. */
static void ceiling_print_row(const char* family, const char* backend, const char* shape, const char* precision,
                              int threads, int rep, long iterations, double seconds_per_iter, double work_per_iter,
                              double bytes_per_iter, const char* verdict) {
  ceiling_print_paced_row(family, backend, shape, precision, threads, rep, iterations, seconds_per_iter, work_per_iter,
                          bytes_per_iter, verdict, ceiling_pace_seconds);
}

#endif
