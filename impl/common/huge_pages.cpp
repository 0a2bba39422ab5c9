// allocate_buffer and release_buffer (huge_pages.hpp) over huge_pages.h.
#include "impl/common/huge_pages.hpp"

#include "impl/common/huge_pages.h"
#include "popper/mutant.hpp"

namespace popper::memory {
namespace {

static_assert(kHugePageBytes == POPPER_HUGE_PAGE_BYTES);

// Mutation point (large-buffer-small-pages): large buffers get plain alignment and no advice.
bool huge_pages_wanted() { return !POPPER_MUTANT("large-buffer-small-pages"); }

}  // namespace

void* allocate_buffer(std::size_t bytes, std::size_t alignment) {
  void* p = popper_buffer_alloc(bytes, alignment, huge_pages_wanted());
  if (!p) throw std::bad_alloc();
  return p;
}

void release_buffer(void* p, std::size_t bytes) noexcept { popper_buffer_free(p, bytes, huge_pages_wanted()); }

}  // namespace popper::memory
