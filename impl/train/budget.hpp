// The step budget of contracts/train/training-step-budget-v1.yaml: per-brick
// budgets measured by `popper budget baseline` (never typed by hand), the
// Jidoka gate that stops training on a 2x violation, and the loop that runs
// N steps under it.
//
//   T_step = T_gemm_forward + T_gemm_backward + T_attention + T_elementwise
//          + T_cross_entropy + T_embedding + T_optimizer + T_overhead + T_gap
//   T_gap  = what no brick's span covers (FALSIFY-BUDGET-001: < 5% of T_step)
//
// A budget is the median over the baseline's steps (warm-up excluded) of each
// brick's per-step time. The gate, after every step: for each brick (and the
// whole step), the median of its last `window` steps; it fires when that
// median exceeds factor x budget and the excess over factor x budget is at
// least min_excess of the step budget (a brick that is 0.1% of the step
// doubling is noise, not a regression to stop for).
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "impl/common/trace.hpp"
#include "impl/train/train.hpp"

namespace popper::train {

struct Budget {
  std::string preset, backend;  // the key, with threads (and the file's machine fingerprint)
  int threads = 1;
  double step_s = 0;
  std::array<double, kBrickCount> brick_s{};
  // Provenance of the measurement.
  std::int64_t steps = 0, warmup = 0;
  std::string date, commit;
};

// baselines/<fingerprint>/train-budget.json: {"schema": "popper-train-budget-v1",
// "fingerprint": ..., "budgets": [{preset, backend, threads, steps, warmup,
// date, commit, step_seconds, bricks: {name: seconds}}]}.
std::string budgets_to_json(const std::string& fingerprint, const std::vector<Budget>& budgets);
// Throws popper::Error naming `origin` and what is wrong (schema, a missing
// brick, a non-positive time, another machine's fingerprint).
std::vector<Budget> budgets_from_json(const std::string& text, const std::string& origin,
                                      const std::string& expected_fingerprint);
// Replaces the entry with the same key, or appends.
void upsert_budget(std::vector<Budget>& budgets, const Budget& b);
const Budget* find_budget(const std::vector<Budget>& budgets, const std::string& preset, const std::string& backend,
                          int threads);

// Budget of the steps [warmup, end) of a tracer: the per-brick medians.
Budget measure_budget(const trace::Tracer& t, std::int64_t warmup);

struct JidokaOptions {
  double factor = 2.0;
  int window = 3;            // steps whose median is judged
  std::int64_t warmup = 1;   // steps never judged
  double min_excess = 0.01;  // of the step budget
};
struct Alert {
  std::string brick;  // a brick name or "step"
  double budget_s = 0, measured_s = 0, factor = 0;
  std::int64_t first_step = 0, step = 0;  // the window judged
  // "JIDOKA: brick gemm_forward took 31.2 ms (median of steps 4-6) > 2.0 x its budget 10.1 ms: training stopped at step
  // 6"
  std::string text() const;
};
std::optional<Alert> jidoka_check(const trace::Tracer& t, const Budget& b, const JidokaOptions& o);

// ---- the loop
struct Injection {
  int brick = -1;      // -1: none
  double factor = 0;   // the brick takes factor x its budget (needs a budget), or
  double seconds = 0;  // this many extra seconds per step
  std::int64_t from_step = 0;
};
struct LoopOptions {
  Config config;
  StepOptions step;
  AdamWConfig adamw;
  std::uint64_t seed = 1;  // parameters and batches
  std::int64_t steps = 10;
  const Budget* budget = nullptr;  // null: no gate
  JidokaOptions jidoka;
  Injection inject;
  std::function<void(std::int64_t step, double loss, double seconds)> progress;
};
struct LoopReport {
  std::vector<double> losses;
  std::int64_t steps_run = 0;
  std::optional<Alert> stop;  // the gate fired: the loop stopped here
  std::string backend;
  std::int64_t matmul_params = 0;
};
// Runs the copy task for `steps` steps (batch i = copy_task_batch(seed, i)),
// recording into `tracer` (categories = brick_names()).
LoopReport run_training(const LoopOptions& o, trace::Tracer& tracer);

// Parses "gemm_forward=3x" (factor) or "gemm_forward=0.25s" (seconds); throws InvalidArgument.
Injection parse_injection(const std::string& spec);

}  // namespace popper::train
