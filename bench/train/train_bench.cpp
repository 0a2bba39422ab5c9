// bench_train: one training step (forward, backward, AdamW) of each preset of
// workloads/train/shapes.h whose set is not "none", on the hand tier (popper's
// hand GEMM and fused kernels) and the wrapped tier (OpenBLAS and the separate
// operations), 1 and 2 threads. The timed call is Trainer::train_step under
// popper::trace, as popper train runs it; the batch is fixed (its generation
// is not timed).
//
// Verification before timing, once per (shape, tier, threads): the tier's step
// on the tiny preset against the FP64 oracle within the contract's derived
// bound (falsify/train/testbed.hpp), and on the timed shape a finite loss and
// finite gradients. The FP64 oracle of a bench-sized model would take minutes
// per process; the label says what was checked.
//
// After timing (popper::bench::Recheck), one more step on a fresh batch: its
// loss and gradients, at the parameters the step started from, against the
// FP64 oracle on gate shapes (tiny: milliseconds) and against the other
// backend's step elsewhere. A step that returned an earlier loss, or left
// its gradients from an earlier batch, fails either.
//
// Also train_trace/span (not a protocol row, run it with --benchmark_filter):
// the cost of one span in a warm tracer, the per-span figure behind
// popper train's tracer line.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "impl/train/train.hpp"
#include "popper/bench.hpp"
#include "train/testbed.hpp"
#include "workloads/train/shapes.h"

namespace {

using namespace popper::train;
namespace pb = popper::bench;
namespace trace = popper::trace;

// "" when the tier's step is right on tiny (FP64 oracle) and finite on the timed shape.
std::string verify(const popper_train_shape& sh, const StepOptions& o) {
  {
    const Config c = popper_train_config(*popper_train_find_shape("tiny"));
    const ParamLayout L(c);
    const auto p = init_params(c, 7);
    const Batch b = copy_task_batch(c, 7, 0);
    const auto bound = testbed::gradient_bound(c, p, b.tokens, b.labels, 3, 3.0);
    Step step(c, o);
    std::vector<float> g(L.total);
    const double loss = step.forward_backward(p, b.tokens, b.labels, g);
    const auto e = testbed::compare<float>(L, bound, g, loss);
    if (!e.ok()) return "tiny against FP64: " + e.text();
  }
  const Config c = popper_train_config(sh);
  Trainer tr(c, o, AdamWConfig{}, 1);
  const Batch b = copy_task_batch(c, 1, 0);
  const double loss = tr.train_step(b.tokens, b.labels);  // refuses non-finite gradients itself
  if (!std::isfinite(loss)) return "the loss is not finite";
  return "";
}

// The other backend's step on the same parameters and batch, each tensor's
// gradient within 1e-2 of its largest entry and the loss within 1e-3
// relative: FP32 rounding of two orders of summation stays far below, a
// gradient of another batch or of half of it does not.
std::string against_other(const Config& c, const StepOptions& o, std::span<const float> params, const Batch& b,
                          std::span<const float> grads, double loss) {
  StepOptions other = o;
  other.backend = o.backend == Backend::Hand ? Backend::Wrapped : Backend::Hand;
  const ParamLayout L(c);
  std::vector<float> g(L.total);
  const double want = Step(c, other).forward_backward(params, b.tokens, b.labels, g);
  if (!(std::fabs(loss - want) <= 1e-3 * std::fabs(want)))
    return "loss " + std::to_string(loss) + " against the other backend's " + std::to_string(want);
  for (const Tensor& t : L.tensors) {
    double err = 0, mag = 0;
    for (std::size_t i = t.offset; i < t.offset + t.size(); ++i) {
      const double d = double(grads[i]) - g[i];
      err = std::max(err, std::isnan(d) ? INFINITY : std::fabs(d));
      mag = std::max(mag, std::fabs(double(g[i])));
    }
    if (!(err <= 1e-2 * mag))
      return "gradient of " + t.name + ": max |err| " + std::to_string(err) + " against the other backend's (max |g| " +
             std::to_string(mag) + ")";
  }
  return "";
}

std::map<std::string, std::string>& verdicts() {
  static std::map<std::string, std::string> m;
  return m;
}

void bench_step(benchmark::State& state, const pb::Case& cs) {
  const popper_train_shape& sh = POPPER_TRAIN_SHAPES[cs.shape];
  const Backend backend = cs.tier == pb::Tier::Hand ? Backend::Hand : Backend::Wrapped;
  const StepOptions o{backend, cs.threads, popper::cpu::Isa::Auto};
  const std::string key = format_bench_name(cs.name());
  std::unique_ptr<Trainer> tr;
  Batch batch;
  try {
    auto it = verdicts().find(key);
    if (it == verdicts().end()) it = verdicts().emplace(key, verify(sh, o)).first;
    if (!it->second.empty()) return pb::skip(state, pb::Verdict::incorrect(it->second));
    const Config c = popper_train_config(sh);
    tr = std::make_unique<Trainer>(c, o, AdamWConfig{}, 1);
    batch = copy_task_batch(c, 1, 0);
    tr->train_step(batch.tokens, batch.labels);  // warm-up: first touch of the workspace, as the ceiling's
  } catch (const std::exception& e) {
    return pb::skip(state, pb::Verdict::incorrect(std::string("threw ") + e.what()));
  }
  const Config c = popper_train_config(sh);
  trace::Tracer tracer(brick_names());
  std::int64_t n = 0;
  double loss = 0;
  // Under the skipped-work bench mutant: a trainer of the same model for the
  // first half of the batch (of the sequence when the batch is one row); the
  // timed trainer's gradients and parameters are left as they were.
  std::unique_ptr<Trainer> half;
  auto timed = [&] {
    tracer.begin_step(n++);
    if (pb::skips_work(cs)) {
      Config hc = c;
      (hc.batch >= 2 ? hc.batch : hc.seq) /= 2;
      if (!half) half = std::make_unique<Trainer>(hc, o, AdamWConfig{}, 1);
      const std::size_t tokens = std::size_t(hc.tokens());
      loss = half->train_step(std::span(batch.tokens).first(tokens), std::span(batch.labels).first(tokens), &tracer);
    } else {
      loss = tr->train_step(batch.tokens, batch.labels, &tracer);
    }
    tracer.end_step();
  };
  // The refill also keeps the parameters the step after timing starts from.
  std::vector<float> start;
  const bool oracle = std::strcmp(sh.set, "gate") == 0;
  const pb::Recheck recheck{[&](std::uint64_t seed) {
                              const Batch fresh = copy_task_batch(c, seed, 0);
                              std::ranges::copy(fresh.tokens, batch.tokens.begin());
                              std::ranges::copy(fresh.labels, batch.labels.begin());
                              start = tr->params();
                            },
                            [&] {
                              std::string e;
                              if (oracle) {
                                const auto bound =
                                    testbed::gradient_bound(c, start, batch.tokens, batch.labels, 3, 3.0);
                                const auto r = testbed::compare<float>(ParamLayout(c), bound, tr->grads(), loss);
                                if (!r.ok()) e = "against FP64: " + r.text();
                              } else {
                                e = against_other(c, o, start, batch, tr->grads(), loss);
                              }
                              return e.empty() ? pb::Verdict::verified() : pb::Verdict::incorrect(e);
                            }};
  pb::measure(state, cs, pb::Verdict::verified("tiny against FP64; this shape: finite loss and gradients"), timed,
              {.work = popper_train_flop(&sh)}, recheck);
}

void bench_span(benchmark::State& state) {
  trace::Tracer t(brick_names());
  std::int64_t step = 0;
  t.begin_step(step);
  int i = 0;
  for (auto _ : state) {
    trace::Scope s(&t, "span", kGemmForward, i, 1.0, 1.0);
    if (++i == 1000) {  // a step of 1000 spans, then the next (end_step's copy included)
      t.end_step();
      t.begin_step(++step);
      i = 0;
    }
  }
  t.end_step();
}

void register_all() {
  pb::Family("train")
      .shapes(POPPER_TRAIN_SHAPES, POPPER_TRAIN_SHAPE_COUNT)
      .tiers({pb::Tier::Wrapped, pb::Tier::Hand})
      .precisions({"f32"})
      .threads({1, 2})
      .where([](const pb::Case& c) { return std::strcmp(POPPER_TRAIN_SHAPES[c.shape].set, "none") != 0; })
      .add(bench_step);
  benchmark::RegisterBenchmark("train_trace/span", bench_span)->Unit(benchmark::kNanosecond);
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  const Config c = popper_train_config(*popper_train_find_shape("tiny"));
  return pb::run_suite(argc, argv,
                       {{pb::Tier::Hand, Step(c, {Backend::Hand, 1}).backend_tag()},
                        {pb::Tier::Wrapped, Step(c, {Backend::Wrapped, 1}).backend_tag()}});
}
