// Internal to the fused drivers (cpu_*.cpp, separate*.cpp, cuda_fused.cpp):
// argument checks, ISA resolution and workspace, shared so every entry point
// checks the same way before touching memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "impl/fused/cpu_kernels.hpp"
#include "impl/fused/fused.hpp"

namespace popper::fused::detail {

// Throws BufferTooSmall(name, needed, have) when have < needed.
void require_len(const char* name, std::size_t have, std::int64_t needed);
// Throws InvalidArgument(what) when !ok.
void require(bool ok, const std::string& what);
void check_threads(const ExecOptions& o);

// Resolves o.isa (Auto -> auto_isa(); unsupported -> Unsupported naming `who`).
const KernelTable& table_for(const ExecOptions& o, const char* who);
Allocator& allocator_of(const ExecOptions& o);

// threads x per_worker floats from the allocator, 64-byte aligned per worker.
class WorkerScratch {
 public:
  WorkerScratch(Allocator& a, int workers, std::size_t per_worker_floats);
  float* of(int worker) const { return buf_.data() + static_cast<std::size_t>(worker) * stride_; }

 private:
  std::size_t stride_;
  FloatBuffer buf_;
};

// Per-kernel checks shared by the fused, separate and CUDA entries (cpu_*.cpp).
void check_cross_entropy(const CrossEntropyShape& s, std::span<const float> logits,
                         std::span<const std::int64_t> labels, std::span<float> loss, std::span<float> grad,
                         std::span<float> lse, const ExecOptions& o);
std::uint32_t ce_mutants();
void check_rmsnorm(const RmsNormShape& s, std::size_t x, std::size_t w, std::size_t out, const ExecOptions& o);
void check_swiglu(const SwigluShape& s, std::size_t a, std::size_t b, std::size_t c, const ExecOptions& o);
void check_rope(const RopeShape& s, const RopeTable& t, std::size_t q, std::size_t k, const ExecOptions& o);
void check_attention(const AttentionShape& s, std::size_t q, std::size_t k, std::size_t v, std::size_t o,
                     std::size_t lse, const ExecOptions& opt);
float attention_scale(const AttentionShape& s);

// Workers a call uses for n independent items (never more than items).
int workers_for(std::int64_t items, int threads);

}  // namespace popper::fused::detail
