/* Evicting the caches before each timed call of a cold row
 * (popper/bench_protocol.hpp CacheMode): one rule for the suites
 * (popper/bench.hpp) and the raw-C ceilings (popper/ceiling_cli.h), so both
 * sides of a cold ratio evict alike. Header-only, C11 and C++. */
#ifndef POPPER_CACHE_EVICT_H
#define POPPER_CACHE_EVICT_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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

/* A core's private caches (L1, L2) keep what its thread read last: the
 * last-level cache of AMD and recent Intel CPUs does not hold every line of
 * them (non-inclusive), so a read on one core does not evict another's. Each
 * other CPU this process may run on reads this many bytes on a thread pinned
 * there: four times the L2 the system reports, within [4 MiB, 64 MiB]. */
static inline size_t popper_evict_core_bytes(void) {
  const size_t lo = (size_t)4 << 20, hi = (size_t)64 << 20;
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  const size_t want = l2 > 0 ? 4 * (size_t)l2 : lo;
  return want < lo ? lo : want > hi ? hi : want;
}

/* CPU masks by the raw system calls: the glibc wrappers need _GNU_SOURCE
 * before the first include, which a C file including this header may not have. */
#define POPPER_EVICT_MAX_CPUS 1024
typedef struct {
  unsigned long bits[POPPER_EVICT_MAX_CPUS / (8 * sizeof(unsigned long))];
} popper_cpu_mask;
enum { POPPER_CPU_MASK_WORD_BITS = 8 * sizeof(unsigned long) };
static inline int popper_cpu_in(const popper_cpu_mask* m, int cpu) {
  return (int)((m->bits[cpu / POPPER_CPU_MASK_WORD_BITS] >> (cpu % POPPER_CPU_MASK_WORD_BITS)) & 1UL);
}

struct popper_evict_job {
  const unsigned long long* buf;
  size_t lines;
  int cpu;
  int on_cpu;             /* the read ran on `cpu` */
  unsigned long long sum; /* stored where the caller sees it: the reads are never elided */
};

/* The other CPUs the last popper_evict read on (its self-test reads it). */
static inline int* popper_evict_other_cpus_read(void) {
  static int n;
  return &n;
}

static inline void* popper_evict_on_cpu(void* arg) {
  struct popper_evict_job* job = (struct popper_evict_job*)arg;
  popper_cpu_mask one;
  memset(&one, 0, sizeof one);
  one.bits[job->cpu / POPPER_CPU_MASK_WORD_BITS] |= 1UL << (job->cpu % POPPER_CPU_MASK_WORD_BITS);
  /* Not pinned (a CPU the mask no longer offers): the read still runs, somewhere. */
  (void)syscall(SYS_sched_setaffinity, 0, sizeof one, &one);
  unsigned long long sum = 0;
  for (size_t i = 0; i < job->lines; ++i) sum += job->buf[i * 8];
  job->sum = sum;
  unsigned now = ~0u;
  job->on_cpu = syscall(SYS_getcpu, &now, NULL, NULL) == 0 && now == (unsigned)job->cpu;
  return NULL;
}

/* Why a cold row is invalid when popper_evict read less than
 * popper_evict_bytes() before one of its timed calls (no comma: a ceiling
 * prints it as a CSV field). */
#define POPPER_NOT_EVICTED "the caches were not evicted before every timed call of this cold row"

/* Reads one word of every cache line of a buffer of popper_evict_bytes()
 * (allocated and written on the first call) on the calling thread, while
 * every other CPU of its affinity mask reads the first
 * popper_evict_core_bytes() of it on a thread pinned there, so what the
 * previous call left in any cache the row's threads use is evicted. Returns
 * the bytes the calling thread read: 0 when the buffer cannot be allocated,
 * which the caller reports as POPPER_NOT_EVICTED (a cold row on a machine
 * short of memory is invalid, not a reason to end the process). */
static inline size_t popper_evict(void) {
  static unsigned long long* buf;
  static size_t lines;
  static int no_memory; /* the allocation failed once: not tried again before every cold call */
  static volatile unsigned long long sink;
  if (!buf) {
    if (no_memory) return 0;
    const size_t bytes = popper_evict_bytes();
    buf = (unsigned long long*)malloc(bytes);
    if (!buf) {
      fprintf(stderr, "popper: cannot allocate %zu bytes to evict the caches: cold rows are invalid\n", bytes);
      no_memory = 1;
      return 0;
    }
    lines = bytes / 64;
    for (size_t i = 0; i < lines * 8; ++i) buf[i] = 1;
  }
  popper_cpu_mask mask;
  memset(&mask, 0, sizeof mask);
  unsigned here = ~0u;
  const long got = syscall(SYS_sched_getaffinity, 0, sizeof mask, &mask);
  if (syscall(SYS_getcpu, &here, NULL, NULL) != 0) here = ~0u;
  enum { kMaxJobs = 64 };
  struct popper_evict_job jobs[kMaxJobs];
  pthread_t threads[kMaxJobs];
  int started = 0;
  const size_t core_lines = popper_evict_core_bytes() / 64;
  for (int cpu = 0; got > 0 && cpu < 8 * (int)got && cpu < POPPER_EVICT_MAX_CPUS && started < kMaxJobs; ++cpu) {
    if (!popper_cpu_in(&mask, cpu) || (unsigned)cpu == here) continue;
    jobs[started].buf = buf, jobs[started].lines = core_lines < lines ? core_lines : lines, jobs[started].cpu = cpu;
    jobs[started].on_cpu = 0, jobs[started].sum = 0;
    if (pthread_create(&threads[started], NULL, popper_evict_on_cpu, &jobs[started]) != 0) break;
    ++started;
  }
  unsigned long long sum = 0;
  for (size_t i = 0; i < lines; ++i) sum += buf[i * 8];
  int read_on = 0;
  for (int t = 0; t < started; ++t) {
    pthread_join(threads[t], NULL);
    read_on += jobs[t].on_cpu;
  }
  *popper_evict_other_cpus_read() = read_on;
  sink = sum;               /* volatile: the reads happen however the result is used */
  return (size_t)sink * 64; /* every word is 1: one per line read */
}

#endif
