// Fused RMSNorm driver (contract rmsnorm_forward, rmsnorm_recompute,
// rmsnorm_backward, rmsnorm_memory).
//
//   forward   inv_rms = 1/sqrt(mean x^2 + eps), normed = x inv_rms, y = normed w; saves inv_rms only
//   backward  normed recomputed (same multiply), d_input = inv_rms (g - normed c), g = dy w,
//             c = mean(g normed), d_weight = sum_r dy normed
//
// d_weight: partials per fixed block of 64 rows (workspace ceil(rows/64) x H),
// then summed over blocks in order, column ranges in parallel: the bits do not
// depend on the thread count.
#include <algorithm>

#include "impl/common/parallel.hpp"
#include "impl/fused/driver.hpp"
#include "popper/mutant.hpp"

namespace popper::fused {
namespace detail {

void check_rmsnorm(const RmsNormShape& s, std::size_t x, std::size_t w, std::size_t out, const ExecOptions& o) {
  check_threads(o);
  require(s.rows >= 0 && s.hidden >= 1, "rmsnorm: rows must be >= 0 and hidden >= 1");
  require(s.eps > 0.0f && s.eps == s.eps, "rmsnorm: eps must be > 0");
  require(s.rows <= (std::int64_t{1} << 40) / s.hidden, "rmsnorm: rows * hidden too large");
  require_len("x", x, s.rows * s.hidden);
  require_len("weight", w, s.hidden);
  require_len("y", out, s.rows * s.hidden);
}

constexpr std::int64_t kDwBlock = 64;

// Backward over saved inputs: fused (x, recompute) or separate (normed stored).
void rmsnorm_backward_rows(const KernelTable& t, const RmsNormShape& s, RmsArgs a, bool from_saved,
                           std::span<float> d_weight, const ExecOptions& o) {
  const std::int64_t H = s.hidden;
  std::fill(d_weight.begin(), d_weight.begin() + H, 0.0f);
  if (s.rows == 0) return;
  const std::int64_t blocks = (s.rows + kDwBlock - 1) / kDwBlock;
  const bool per_worker = POPPER_MUTANT("rmsnorm-dw-per-worker");
  const int workers = workers_for(blocks, o.threads);
  FloatBuffer partial(allocator_of(o), static_cast<std::size_t>((per_worker ? workers : blocks) * H));
  std::fill(partial.data(), partial.data() + partial.size(), 0.0f);
  if (per_worker) {  // mutant: partials follow the worker split, so bits follow the thread count
    parallel::run(static_cast<std::size_t>(s.rows), workers, [&](std::size_t r0, std::size_t r1, int w) {
      t.rms_bwd_rows(a, static_cast<std::int64_t>(r0), static_cast<std::int64_t>(r1), partial.data() + w * H,
                     from_saved);
    });
  } else {
    parallel::run(static_cast<std::size_t>(blocks), workers, [&](std::size_t b0, std::size_t b1, int) {
      for (std::size_t b = b0; b < b1; ++b) {
        const std::int64_t r0 = static_cast<std::int64_t>(b) * kDwBlock;
        const std::int64_t r1 = std::min(s.rows, r0 + kDwBlock);
        t.rms_bwd_rows(a, r0, r1, partial.data() + static_cast<std::int64_t>(b) * H, from_saved);
      }
    });
  }
  std::int64_t nb = per_worker ? workers : blocks;
  if (POPPER_MUTANT("rmsnorm-dw-drops-last-block") && nb > 1) --nb;
  parallel::run(static_cast<std::size_t>(H), workers_for(H / 256 + 1, o.threads),
                [&](std::size_t c0, std::size_t c1, int) {
                  for (std::size_t c = c0; c < c1; ++c) {
                    float acc = 0.0f;
                    for (std::int64_t b = 0; b < nb; ++b) acc += partial.data()[b * H + static_cast<std::int64_t>(c)];
                    d_weight[c] = acc;
                  }
                });
}

std::uint32_t rms_mutants() {
  std::uint32_t m = 0;
  if (POPPER_MUTANT("rmsnorm-recompute-reordered")) m |= kMutRmsRecomputeReordered;
  if (POPPER_MUTANT("rmsnorm-dx-missing-projection")) m |= kMutRmsDxMissingProjection;
  return m;
}

}  // namespace detail

RmsNormSaved rmsnorm_forward(const RmsNormShape& s, std::span<const float> x, std::span<const float> weight,
                             std::span<float> y, const ExecOptions& o, RunInfo* run, std::span<float> normed_out) {
  using namespace detail;
  check_rmsnorm(s, x.size(), weight.size(), y.size(), o);
  if (!normed_out.empty()) require_len("normed_out", normed_out.size(), s.rows * s.hidden);
  const KernelTable& t = table_for(o, "fused::rmsnorm_forward");
  if (run) *run = RunInfo{t.tag, false, ""};
  Allocator& alloc = allocator_of(o);
  RmsNormSaved saved{FloatBuffer(alloc, static_cast<std::size_t>(s.rows))};
  if (POPPER_MUTANT("rmsnorm-saves-normed"))
    saved.inv_rms = FloatBuffer(alloc, static_cast<std::size_t>(s.rows * (s.hidden + 1)));
  RmsArgs a{x.data(),
            weight.data(),
            y.data(),
            saved.inv_rms.data(),
            normed_out.empty() ? nullptr : normed_out.data(),
            nullptr,
            nullptr,
            s.hidden,
            s.eps,
            0};
  parallel::run(static_cast<std::size_t>(s.rows), workers_for(s.rows, o.threads),
                [&](std::size_t r0, std::size_t r1, int) {
                  t.rms_fwd_rows(a, static_cast<std::int64_t>(r0), static_cast<std::int64_t>(r1));
                });
  return saved;
}

RunInfo rmsnorm_backward(const RmsNormShape& s, std::span<const float> x, std::span<const float> weight,
                         std::span<const float> inv_rms, std::span<const float> dy, std::span<float> d_input,
                         std::span<float> d_weight, const ExecOptions& o, std::span<float> normed_out) {
  using namespace detail;
  check_rmsnorm(s, x.size(), weight.size(), d_input.size(), o);
  require_len("inv_rms", inv_rms.size(), s.rows);
  require_len("dy", dy.size(), s.rows * s.hidden);
  require_len("d_weight", d_weight.size(), s.hidden);
  if (!normed_out.empty()) require_len("normed_out", normed_out.size(), s.rows * s.hidden);
  const KernelTable& t = table_for(o, "fused::rmsnorm_backward");
  RmsArgs a{x.data(),
            weight.data(),
            nullptr,
            const_cast<float*>(inv_rms.data()),
            normed_out.empty() ? nullptr : normed_out.data(),
            dy.data(),
            d_input.data(),
            s.hidden,
            s.eps,
            rms_mutants()};
  rmsnorm_backward_rows(t, s, a, false, d_weight, o);
  return RunInfo{t.tag, false, ""};
}

}  // namespace popper::fused
