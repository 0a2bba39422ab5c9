// FALSIFY-BUDGET-004 (the exported traces parse as trace-event JSON and
// OTLP/JSON, nesting kept) and -005 (CV and efficiency escalation).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "impl/train/budget.hpp"
#include "support.hpp"

namespace {

using namespace popper::train;
using nlohmann::json;
namespace trace = popper::trace;

bool hex_of(const json& v, std::size_t digits) {
  if (!v.is_string() || v.get<std::string>().size() != digits) return false;
  return v.get<std::string>().find_first_not_of("0123456789abcdef") == std::string::npos;
}

POPPER_FALSIFIER("FALSIFY-BUDGET-004", [](const popper::Params& p) {
  trace::Tracer tr(brick_names());
  LoopOptions o;
  o.config = testbed::preset(p.string("preset").c_str());
  o.steps = p.integer("steps");
  const LoopReport rep = run_training(o, tr);
  trace::ExportOptions ex;
  ex.service = "popper \"train\" \\ test\n";
  ex.attributes = {{"preset", "tiny"}};
  ex.detailed.assign(kBrickCount, false);
  ex.detailed[kGemmForward] = ex.detailed[kAttention] = true;  // as if these two were escalated

  // ---- Chrome / Perfetto trace-event JSON
  json chrome;
  ASSERT_NO_THROW(chrome = json::parse(trace::to_chrome_json(tr, ex))) << "the trace-event export is not JSON";
  ASSERT_TRUE(chrome.contains("traceEvents") && chrome["traceEvents"].is_array());
  std::size_t counters = 0;
  std::map<std::string, std::size_t> per_cat;
  std::vector<json> complete;
  bool named = false;
  for (const json& e : chrome["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e["ph"].is_string() && e.contains("pid") && e.contains("name")) << e.dump();
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "process_name") named = e["args"]["name"] == ex.service;
    if (ph == "C") ++counters;
    if (ph != "X") continue;
    ASSERT_TRUE(e["ts"].is_number() && e["dur"].is_number() && e["dur"].get<double>() >= 0 && e.contains("tid") &&
                e["cat"].is_string() && e["args"]["flops"].is_number() && e["args"]["step"].is_number())
        << e.dump();
    ++per_cat[e["cat"].get<std::string>()];
    complete.push_back(e);
  }
  EXPECT_TRUE(named) << "the process name did not survive escaping";
  EXPECT_EQ(counters, tr.steps().size()) << "one counter event per step";
  EXPECT_GT(per_cat["gemm_forward"], 0u);
  EXPECT_GT(per_cat["attention"], 0u);
  EXPECT_EQ(per_cat.count("gemm_backward"), 0u) << "a brick that was not escalated exported its op spans";
  EXPECT_GT(per_cat["structure"], 0u) << "step and block spans are always exported";
  // Nesting: every X event lies inside the step span of its step (1 us of rounding slack).
  std::map<long, std::pair<double, double>> steps;
  for (const json& e : complete)
    if (e["name"] == "step")
      steps[e["args"]["step"].get<long>()] = {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()};
  EXPECT_EQ(steps.size(), tr.steps().size());
  for (const json& e : complete) {
    const auto& s = steps[e["args"]["step"].get<long>()];
    EXPECT_TRUE(e["ts"].get<double>() >= s.first - 1e-3 &&
                e["ts"].get<double>() + e["dur"].get<double>() <= s.second + 1e-3)
        << "span outside its step: " << e.dump();
  }

  // ---- OTLP/JSON
  json otlp;
  ASSERT_NO_THROW(otlp = json::parse(trace::to_otlp_json(tr, ex))) << "the OTLP export is not JSON";
  ASSERT_TRUE(otlp["resourceSpans"].is_array() && otlp["resourceSpans"].size() == 1);
  const json& rs = otlp["resourceSpans"][0];
  bool service = false;
  for (const json& a : rs["resource"]["attributes"])
    if (a["key"] == "service.name") service = a["value"]["stringValue"] == ex.service;
  EXPECT_TRUE(service) << "service.name did not survive escaping";
  const json& spans = rs["scopeSpans"][0]["spans"];
  ASSERT_TRUE(spans.is_array() && !spans.empty());
  std::map<std::string, std::set<std::string>> ids;  // trace -> span ids
  for (const json& s : spans) ids[s["traceId"]].insert(s["spanId"].get<std::string>());
  EXPECT_EQ(ids.size(), tr.steps().size()) << "one trace per step";
  std::size_t children = 0;
  for (const json& s : spans) {
    ASSERT_TRUE(hex_of(s["traceId"], 32) && hex_of(s["spanId"], 16) && s["name"].is_string() && s["kind"] == 1)
        << s.dump();
    const auto start = std::stoull(s["startTimeUnixNano"].get<std::string>()),
               end = std::stoull(s["endTimeUnixNano"].get<std::string>());
    EXPECT_LE(start, end) << s.dump();
    EXPECT_GT(start, 1500000000000000000ull) << "not Unix-epoch nanoseconds: " << s.dump();
    if (s.contains("parentSpanId")) {
      ++children;
      EXPECT_TRUE(hex_of(s["parentSpanId"], 16) && ids[s["traceId"]].count(s["parentSpanId"].get<std::string>()))
          << "a parent that is not a span of the same trace: " << s.dump();
    }
  }
  EXPECT_EQ(children, spans.size() - tr.steps().size()) << "every span but the step spans has a parent";
  popper::record_backend(rep.backend);
});

POPPER_FALSIFIER("FALSIFY-BUDGET-005", [](const popper::Params& p) {
  static std::int64_t now = 0;
  trace::Tracer tr({"steady", "unstable", "inefficient", "efficient", "beyond"}, 4, [] { return now; });
  const std::int64_t ms = 1000000;
  for (std::int64_t i = 0; i < p.integer("steps"); ++i) {
    tr.begin_step(i);
    // FLOPs against a 1 TFLOP/s peak: inefficient's roofline is 1 ms of its 10, efficient's 5 ms, and
    // beyond's 20 ms: it runs faster than its bound.
    const std::pair<int, std::int64_t> ops[] = {
        {0, 10 * ms}, {1, (i % 2 ? 15 : 5) * ms}, {2, 10 * ms}, {3, 10 * ms}, {4, 10 * ms}};
    const double flops[] = {0, 0, 1e9, 5e9, 2e10};
    for (const auto& [c, d] : ops) {
      const int id = tr.open("op", c, -1, flops[c], 0);
      now += d;
      tr.close(id);
    }
    tr.end_step();
  }
  const auto stats = trace::category_stats(tr, {1e12, 0}, 0);
  for (const auto& s : stats)
    std::printf("  %-12s median %.1f ms cv %.2f efficiency %.2f escalated %d (%s) %s\n", s.name.c_str(),
                s.median_s * 1e3, s.cv, s.efficiency, s.escalated, s.why.c_str(), s.bound_invalid.c_str());
  EXPECT_FALSE(stats[0].escalated) << "steady: " << stats[0].why;
  EXPECT_TRUE(stats[1].escalated && stats[1].why.find("cv") != std::string::npos)
      << "unstable (cv " << stats[1].cv << ")";
  EXPECT_TRUE(stats[2].escalated && stats[2].why.find("efficiency") != std::string::npos)
      << "inefficient: " << stats[2].why;
  EXPECT_FALSE(stats[3].escalated) << "efficient: " << stats[3].why;
  EXPECT_NEAR(stats[3].efficiency, 0.5, 1e-12);
  EXPECT_TRUE(stats[3].bound_invalid.empty()) << stats[3].bound_invalid;
  // A bound the brick beats bounds nothing: no efficiency, a reason, and no escalation for it.
  EXPECT_NE(stats[4].bound_invalid.find("200.0%"), std::string::npos) << "beyond: '" << stats[4].bound_invalid << "'";
  EXPECT_EQ(stats[4].efficiency, 0) << "an efficiency over 100% is reported";
  EXPECT_FALSE(stats[4].escalated) << "beyond: " << stats[4].why;
  popper::record_backend("host");
});

}  // namespace
