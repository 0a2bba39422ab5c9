// Fused cross-entropy driver (contract fused_ce_correctness, chunked_lse,
// ce_ignore_index, ce_memory): checks, ISA choice, rows split over workers.
//
//   loss_r = lse_r - x[y_r],  grad = scale (softmax(x) - onehot(y)),  softmax never stored
//
// Workspace: ceil(V / chunk) floats per worker (the chunk maxima the gradient
// pass reuses), so the peak is O(threads V / chunk), never O(rows V).
#include <algorithm>
#include <vector>

#include "impl/common/parallel.hpp"
#include "impl/fused/driver.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::fused {
namespace detail {

// Shape, buffer and label checks shared by the fused, separate and CUDA entries.
void check_cross_entropy(const CrossEntropyShape& s, std::span<const float> logits,
                         std::span<const std::int64_t> labels, std::span<float> loss, std::span<float> grad,
                         std::span<float> lse, const ExecOptions& o) {
  check_threads(o);
  require(s.rows >= 0 && s.vocab >= 1, "cross_entropy: rows must be >= 0 and vocab >= 1");
  require(s.chunk >= 1, "cross_entropy: chunk must be >= 1");
  require(s.rows <= (std::int64_t{1} << 40) / s.vocab, "cross_entropy: rows * vocab too large");
  const std::int64_t n = s.rows * s.vocab;
  require_len("logits", logits.size(), n);
  require_len("grad", grad.size(), n);
  require_len("labels", labels.size(), s.rows);
  require_len("loss", loss.size(), s.rows);
  if (!lse.empty()) require_len("lse", lse.size(), s.rows);
  const bool same = grad.data() == logits.data();
  const auto* gb = reinterpret_cast<const char*>(grad.data());
  const auto* lb = reinterpret_cast<const char*>(logits.data());
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
  require(same || gb + bytes <= lb || lb + bytes <= gb,
          "cross_entropy: grad partially overlaps logits (only exact aliasing is allowed)");
  if (POPPER_MUTANT("ce-label-range-unchecked")) return;
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const std::int64_t y = labels[static_cast<std::size_t>(r)];
    if (y != s.ignore_index && (y < 0 || y >= s.vocab))
      throw InvalidArgument("cross_entropy: label " + std::to_string(y) + " of row " + std::to_string(r) +
                            " is outside [0, " + std::to_string(s.vocab) + ") and is not ignore_index " +
                            std::to_string(s.ignore_index));
  }
}

std::uint32_t ce_mutants() {
  std::uint32_t m = 0;
  if (POPPER_MUTANT("ce-lse-unstabilized")) m |= kMutCeUnstabilized;
  if (POPPER_MUTANT("ce-onehot-wrong-index")) m |= kMutCeOnehotWrongIndex;
  if (POPPER_MUTANT("ce-narrow-accumulation")) m |= kMutCeNarrowAccumulation;
  if (POPPER_MUTANT("ce-chunk-drops-last")) m |= kMutCeChunkDropsLast;
  if (POPPER_MUTANT("ce-chunk-merge-no-rescale")) m |= kMutCeChunkMergeNoRescale;
  if (POPPER_MUTANT("ce-ignore-index-ignored")) m |= kMutCeIgnoreIndexIgnored;
  if (POPPER_MUTANT("ce-ignored-grad-left")) m |= kMutCeIgnoredGradLeft;
  if (POPPER_MUTANT("ce-shift-rounded-max")) m |= kMutCeShiftRoundedMax;
  return m;
}

}  // namespace detail

CrossEntropyResult cross_entropy(const CrossEntropyShape& s, std::span<const float> logits,
                                 std::span<const std::int64_t> labels, std::span<float> loss, std::span<float> lse,
                                 std::span<float> grad, const ExecOptions& o) {
  using namespace detail;
  check_cross_entropy(s, logits, labels, loss, grad, lse, o);
  const KernelTable& t = table_for(o, "fused::cross_entropy");
  CrossEntropyResult res;
  res.run.backend = t.tag;
  if (s.rows == 0) return res;
  Allocator& alloc = allocator_of(o);
  if (POPPER_MUTANT("ce-materializes-softmax")) {  // a probability tensor the fused kernel must never need
    FloatBuffer probs(alloc, static_cast<std::size_t>(s.rows * s.vocab));
    t.softmax_rows(logits.data(), probs.data(), s.vocab, 0, s.rows);
  }
  CeArgs a{logits.data(),
           grad.data(),
           labels.data(),
           loss.data(),
           lse.empty() ? nullptr : lse.data(),
           s.vocab,
           std::min(s.chunk, s.vocab),
           s.ignore_index,
           s.grad_scale,
           ce_mutants()};
  const std::int64_t nchunks = (s.vocab + a.chunk - 1) / a.chunk;
  const int workers = workers_for(s.rows, o.threads);
  WorkerScratch ws(alloc, workers, static_cast<std::size_t>(nchunks));
  std::vector<CeStats> stats(static_cast<std::size_t>(workers));
  parallel::run(static_cast<std::size_t>(s.rows), workers, [&](std::size_t r0, std::size_t r1, int w) {
    t.ce_rows(a, static_cast<std::int64_t>(r0), static_cast<std::int64_t>(r1), ws.of(w),
              &stats[static_cast<std::size_t>(w)]);
  });
  for (const auto& st : stats) {  // worker order: the same split for a given thread count
    res.ignored_rows += st.ignored;
    res.nonfinite_rows += st.nonfinite;
  }
  // loss_sum in row order, independent of the split.
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const float l = loss[static_cast<std::size_t>(r)];
    if (labels[static_cast<std::size_t>(r)] != s.ignore_index && l == l && l != __builtin_inff()) res.loss_sum += l;
  }
  return res;
}

}  // namespace popper::fused
