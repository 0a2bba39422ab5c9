// Internal to impl/train: the operations a step is made of, behind one
// interface with two implementations, so the hand and the wrapped step run
// the very same driver (step.cpp) and differ only in their kernels:
//   hand     (cpu_kernels.cpp) popper's hand GEMM and the fused kernels
//   wrapped  (lib_blas.cpp)    OpenBLAS SGEMM and the separate, unfused ops
// A kernel object keeps what its forward saves for its backward (inv_rms or
// the normed rows, lse or the probabilities) per slot: RMSNorm slot 2l, 2l+1
// and 2L (final), attention slot l.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "impl/fused/fused.hpp"
#include "impl/gemm/gemm.hpp"
#include "impl/train/train.hpp"

namespace popper::train::detail {

// Row-major C[m, n] = op(A) op(B) + beta C with tight leading dimensions.
struct GemmCall {
  gemm::Op op_a, op_b;
  std::int64_t m, n, k;
  const float* a;
  const float* b;
  float beta;
  float* c;
  // C is a weight gradient, read only by the finiteness check and the update:
  // stored past the caches, and probed for finiteness as it is stored.
  bool weight_gradient = false;
};

class Kernels {
 public:
  virtual ~Kernels() = default;
  virtual std::string tag() const = 0;
  // Returns true when the kernel vouches that every element of C it stored is
  // finite (the hand kernels' probe on a weight gradient); false: not known.
  virtual bool gemm(const GemmCall& g) = 0;
  virtual void rmsnorm_forward(int slot, const fused::RmsNormShape& s, const float* x, const float* w, float* y) = 0;
  // dx overwritten, dw overwritten.
  virtual void rmsnorm_backward(int slot, const fused::RmsNormShape& s, const float* x, const float* w, const float* dy,
                                float* dx, float* dw) = 0;
  virtual void rope(bool backward, const fused::RopeShape& s, const fused::RopeTable& t, float* q, float* k) = 0;
  virtual void attention_forward(int slot, const fused::AttentionShape& s, const float* q, const float* k,
                                 const float* v, float* o) = 0;
  virtual void attention_backward(int slot, const fused::AttentionShape& s, const float* q, const float* k,
                                  const float* v, const float* o, const float* d_o, float* dq, float* dk,
                                  float* dv) = 0;
  virtual void swiglu_forward(const fused::SwigluShape& s, const float* g, const float* u, float* h) = 0;
  // Returns where d_gate and d_up are (the hand kernel writes them over g and u).
  virtual std::pair<const float*, const float*> swiglu_backward(const fused::SwigluShape& s, const float* dh, float* g,
                                                                float* u) = 0;
  // logits [T, V] are overwritten by their gradient.
  virtual fused::CrossEntropyResult cross_entropy(const fused::CrossEntropyShape& s, float* logits,
                                                  const std::int64_t* labels, float* loss) = 0;
};

std::unique_ptr<Kernels> make_hand_kernels(const Config& c, const StepOptions& o);
std::unique_ptr<Kernels> make_wrapped_kernels(const Config& c, const StepOptions& o);

// Reuses freed blocks of the same size, so the per-call workspace of the
// kernels (both tiers alike) costs no page faults after the first step, as a
// framework's caching allocator would not.
class CachingAllocator final : public fused::Allocator {
 public:
  ~CachingAllocator() override;
  void* allocate(std::size_t bytes) override;
  void deallocate(void* p, std::size_t bytes) noexcept override;

 private:
  struct Block {
    void* p;
    std::size_t bytes;
  };
  std::vector<Block> free_;
};

}  // namespace popper::train::detail
