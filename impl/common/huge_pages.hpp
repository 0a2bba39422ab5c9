// Allocation for large buffers that kernels stream on every call (weights
// repacked once, then read whole by each GEMV): huge_pages.h's rule, from
// 2 MiB up a 2 MiB-aligned mapping of its own advised for transparent huge
// pages, as a std::vector allocator. Smaller buffers are aligned to alignof(T).
#pragma once
#include <cstddef>
#include <new>

namespace popper::memory {

inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

// Throws std::bad_alloc. Released with release_buffer(p, bytes).
void* allocate_buffer(std::size_t bytes, std::size_t alignment);
void release_buffer(void* p, std::size_t bytes) noexcept;

template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  explicit HugePageAllocator(const HugePageAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(allocate_buffer(n * sizeof(T), alignof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { release_buffer(p, n * sizeof(T)); }
  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) { return true; }
};

}  // namespace popper::memory
