// Operands that start on a page, in the suites as in the C ceilings
// (POPPER_OPERAND_ALIGNMENT, impl/common/huge_pages.h says why).
#pragma once
#include <cstddef>
#include <new>
#include <vector>

#include "impl/common/huge_pages.h"

namespace popper::suite {

template <class T>
struct PageAllocator {
  using value_type = T;
  PageAllocator() = default;
  template <class U>
  explicit PageAllocator(const PageAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    void* p = popper_buffer_alloc(n * sizeof(T), POPPER_OPERAND_ALIGNMENT, 0);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept { popper_buffer_free(p, n * sizeof(T), 0); }
  friend bool operator==(const PageAllocator&, const PageAllocator&) { return true; }
};

template <class T>
using OperandVector = std::vector<T, PageAllocator<T>>;

}  // namespace popper::suite
