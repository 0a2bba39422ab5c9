// FALSIFY-BUDGET-001 (the bricks cover the step), -002 (the dominant brick),
// -003 (the Jidoka gate stops the loop), -006 (the budget file).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "impl/train/budget.hpp"
#include "support.hpp"

namespace {

using namespace popper::train;
using namespace popper::train::testing;

// Runs `steps` steps of the params' model (a list of one, so `emulated:` can replace it) under a
// tracer (no gate) and returns the loop's report.
LoopReport traced_run(const popper::Params& p, popper::trace::Tracer& tr) {
  LoopOptions o;
  const auto models = p.list("model");
  if (models.size() != 1) throw popper::InvalidArgument(p.owner() + ": params.model must list one model");
  o.config = model_of(models[0]);
  o.step = {Backend::Hand, static_cast<int>(p.integer("threads", 1)), popper::cpu::Isa::Auto};
  o.steps = p.integer("steps");
  return run_training(o, tr);
}

double step_seconds(const popper::trace::StepRecord& r) { return static_cast<double>(r.end_ns - r.start_ns) * 1e-9; }

POPPER_FALSIFIER("FALSIFY-BUDGET-001", [](const popper::Params& p) {
  popper::trace::Tracer tr(brick_names());
  const LoopReport rep = traced_run(p, tr);
  const double want = p.number("coverage");
  for (std::size_t i = static_cast<std::size_t>(p.integer("warmup")); i < tr.steps().size(); ++i) {
    const auto& r = tr.steps()[i];
    double sum = 0;
    for (const double s : r.category_seconds) sum += s;
    const double cover = sum / step_seconds(r);
    std::printf("  step %zu: %.1f ms, bricks %.1f ms, coverage %.4f\n", i, step_seconds(r) * 1e3, sum * 1e3, cover);
    EXPECT_GE(cover, want) << "step " << i << ": the bricks cover " << cover << " of the step";
  }
  popper::record_backend(rep.backend);
});

POPPER_FALSIFIER("FALSIFY-BUDGET-002", [](const popper::Params& p) {
  popper::trace::Tracer tr(brick_names());
  const LoopReport rep = traced_run(p, tr);
  const Budget b = measure_budget(tr, p.integer("warmup"));
  const auto top = std::max_element(b.brick_s.begin(), b.brick_s.end()) - b.brick_s.begin();
  const double gemm = (b.brick_s[kGemmForward] + b.brick_s[kGemmBackward]) / b.step_s;
  for (int i = 0; i < kBrickCount; ++i)
    std::printf("  %-14s %9.2f ms  %5.1f%%\n", brick_names()[static_cast<std::size_t>(i)].c_str(),
                b.brick_s[static_cast<std::size_t>(i)] * 1e3, 100 * b.brick_s[static_cast<std::size_t>(i)] / b.step_s);
  std::printf("  step %.1f ms; GEMM share %.1f%%\n", b.step_s * 1e3, 100 * gemm);
  EXPECT_EQ(brick_names()[static_cast<std::size_t>(top)], p.string("dominant")) << "the dominant brick";
  EXPECT_GT(gemm, p.number("gemm_share_above")) << "GEMM's share of the step";
  popper::record_backend(rep.backend);
});

POPPER_FALSIFIER("FALSIFY-BUDGET-003", [](const popper::Params& p) {
  LoopOptions o;
  o.config = testbed::preset(p.string("preset").c_str());
  o.step = {Backend::Hand, 1, popper::cpu::Isa::Auto};
  const Injection inj = parse_injection(p.string("inject"));
  const std::int64_t from = p.integer("inject_from"), steps = p.integer("steps");
  // A clean run under the gate must not stop; on a shared machine a burst of load can still
  // double a brick for three steps, so a stop of the clean run is retried once on a new baseline.
  Budget budget;
  std::optional<Alert> clean_stop;
  for (int attempt = 0; attempt < 2; ++attempt) {
    popper::trace::Tracer base(brick_names());
    o.steps = p.integer("baseline_steps");
    run_training(o, base);
    budget = measure_budget(base, p.integer("warmup"));
    popper::trace::Tracer clean(brick_names());
    o.steps = steps, o.budget = &budget;
    clean_stop = run_training(o, clean).stop;
    o.budget = nullptr;
    if (!clean_stop) break;
    std::printf("  clean run stopped (%s): measuring the baseline again\n", clean_stop->text().c_str());
  }
  EXPECT_FALSE(clean_stop.has_value()) << "the gate stopped a clean run twice: " << clean_stop->text();

  // The same bursts can stop the injected run on another brick first (a true alert about the
  // host): such a run is retried, up to three times.
  LoopReport rep;
  for (int attempt = 0; attempt < 3; ++attempt) {
    popper::trace::Tracer tr(brick_names());
    o.steps = steps, o.budget = &budget, o.inject = inj, o.inject.from_step = from;
    rep = run_training(o, tr);
    if (!rep.stop || rep.stop->brick == "gemm_forward") break;
    std::printf("  the injected run stopped on another brick (%s): again\n", rep.stop->text().c_str());
  }
  ASSERT_TRUE(rep.stop.has_value()) << "a 3x gemm_forward did not fire the gate";
  const Alert& a = *rep.stop;
  std::printf("  budget gemm_forward %.3f ms; %s (ran %lld of %lld steps)\n", budget.brick_s[kGemmForward] * 1e3,
              a.text().c_str(), static_cast<long long>(rep.steps_run), static_cast<long long>(steps));
  EXPECT_LT(rep.steps_run, steps) << "the loop kept training after the alert";
  EXPECT_LE(rep.steps_run, from + o.jidoka.window) << "the gate fired late";
  EXPECT_EQ(a.brick, "gemm_forward");
  EXPECT_DOUBLE_EQ(a.budget_s, budget.brick_s[kGemmForward]);
  EXPECT_GT(a.measured_s, 2 * a.budget_s);
  const std::string text = a.text();
  for (const char* part : {"gemm_forward", "budget", "ms", "stopped"})
    EXPECT_NE(text.find(part), std::string::npos) << "the alert does not say '" << part << "': " << text;
  popper::record_backend(rep.backend);
});

POPPER_FALSIFIER("FALSIFY-BUDGET-006", [](const popper::Params&) {
  Budget b;
  b.preset = "small", b.backend = "hand", b.threads = 2, b.steps = 9, b.warmup = 1, b.date = "2026-11-26",
  b.commit = "abc";
  b.step_s = 0.123456789012345;
  for (int i = 0; i < kBrickCount; ++i) b.brick_s[static_cast<std::size_t>(i)] = 0.001 * (i + 1) / 3.0;
  const std::string fp = "amd-epyc-2c-avx512-haswell-a8ed2323";
  const std::string text = budgets_to_json(fp, {b});
  const auto back = budgets_from_json(text, "t.json", fp);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_TRUE(back[0].preset == b.preset && back[0].backend == b.backend && back[0].threads == b.threads &&
              back[0].step_s == b.step_s && back[0].brick_s == b.brick_s && back[0].steps == b.steps)
      << "the round trip changed the budget";
  ASSERT_NE(find_budget(back, "small", "hand", 2), nullptr);
  EXPECT_EQ(find_budget(back, "small", "hand", 1), nullptr);
  auto refused = [&](const std::string& t, const std::string& fingerprint, const std::string& says) {
    try {
      budgets_from_json(t, "t.json", fingerprint);
    } catch (const popper::Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos)
          << "the refusal does not say '" << says << "': " << e.what();
      return;
    }
    ADD_FAILURE() << "accepted a file that should be refused (" << says << ")";
  };
  refused(text, "intel-xeon-8c-avx2-haswell-00000000", "intel-xeon-8c");
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  refused(edit("\"optimizer\"", "\"optimiser\""), fp, "optimizer missing");
  refused(edit("\"overhead\": 0", "\"overhead\": -0"), fp, "overhead");
  refused(edit("\"step_seconds\": 0.1", "\"step_seconds\": 0.0*0.1"), fp, "not JSON");
  refused(edit("\"step_seconds\": 0.123456789012345", "\"step_seconds\": 0"), fp, "step_seconds");
  refused("{}", fp, "schema");

  // measure_budget: exact medians from a test clock (step i: every brick 1 + i ms, then 10 + 2i ms outside them).
  static std::int64_t now = 0;
  popper::trace::Tracer tr(brick_names(), 8, [] { return now; });
  for (int i = 0; i < 5; ++i) {
    tr.begin_step(i);
    for (int c = 0; c < kBrickCount; ++c) {
      const int id = tr.open("op", c, -1, 0, 0);
      now += 1000000 * (1 + i);
      tr.close(id);
    }
    now += 10000000 + 2000000 * i;
    tr.end_step();
  }
  const Budget m = measure_budget(tr, 1);  // steps 1..4: brick medians 3.5 ms
  for (int c = 0; c < kBrickCount; ++c) EXPECT_NEAR(m.brick_s[static_cast<std::size_t>(c)], 3.5e-3, 1e-15);
  EXPECT_NEAR(m.step_s, 43e-3, 1e-15);  // steps 1..4 last 8 (1 + i) + 10 + 2i ms: 28, 38, 48, 58
  EXPECT_EQ(m.steps, 4);
  popper::record_backend("host");
});

}  // namespace
