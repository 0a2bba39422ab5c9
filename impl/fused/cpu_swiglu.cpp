// Fused SwiGLU driver (contract swiglu): h = silu(g) u; the backward writes
// d_gate over g and d_up over u, allocating nothing. Elements are independent,
// split over workers in whole rows.
#include "impl/common/parallel.hpp"
#include "impl/fused/driver.hpp"
#include "popper/mutant.hpp"

namespace popper::fused {
namespace detail {

void check_swiglu(const SwigluShape& s, std::size_t a, std::size_t b, std::size_t c, const ExecOptions& o) {
  check_threads(o);
  require(s.rows >= 0 && s.width >= 1, "swiglu: rows must be >= 0 and width >= 1");
  require(s.rows <= (std::int64_t{1} << 40) / s.width, "swiglu: rows * width too large");
  const std::int64_t n = s.rows * s.width;
  require_len("gate", a, n);
  require_len("up", b, n);
  require_len("h/dh", c, n);
}

}  // namespace detail

RunInfo swiglu_forward(const SwigluShape& s, std::span<const float> gate, std::span<const float> up, std::span<float> h,
                       const ExecOptions& o) {
  using namespace detail;
  check_swiglu(s, gate.size(), up.size(), h.size(), o);
  const KernelTable& t = table_for(o, "fused::swiglu_forward");
  const std::int64_t W = s.width;
  parallel::run(static_cast<std::size_t>(s.rows), workers_for(s.rows, o.threads),
                [&](std::size_t r0, std::size_t r1, int) {
                  const std::int64_t b = static_cast<std::int64_t>(r0) * W;
                  t.swiglu_fwd(gate.data() + b, up.data() + b, h.data() + b, static_cast<std::int64_t>(r1 - r0) * W);
                });
  return RunInfo{t.tag, false, ""};
}

RunInfo swiglu_backward_inplace(const SwigluShape& s, std::span<const float> dh, std::span<float> gate,
                                std::span<float> up, const ExecOptions& o) {
  using namespace detail;
  check_swiglu(s, gate.size(), up.size(), dh.size(), o);
  const KernelTable& t = table_for(o, "fused::swiglu_backward_inplace");
  std::uint32_t mut = 0;
  if (POPPER_MUTANT("swiglu-inplace-order")) mut |= kMutSwigluInplaceOrder;
  if (POPPER_MUTANT("swiglu-dgate-missing-term")) mut |= kMutSwigluDgateMissingTerm;
  if (POPPER_MUTANT("swiglu-backward-allocates")) {  // temporary grads, as the separate path has
    FloatBuffer tmp(allocator_of(o), static_cast<std::size_t>(2 * s.rows * s.width));
    (void)tmp;
  }
  const std::int64_t W = s.width;
  parallel::run(
      static_cast<std::size_t>(s.rows), workers_for(s.rows, o.threads), [&](std::size_t r0, std::size_t r1, int) {
        const std::int64_t b = static_cast<std::int64_t>(r0) * W;
        t.swiglu_bwd(dh.data() + b, gate.data() + b, up.data() + b, static_cast<std::int64_t>(r1 - r0) * W, mut);
      });
  return RunInfo{t.tag, false, ""};
}

}  // namespace popper::fused
