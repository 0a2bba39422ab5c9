// Budgets (the baseline file), their measurement and the Jidoka gate (budget.hpp).
#include "impl/train/budget.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::train {

namespace {
constexpr const char* kSchema = "popper-train-budget-v1";

double step_seconds(const trace::StepRecord& r) { return static_cast<double>(r.end_ns - r.start_ns) * 1e-9; }
std::string ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f ms", s * 1e3);
  return b;
}
}  // namespace

std::string budgets_to_json(const std::string& fingerprint, const std::vector<Budget>& budgets) {
  nlohmann::ordered_json j{
      {"schema", kSchema}, {"fingerprint", fingerprint}, {"budgets", nlohmann::ordered_json::array()}};
  for (const Budget& b : budgets) {
    nlohmann::ordered_json bricks = nlohmann::ordered_json::object();
    for (int i = 0; i < kBrickCount; ++i)
      bricks[brick_names()[static_cast<std::size_t>(i)]] = b.brick_s[static_cast<std::size_t>(i)];
    j["budgets"].push_back({{"preset", b.preset},
                            {"backend", b.backend},
                            {"threads", b.threads},
                            {"steps", b.steps},
                            {"warmup", b.warmup},
                            {"date", b.date},
                            {"commit", b.commit},
                            {"step_seconds", b.step_s},
                            {"bricks", bricks}});
  }
  return j.dump(2) + "\n";
}

std::vector<Budget> budgets_from_json(const std::string& text, const std::string& origin,
                                      const std::string& expected_fingerprint) {
  auto fail = [&](const std::string& what) { throw Error(origin + ": " + what); };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("not JSON: ") + e.what());
  }
  if (!j.is_object() || j.value("schema", "") != kSchema)
    fail(std::string("not a budget file (schema ") + kSchema + ")");
  const std::string fp = j.value("fingerprint", "");
  if (!expected_fingerprint.empty() && fp != expected_fingerprint && !POPPER_MUTANT("budget-fingerprint-unchecked"))
    fail("measured on machine " + fp + ", this is " + expected_fingerprint + ": budgets are per machine");
  if (!j.contains("budgets") || !j["budgets"].is_array()) fail("no 'budgets' list");
  std::vector<Budget> out;
  try {
    for (const auto& e : j["budgets"]) {
      Budget b;
      b.preset = e.at("preset").get<std::string>(), b.backend = e.at("backend").get<std::string>();
      b.threads = e.at("threads").get<int>(), b.steps = e.at("steps").get<std::int64_t>();
      b.warmup = e.value("warmup", std::int64_t{0}), b.date = e.value("date", ""), b.commit = e.value("commit", "");
      b.step_s = e.at("step_seconds").get<double>();
      const std::string key = b.preset + "/" + b.backend + "/threads:" + std::to_string(b.threads);
      if (!(b.step_s > 0) || !std::isfinite(b.step_s)) fail(key + ": step_seconds must be > 0");
      for (int i = 0; i < kBrickCount; ++i) {
        const std::string& name = brick_names()[static_cast<std::size_t>(i)];
        if (!e.at("bricks").contains(name)) fail(key + ": brick " + name + " missing");
        const double s = e["bricks"][name].get<double>();
        if (!(s >= 0) || !std::isfinite(s)) fail(key + ": brick " + name + " must be a time >= 0");
        b.brick_s[static_cast<std::size_t>(i)] = s;
      }
      out.push_back(b);
    }
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("malformed entry: ") + e.what());
  }
  return out;
}

void upsert_budget(std::vector<Budget>& budgets, const Budget& b) {
  for (Budget& x : budgets)
    if (x.preset == b.preset && x.backend == b.backend && x.threads == b.threads) {
      x = b;
      return;
    }
  budgets.push_back(b);
}

const Budget* find_budget(const std::vector<Budget>& budgets, const std::string& preset, const std::string& backend,
                          int threads) {
  for (const Budget& b : budgets)
    if (b.preset == preset && b.backend == backend && b.threads == threads) return &b;
  return nullptr;
}

Budget measure_budget(const trace::Tracer& t, std::int64_t warmup) {
  const auto& steps = t.steps();
  if (static_cast<std::int64_t>(steps.size()) <= warmup)
    throw InvalidArgument("budget: " + std::to_string(steps.size()) + " steps recorded, need more than the " +
                          std::to_string(warmup) + " warm-up steps");
  Budget b;
  b.steps = static_cast<std::int64_t>(steps.size()) - warmup, b.warmup = warmup;
  std::vector<double> step_times;
  for (std::size_t i = static_cast<std::size_t>(warmup); i < steps.size(); ++i)
    step_times.push_back(step_seconds(steps[i]));
  b.step_s = trace::median(step_times);
  for (int c = 0; c < kBrickCount; ++c) {
    std::vector<double> v;
    for (std::size_t i = static_cast<std::size_t>(warmup); i < steps.size(); ++i)
      v.push_back(steps[i].category_seconds[static_cast<std::size_t>(c)]);
    b.brick_s[static_cast<std::size_t>(c)] = trace::median(v);
  }
  return b;
}

std::string Alert::text() const {
  char b[64];
  std::snprintf(b, sizeof b, "%.1f", factor);
  return "JIDOKA: " + std::string(brick == "step" ? "the step" : "brick " + brick) + " took " + ms(measured_s) +
         " (median of steps " + std::to_string(first_step) + "-" + std::to_string(step) + ") > " + b +
         " x its budget " + ms(budget_s) + ": training stopped at step " + std::to_string(step);
}

std::optional<Alert> jidoka_check(const trace::Tracer& t, const Budget& b, const JidokaOptions& o) {
  const auto& steps = t.steps();
  const std::int64_t n = static_cast<std::int64_t>(steps.size());
  if (n - o.warmup < o.window || o.window < 1) return std::nullopt;
  auto windowed = [&](auto value) {
    std::vector<double> v;
    for (std::int64_t i = n - o.window; i < n; ++i) v.push_back(value(steps[static_cast<std::size_t>(i)]));
    return trace::median(v);
  };
  auto judge = [&](const std::string& name, double budget, double measured) -> std::optional<Alert> {
    if (budget > 0 && measured > o.factor * budget && measured - o.factor * budget >= o.min_excess * b.step_s)
      return Alert{
          name, budget, measured, o.factor, steps[static_cast<std::size_t>(n - o.window)].step, steps.back().step};
    return std::nullopt;
  };
  for (int c = 0; c < kBrickCount; ++c) {
    const auto cs = static_cast<std::size_t>(c);
    if (auto a = judge(brick_names()[cs], b.brick_s[cs],
                       windowed([&](const trace::StepRecord& r) { return r.category_seconds[cs]; })))
      return a;
  }
  return judge("step", b.step_s, windowed([](const trace::StepRecord& r) { return step_seconds(r); }));
}

}  // namespace popper::train
