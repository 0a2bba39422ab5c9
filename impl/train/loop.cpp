// The training loop under the Jidoka gate (budget.hpp): step, inject, gate.
#include <cstdlib>

#include "impl/train/budget.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::train {

namespace {
// A slow brick, simulated: a span of that brick spinning for `seconds`
// (busy, like a kernel that got slower, not a sleep the OS could hide).
void spin(trace::Tracer& t, int brick, double seconds) {
  trace::Scope s(&t, "injected_delay", brick);
  const std::int64_t until = trace::now_ns() + static_cast<std::int64_t>(seconds * 1e9);
  while (trace::now_ns() < until) {
  }
}
}  // namespace

Injection parse_injection(const std::string& spec) {
  const auto eq = spec.find('=');
  const auto bad = [&](const std::string& why) {
    return InvalidArgument("--inject-delay " + spec + ": " + why + " (expected BRICK=FACTORx or BRICK=SECONDSs)");
  };
  if (eq == std::string::npos || eq + 2 > spec.size()) throw bad("no '='");
  Injection in;
  const std::string name = spec.substr(0, eq), value = spec.substr(eq + 1);
  for (int b = 0; b < kBrickCount; ++b)
    if (brick_names()[static_cast<std::size_t>(b)] == name) in.brick = b;
  if (in.brick < 0) throw bad("unknown brick '" + name + "'");
  char* end = nullptr;
  const double x = std::strtod(value.c_str(), &end);
  const std::string unit(end);
  if (!(x > 0) || x > 1e6) throw bad("the amount must be a positive number");
  if (unit == "x") {
    if (x <= 1) throw bad("a factor must be > 1");
    in.factor = x;
  } else if (unit == "s") {
    in.seconds = x;
  } else {
    throw bad("unit '" + unit + "'");
  }
  return in;
}

LoopReport run_training(const LoopOptions& o, trace::Tracer& tracer) {
  if (o.steps < 1) throw InvalidArgument("train: steps must be >= 1");
  if (tracer.categories() != brick_names()) throw InvalidArgument("train: the tracer's categories must be the bricks");
  if (o.inject.brick >= 0 && o.inject.factor > 0 && !o.budget)
    throw InvalidArgument("train: a delay given as a factor of the brick's budget needs a budget");
  Trainer trainer(o.config, o.step, o.adamw, o.seed);
  LoopReport rep;
  rep.backend = trainer.step().backend_tag();
  rep.matmul_params = trainer.layout().matmul_params;
  const bool unwired = POPPER_MUTANT("jidoka-gate-unwired");
  for (std::int64_t i = 0; i < o.steps; ++i) {
    const Batch batch = copy_task_batch(o.config, o.seed, i);
    tracer.begin_step(i);
    double loss = 0;
    try {
      loss = trainer.train_step(batch.tokens, batch.labels, &tracer);
      if (o.inject.brick >= 0 && i >= o.inject.from_step) {
        const double extra = o.inject.factor > 0
                                 ? (o.inject.factor - 1) * o.budget->brick_s[static_cast<std::size_t>(o.inject.brick)]
                                 : o.inject.seconds;
        spin(tracer, o.inject.brick, extra);
      }
    } catch (...) {
      tracer.end_step();
      throw;
    }
    tracer.end_step();
    rep.losses.push_back(loss);
    rep.steps_run = i + 1;
    if (o.progress) {
      const auto& r = tracer.steps().back();
      o.progress(i, loss, static_cast<double>(r.end_ns - r.start_ns) * 1e-9);
    }
    if (o.budget) {
      rep.stop = jidoka_check(tracer, *o.budget, o.jidoka);
      if (rep.stop && !unwired) break;
    }
  }
  return rep;
}

}  // namespace popper::train
