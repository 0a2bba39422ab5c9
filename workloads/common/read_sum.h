/* Reading a footprint as fast as this CPU can: the loops the read-bandwidth
 * probes time (bench/common/read_bandwidth.hpp for the C++ tiers,
 * ceiling/read_bound.h for the C ceilings). A probe is a bound only if no
 * kernel reads faster, and no one loop is fastest on every CPU: on an AMD
 * EPYC (Zen 4), one core reads 64 MiB at 33-44 GB/s with 256-bit loads in
 * one stream and at 23-25 GB/s with 512-bit loads in four, while four
 * streams beat one on Intel cores. So a probe times every way this CPU
 * supports and keeps the fastest.
 *
 * Each way returns the wrapping sum of p[0 .. n - n % 32) as 64-bit words
 * (the same sum for every way), so the reads cannot be optimised away.
 * Header-only (static functions), C11 and C++. */
#ifndef POPPER_WORKLOADS_READ_SUM_H
#define POPPER_WORKLOADS_READ_SUM_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Mutation point of FALSIFY-Q4K-013 (POPPER_MUTANT: live only in the contract
 * tests; the bench suites compile it false and the C ceilings 0). */
#ifdef __cplusplus
#include "popper/mutant.hpp"
#else
#define POPPER_MUTANT(name) 0
#endif

typedef uint64_t popper_u64x8 __attribute__((vector_size(64)));

/* Four streams (the quarters of the range, advanced together), 64-byte
 * vectors compiled for AVX-512, AVX2 and the baseline. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static uint64_t popper_read_sum_4_streams(
    const uint64_t* p, size_t n) {
  const size_t q = n / 32 * 8; /* a quarter of n - n % 32, a multiple of 8 */
  popper_u64x8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, x;
  for (size_t i = 0; i < q; i += 8) {
    memcpy(&x, p + i, 64), a0 += x;
    memcpy(&x, p + q + i, 64), a1 += x;
    memcpy(&x, p + 2 * q + i, 64), a2 += x;
    memcpy(&x, p + 3 * q + i, 64), a3 += x;
  }
  a0 += a1 + a2 + a3;
  uint64_t s = 0;
  for (int k = 0; k < 8; ++k) s += a0[k];
  return s;
}

/* One stream of 256-bit loads, four independent sums per 128 bytes. */
__attribute__((target("avx2"))) static uint64_t popper_read_sum_avx2_1_stream(const uint64_t* p, size_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_epi64(a0, _mm256_add_epi64(_mm256_loadu_si256((const __m256i*)(p + i)),
                                               _mm256_loadu_si256((const __m256i*)(p + i + 4))));
    a1 = _mm256_add_epi64(a1, _mm256_add_epi64(_mm256_loadu_si256((const __m256i*)(p + i + 8)),
                                               _mm256_loadu_si256((const __m256i*)(p + i + 12))));
    a2 = _mm256_add_epi64(a2, _mm256_add_epi64(_mm256_loadu_si256((const __m256i*)(p + i + 16)),
                                               _mm256_loadu_si256((const __m256i*)(p + i + 20))));
    a3 = _mm256_add_epi64(a3, _mm256_add_epi64(_mm256_loadu_si256((const __m256i*)(p + i + 24)),
                                               _mm256_loadu_si256((const __m256i*)(p + i + 28))));
  }
  a0 = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  uint64_t t[4];
  _mm256_storeu_si256((__m256i*)t, a0);
  return t[0] + t[1] + t[2] + t[3];
}

/* Four streams of 256-bit loads. */
__attribute__((target("avx2"))) static uint64_t popper_read_sum_avx2_4_streams(const uint64_t* p, size_t n) {
  const size_t q = n / 32 * 8;
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < q; i += 8) {
    a0 = _mm256_add_epi64(a0, _mm256_add_epi64(_mm256_loadu_si256((const __m256i*)(p + i)),
                                               _mm256_loadu_si256((const __m256i*)(p + i + 4))));
    a1 = _mm256_add_epi64(a1, _mm256_add_epi64(_mm256_loadu_si256((const __m256i*)(p + q + i)),
                                               _mm256_loadu_si256((const __m256i*)(p + q + i + 4))));
    a2 = _mm256_add_epi64(a2, _mm256_add_epi64(_mm256_loadu_si256((const __m256i*)(p + 2 * q + i)),
                                               _mm256_loadu_si256((const __m256i*)(p + 2 * q + i + 4))));
    a3 = _mm256_add_epi64(a3, _mm256_add_epi64(_mm256_loadu_si256((const __m256i*)(p + 3 * q + i)),
                                               _mm256_loadu_si256((const __m256i*)(p + 3 * q + i + 4))));
  }
  a0 = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  uint64_t t[4];
  _mm256_storeu_si256((__m256i*)t, a0);
  return t[0] + t[1] + t[2] + t[3];
}

enum { POPPER_READ_WAYS = 3 };

/* Whether way w (0 .. POPPER_READ_WAYS) runs on this CPU. */
static int popper_read_way_supported(int w) { return w == 0 || __builtin_cpu_supports("avx2"); }

static uint64_t popper_read_sum(int w, const uint64_t* p, size_t n) {
  /* Mutation point (read-way-skips-last-lines): every way reads 32 words fewer (way 0 runs on every CPU). */
  if (n >= 32 && POPPER_MUTANT("read-way-skips-last-lines")) n -= 32;
  switch (w) {
    case 1: return popper_read_sum_avx2_1_stream(p, n);
    case 2: return popper_read_sum_avx2_4_streams(p, n);
    default: return popper_read_sum_4_streams(p, n);
  }
}

#endif
