/* Buffers that are streamed whole, again and again (weights repacked once and
 * read by every GEMV; the read-bandwidth probes that bound such a kernel):
 * from 2 MiB up, each its own anonymous mapping, 2 MiB-aligned, its whole
 * 2 MiB pages advised onto transparent huge pages (MADV_HUGEPAGE, Linux), so
 * a stream takes a TLB miss per 2 MiB rather than per 4 KiB. The tail short
 * of a whole huge page stays on small pages (no memory is added), and the
 * mapping goes back with popper_buffer_free, so the advice never passes to
 * another allocation (the C ceilings keep freed memory in the heap:
 * ceiling_open's mallopt). Without THP, or with it off, the pages stay small
 * and only speed changes. A probe must read the way its kernels do: on small
 * pages it would be no bound for a kernel on huge ones. C11 and C++
 * (huge_pages.hpp wraps it for std::vector; the C ceilings' probe calls it). */
#ifndef POPPER_IMPL_COMMON_HUGE_PAGES_H
#define POPPER_IMPL_COMMON_HUGE_PAGES_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__linux__)
#include <sys/mman.h>
#ifndef MADV_HUGEPAGE /* hidden by a strict _POSIX_C_SOURCE: the advice would be dropped without a word */
#error "impl/common/huge_pages.h needs MADV_HUGEPAGE: define _DEFAULT_SOURCE before the first system header"
#endif
#endif

#define POPPER_HUGE_PAGE_BYTES ((size_t)2 << 20)

/* Where every bench operand starts, in the suites (bench/common/operands.hpp)
 * and the GEMM ceilings (ceiling/gemm_ceiling.h) alike: on a page. Two
 * programs that call one library then hand it operands at the same offsets
 * within their pages, and so at the same offsets from the library's own
 * buffers. Left to each heap, a 64^3 SGEMM's A, B and C sat 2688, 2816 and
 * 2944 bytes into their pages in the ceiling and 1152, 2240 and 2368 in the
 * suite, and where they sit moved that call's time by up to 0.6% (Zen 4). */
#define POPPER_OPERAND_ALIGNMENT ((size_t)4096)

/* A huge buffer's mapped length: bytes rounded up to whole 4 KiB pages. */
static inline size_t popper_buffer_mapped_bytes(size_t bytes) { return (bytes + 4095) & ~(size_t)4095; }

/* Whether popper_buffer_alloc(bytes, ..., huge) maps huge pages for it. */
static inline int popper_buffer_is_huge(size_t bytes, int huge) {
#if defined(__linux__)
  return huge && bytes >= POPPER_HUGE_PAGE_BYTES;
#else
  (void)bytes, (void)huge;
  return 0;
#endif
}

/* `bytes` aligned to `alignment` (a power of two), or, with `huge` and from
 * POPPER_HUGE_PAGE_BYTES up, mapped as above; NULL when out of memory.
 * Released by popper_buffer_free with the same bytes and huge. */
static inline void* popper_buffer_alloc(size_t bytes, size_t alignment, int huge) {
#if defined(__linux__)
  if (popper_buffer_is_huge(bytes, huge)) {
    const size_t page = POPPER_HUGE_PAGE_BYTES;
    char* raw = (char*)mmap(NULL, bytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == (char*)MAP_FAILED) return NULL;
    char* p = (char*)(((uintptr_t)raw + page - 1) & ~(uintptr_t)(page - 1));
    if (p > raw) munmap(raw, (size_t)(p - raw));
    char* end = raw + bytes + page; /* the mapping's end */
    char* keep = p + popper_buffer_mapped_bytes(bytes);
    if (end > keep) munmap(keep, (size_t)(end - keep));
    /* Advice only: a kernel without THP refuses it, and the buffer works the same. */
    (void)madvise(p, bytes / page * page, MADV_HUGEPAGE);
    return p;
  }
#endif
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  void* p = NULL;
  return posix_memalign(&p, alignment, bytes > 0 ? bytes : 1) == 0 ? p : NULL;
}

static inline void popper_buffer_free(void* p, size_t bytes, int huge) {
  if (!p) return;
#if defined(__linux__)
  if (popper_buffer_is_huge(bytes, huge)) {
    munmap(p, popper_buffer_mapped_bytes(bytes));
    return;
  }
#endif
  free(p);
}

#endif
