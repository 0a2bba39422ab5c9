/* The counts a ceiling program takes on its command line (--reps, --threads),
 * read whole and bounded: no sign, space or trailing text, and no value that
 * wraps (atoi turned 400000000000 repetitions into 568041472, and a ceiling
 * allocated gigabytes and timed for hours). C and CUDA host code alike. */
#ifndef POPPER_CEILING_COUNT_H
#define POPPER_CEILING_COUNT_H

#include <errno.h>
#include <stdlib.h>

#define CEILING_MAX_REPS 100000
#define CEILING_MAX_THREADS 1024

/* The count in [1, max], or 0 when text is not one. */
static inline int ceiling_parse_count(const char* text, long max) {
  char* end = NULL;
  errno = 0;
  const long v = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < 1 || v > max) return 0;
  return (int)v;
}

#define CEILING_COUNT_ERROR "--reps must be a whole number from 1 to %d and --threads from 1 to %d\n"

#endif
