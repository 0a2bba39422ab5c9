// AdamW (train.hpp) and the Trainer: check, step, check, update, in that order,
// so a refused step leaves the parameters, moments and step count as they were.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "impl/common/parallel.hpp"
#include "impl/fused/fused.hpp"
#include "impl/train/train.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::train {

bool adamw_update(const ParamLayout& layout, const AdamWConfig& a, std::int64_t t, std::span<float> params,
                  std::span<const float> grads, std::span<float> m, std::span<float> v, int threads, cpu::Isa isa) {
  if (t < 1) throw InvalidArgument("train: AdamW step number must be >= 1");
  for (const auto* s : {&params, &m, &v})
    if (s->size() < layout.total) throw InvalidArgument("train: AdamW buffer shorter than the parameter layout");
  if (grads.size() < layout.total) throw InvalidArgument("train: AdamW gradient shorter than the parameter layout");
  const bool no_correction = POPPER_MUTANT("train-adamw-no-bias-correction");
  const bool decay_all = POPPER_MUTANT("train-adamw-decay-on-vectors");
  const double c1 = no_correction ? 1.0 : 1.0 - std::pow(static_cast<double>(a.beta1), static_cast<double>(t));
  const double c2 = no_correction ? 1.0 : 1.0 - std::pow(static_cast<double>(a.beta2), static_cast<double>(t));
  const fused::AdamWConstants k{a.beta1,
                                a.beta2,
                                1.0f - a.beta1,
                                1.0f - a.beta2,
                                static_cast<float>(a.lr / c1),
                                static_cast<float>(1.0 / std::sqrt(c2)),
                                a.eps};
  // Work items of 16K floats inside tensors, so threads split the large tensors evenly.
  constexpr std::size_t kChunk = 16384;
  struct Item {
    std::size_t begin, end;
    float decay;
  };
  std::vector<Item> items;
  for (const Tensor& T : layout.tensors) {
    const float decay = T.decay || decay_all ? 1.0f - a.lr * a.weight_decay : 1.0f;
    for (std::size_t b = 0; b < T.size(); b += kChunk)
      items.push_back({T.offset + b, T.offset + std::min(T.size(), b + kChunk), decay});
  }
  // Threads only when each has at least 4 chunks (64K floats) to update.
  const int workers = std::clamp(static_cast<int>(items.size() / 4), 1, threads);
  std::vector<char> finite(static_cast<std::size_t>(workers), 1);
  parallel::run(items.size(), workers, [&](std::size_t ib, std::size_t ie, int worker) {
    bool all = true;
    for (std::size_t it = ib; it < ie; ++it) {
      const Item& w = items[it];
      all &= fused::adamw_range(params.data() + w.begin, m.data() + w.begin, v.data() + w.begin, grads.data() + w.begin,
                                static_cast<std::int64_t>(w.end - w.begin), w.decay, k, isa);
    }
    finite[static_cast<std::size_t>(worker)] = all;
  });
  return POPPER_MUTANT("train-update-vouches-unread") || std::ranges::all_of(finite, [](char f) { return f != 0; });
}

Trainer::Trainer(const Config& c, const StepOptions& o, const AdamWConfig& a, std::uint64_t seed)
    : c_(c),
      o_(o),
      a_(a),
      layout_(c),
      params_(init_params(c, seed)),
      m_(layout_.total, 0.0f),
      v_(layout_.total, 0.0f),
      grads_(layout_.total, 0.0f),
      step_(c, o) {}

double Trainer::train_step(std::span<const std::int64_t> tokens, std::span<const std::int64_t> labels,
                           trace::Tracer* tracer) {
  // Mutant: the parameters' finiteness checked after the update (forward_backward skips it too).
  const bool check_late = POPPER_MUTANT("train-finite-check-after-update");
  const double loss = step_.run(params_, tokens, labels, grads_, tracer, !params_finite_);
  {
    // Only the gradients no product vouched for are read.
    const std::span<const char> vouched = step_.vouched_gradients();
    double scanned = 0;
    for (std::size_t t = 0; t < layout_.tensors.size(); ++t)
      if (!vouched[t]) scanned += static_cast<double>(layout_.tensors[t].size());
    trace::Scope s(tracer, "check_grads", kOverhead, -1, 0, 4.0 * scanned);
    if (!std::isfinite(loss)) throw InvalidArgument("train: the loss is not finite: refused, nothing written");
    check_finite(layout_, grads_, "gradient", o_.threads, o_.isa, vouched);
  }
  {
    const double n = static_cast<double>(layout_.total);
    trace::Scope s(tracer, "adamw", kOptimizer, -1, 12 * n, 28 * n);
    params_finite_ = false;  // until the update vouches for what it wrote
    params_finite_ = adamw_update(layout_, a_, t_ + 1, params_, grads_, m_, v_, o_.threads, o_.isa);
  }
  if (check_late) check_finite(layout_, params_, "parameter", o_.threads, o_.isa);
  ++t_;
  return loss;
}

void Trainer::load_state(std::span<const float> params, std::span<const float> m, std::span<const float> v,
                         std::int64_t t) {
  if (params.size() != layout_.total || m.size() != layout_.total || v.size() != layout_.total || t < 0)
    throw InvalidArgument("train: load_state needs three buffers of the layout's size and t >= 0");
  params_.assign(params.begin(), params.end());
  params_finite_ = false;
  m_.assign(m.begin(), m.end());
  v_.assign(v.begin(), v.end());
  t_ = t;
}

}  // namespace popper::train
