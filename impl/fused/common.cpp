// Shared pieces of the fused drivers: allocator, buffers, checks, ISA tables.
#include <cstdlib>
#include <new>
#include <string>

#include "impl/common/cpu_features.hpp"
#include "impl/fused/driver.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::fused {

namespace {
class HeapAllocator final : public Allocator {
 public:
  void* allocate(std::size_t bytes) override {
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* p, std::size_t) noexcept override { std::free(p); }
};
}  // namespace

Allocator& heap_allocator() {
  static HeapAllocator a;
  return a;
}

FloatBuffer::FloatBuffer(Allocator& a, std::size_t count)
    : a_(&a), p_(static_cast<float*>(a.allocate(count * sizeof(float)))), n_(count) {}
FloatBuffer::~FloatBuffer() {
  if (p_) a_->deallocate(p_, n_ * sizeof(float));
}
FloatBuffer::FloatBuffer(FloatBuffer&& o) noexcept : a_(o.a_), p_(o.p_), n_(o.n_) {
  o.p_ = nullptr;
  o.n_ = 0;
}
FloatBuffer& FloatBuffer::operator=(FloatBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) a_->deallocate(p_, n_ * sizeof(float));
    a_ = o.a_, p_ = o.p_, n_ = o.n_;
    o.p_ = nullptr;
    o.n_ = 0;
  }
  return *this;
}

namespace detail {

void require_len(const char* name, std::size_t have, std::int64_t needed) {
  std::int64_t need = needed;
  if (POPPER_MUTANT("fused-size-check-off-by-one") && need > 0) need -= 1;
  if (need < 0 || have < static_cast<std::size_t>(need))
    throw BufferTooSmall(name, static_cast<std::size_t>(needed < 0 ? 0 : needed), have);
}

void require(bool ok, const std::string& what) {
  if (!ok) throw InvalidArgument(what);
}

void check_threads(const ExecOptions& o) { require(o.threads >= 1, "fused: threads must be >= 1"); }

const KernelTable& table_for(const ExecOptions& o, const char* who) {
  switch (popper::cpu::resolve(o.isa, who)) {
    case Isa::Avx512: return avx512_table();
    case Isa::Avx2: return avx2_table();
    default: return scalar_table();
  }
}

Allocator& allocator_of(const ExecOptions& o) { return o.allocator ? *o.allocator : heap_allocator(); }

WorkerScratch::WorkerScratch(Allocator& a, int workers, std::size_t per_worker_floats)
    : stride_((per_worker_floats + 15) / 16 * 16),
      buf_(a, stride_ * static_cast<std::size_t>(workers < 1 ? 1 : workers)) {}

int workers_for(std::int64_t items, int threads) {
  if (items <= 1) return 1;
  return threads < items ? threads : static_cast<int>(items);
}

}  // namespace detail
}  // namespace popper::fused
