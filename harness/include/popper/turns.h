/* Turns: the processes of one trial block taking turns on the same CPUs.
 *
 * popper bench compare runs the processes that time one shape, thread count
 * and cache mode (the tiers and vendor configurations a ratio compares) at
 * once, pinned to the same CPUs, and lets one run at a time: each runs until
 * the end of a timed repetition, then hands the CPUs to the next. The two
 * sides of a ratio then alternate repetition by repetition, so a change in
 * the host's share of a core, which outlasts a repetition but not a process,
 * reaches both sides alike instead of one.
 *
 * The runner (run_in_turns, harness/src/common/process.hpp) sets
 * POPPER_BENCH_TURNS to the number of a socket: popper_turn_yield() sends a
 * byte on it, then blocks until it receives one. A suite or ceiling calls it
 * once before its first repetition and once after each timed repetition
 * (popper/bench.hpp measure, popper/ceiling_cli.h ceiling_pace_end). Unset,
 * or once the runner is gone, it returns at once. Header-only, C11 and C++;
 * Linux (elsewhere it does nothing). In C it needs _DEFAULT_SOURCE (syscall,
 * nanosleep), which popper/ceiling_cli.h, included first, defines. */
#ifndef POPPER_TURNS_H
#define POPPER_TURNS_H

#define POPPER_TURNS_ENV "POPPER_BENCH_TURNS"

/* Why a row of several threads is invalid when popper_turn_wait_idle() still
 * finds a thread of its process running (popper/bench.hpp measure,
 * popper/ceiling_cli.h ceiling_row_verdict). */
#define POPPER_TURN_LEFT_RUNNING                                                                             \
  "a thread of this process still ran 0.5 s after the timed loop: in turns it runs beside the other tiers' " \
  "repetitions (popper/turns.h)"

#if defined(__linux__)
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The socket, read from the environment on the first call; -1 when the
 * process runs on its own. */
static inline int* popper_turn_fd(void) {
  static int fd = -2;
  if (fd == -2) {
    const char* v = getenv(POPPER_TURNS_ENV);
    char* end = NULL;
    const long n = v ? strtol(v, &end, 10) : -1;
    fd = v && *v && end && *end == 0 && n >= 0 && n < 65536 ? (int)n : -1;
  }
  return &fd;
}

/* Whether a thread of this process other than the caller is running or
 * waiting to run (state R in /proc/self/task/<tid>/stat). */
static inline int popper_turn_others_running(void) {
  DIR* d = opendir("/proc/self/task");
  if (!d) return 0;
  const long self = (long)syscall(SYS_gettid);
  int running = 0;
  struct dirent* e;
  while (!running && (e = readdir(d)) != NULL) {
    const long tid = strtol(e->d_name, NULL, 10);
    if (tid <= 0 || tid == self) continue;
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
    FILE* f = fopen(path, "r");
    if (!f) continue;
    const size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    const char* paren = strrchr(text, ')'); /* the name may hold spaces and ')' */
    running = paren && paren[1] == ' ' && paren[2] == 'R';
  }
  closedir(d);
  return running;
}

/* The longest a process waits for its own workers to sleep before it yields:
 * OpenBLAS's spin for the next job before they sleep (2^28 cycles, about
 * 0.1 s), and popper's pool's, are far shorter. */
#define POPPER_TURN_IDLE_WAIT_SECONDS 0.5

/* Waits up to POPPER_TURN_IDLE_WAIT_SECONDS for the process's other threads
 * to stop running; returns 1 when one still runs after that. */
static inline int popper_turn_wait_idle(void) {
  const struct timespec tick = {0, 200000};
  for (int i = 0; i < (int)(POPPER_TURN_IDLE_WAIT_SECONDS / 200e-6); ++i) {
    if (!popper_turn_others_running()) return 0;
    nanosleep(&tick, NULL);
  }
  return popper_turn_others_running();
}

static inline void popper_turn_yield(void) {
  int* fd = popper_turn_fd();
  if (*fd < 0) return;
  /* A library's worker still spinning for its next job would run in the
   * next process's turn, on its CPUs: wait for it to sleep first. */
  (void)popper_turn_wait_idle();
  char byte = 'y';
  ssize_t n;
  do n = send(*fd, &byte, 1, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n == 1) {
    do n = recv(*fd, &byte, 1, 0);
    while (n < 0 && errno == EINTR);
  }
  if (n != 1) *fd = -1; /* the runner is gone: run on alone */
}

#else
static inline int popper_turn_wait_idle(void) { return 0; }
static inline void popper_turn_yield(void) {}
#endif

#endif
