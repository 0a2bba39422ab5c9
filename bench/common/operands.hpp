// Operands that start on a cache line, in the suites as in the C ceilings
// (ceiling/gemm_ceiling.h): where the heap happens to put an operand differs
// from one program to the next, and OpenBLAS's 64^3 SGEMM and DGEMM took
// 1.2% longer with C 16 or 48 bytes past a 64-byte boundary (Zen 4), enough
// to tilt a 2% claim between two programs calling the same library.
#pragma once
#include <cstddef>
#include <new>
#include <vector>

#include "impl/common/huge_pages.h"

namespace popper::suite {

inline constexpr std::size_t kOperandAlignment = 64;

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  explicit CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    void* p = popper_buffer_alloc(n * sizeof(T), kOperandAlignment, 0);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept { popper_buffer_free(p, n * sizeof(T), 0); }
  friend bool operator==(const CacheLineAllocator&, const CacheLineAllocator&) { return true; }
};

template <class T>
using OperandVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace popper::suite
