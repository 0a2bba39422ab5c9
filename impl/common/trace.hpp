// popper::trace: named, nested spans with a category, FLOPs and bytes, cheap
// enough to stay on in every training step (the seed's BrickTracer).
//
//   Tracer t({"gemm_forward", ...});          categories by index (a "brick" each)
//   t.begin_step(n);                          the root span of step n
//   { trace::Scope s(&t, "block", kNone, l);  nested: step -> block -> op
//     { trace::Scope op(&t, "wq", 0, -1, flops, bytes); ... } }
//   t.end_step();
//
// A span costs two steady-clock reads and one append to a vector reserved
// per step (no allocation in steady state). Only the thread that opened the
// step records; kernels' worker threads never touch the tracer.
//
// Steady state keeps per-step totals per category (the metrics) for every
// step and the spans of the last `detail_steps` steps. Escalation (the seed's
// thresholds): a category whose per-step time has a coefficient of variation
// over 15%, or whose efficiency (roofline time / measured time) is under 25%,
// is *escalated*: its op spans go into the exported trace; the other
// categories are exported as their step and block spans and per-step counters.
//
// Exports: Chrome / Perfetto trace-event JSON (ui.perfetto.dev, chrome://tracing)
// and OTLP/JSON (an ExportTraceServiceRequest: resourceSpans -> scopeSpans ->
// spans, one trace id per step, ids as hex, times as decimal-string nanoseconds).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace popper::trace {

inline constexpr int kNone = -1;  // category of structural spans (step, block)

struct Span {
  const char* name;               // a string with static storage duration
  int index;                      // e.g. the layer of a block span; -1: none
  int parent;                     // position of the parent in the step's spans; -1: the step itself
  int depth;                      // 0 for the step span
  int category;                   // kNone or an index into the tracer's categories
  std::int64_t start_ns, end_ns;  // steady clock
  double flops, bytes;
};

struct StepRecord {
  std::int64_t step = 0;
  std::int64_t start_ns = 0, end_ns = 0;
  std::vector<double> category_seconds;  // sum of the op spans of each category
  std::vector<double> category_flops, category_bytes;
};

std::int64_t now_ns();  // steady clock
using Clock = std::int64_t (*)();

class Tracer {
 public:
  // `clock` is now_ns; tests may give their own to make durations exact.
  explicit Tracer(std::vector<std::string> categories, int detail_steps = 64, Clock clock = &now_ns);

  const std::vector<std::string>& categories() const { return categories_; }
  int category_of(const std::string& name) const;  // -1 when unknown

  void begin_step(std::int64_t step);
  void end_step();
  int open(const char* name, int category, int index, double flops, double bytes);
  void close(int id);

  const std::vector<StepRecord>& steps() const { return steps_; }
  // Spans of the retained steps (the last detail_steps), oldest first, each
  // with its step number; the step span is element 0 of its step.
  struct DetailedStep {
    std::int64_t step;
    std::vector<Span> spans;
  };
  const std::vector<DetailedStep>& detail() const { return detail_; }
  // Wall clock (ns since the Unix epoch) of steady-clock time t.
  std::int64_t unix_ns(std::int64_t steady_ns) const { return steady_ns + unix_offset_ns_; }

 private:
  std::vector<std::string> categories_;
  int detail_steps_;
  std::vector<StepRecord> steps_;
  std::vector<DetailedStep> detail_;
  std::vector<Span> current_;
  std::vector<int> open_stack_;
  bool in_step_ = false;
  std::int64_t unix_offset_ns_ = 0;
  Clock clock_;
};

// RAII span; a null tracer records nothing.
class Scope {
 public:
  Scope(Tracer* t, const char* name, int category, int index = -1, double flops = 0, double bytes = 0)
      : t_(t), id_(t ? t->open(name, category, index, flops, bytes) : -1) {}
  ~Scope() {
    if (t_) t_->close(id_);
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Tracer* t_;
  int id_;
};

// ---- escalation (the seed's BrickEscalationThresholds: CV 15%, efficiency 25%)
struct Peaks {
  double flops_per_s = 0;  // measured FP32 peak at the run's thread count (0: unknown)
  double bytes_per_s = 0;  // measured bandwidth
};
struct CategoryStats {
  std::string name;
  double median_s = 0, cv = 0;  // over the steps considered
  double flops = 0, bytes = 0;  // per step (median step's)
  double roofline_s = 0;        // max(flops / peak, bytes / bandwidth)
  double efficiency = 0;        // roofline_s / median_s (0 when unknown or the bound is invalid)
  // Set when the brick ran faster than its roofline: the peak or the triad
  // behind it does not bound this brick, so no efficiency is reported.
  std::string bound_invalid;
  bool escalated = false;
  std::string why;  // "cv 23% > 15%", "efficiency 12% < 25%"
};
struct Thresholds {
  double cv = 0.15;
  double efficiency = 0.25;
};
// The median of v (0 for none): what budgets, the gate and the tables report.
double median(std::vector<double> v);
// Over the steps from `first_step` on (warm-up excluded).
std::vector<CategoryStats> category_stats(const Tracer& t, const Peaks& peaks, std::size_t first_step,
                                          const Thresholds& th = {});

// ---- exports (strings; the caller writes them atomically)
struct ExportOptions {
  std::string service = "popper";                               // process name / service.name
  std::vector<bool> detailed;                                   // per category: export its op spans (escalated)
  std::vector<std::pair<std::string, std::string>> attributes;  // resource attributes
};
std::string to_chrome_json(const Tracer& t, const ExportOptions& o);
std::string to_otlp_json(const Tracer& t, const ExportOptions& o);

// JSON string literal of s (quotes, backslashes and control characters escaped).
std::string json_quote(const std::string& s);

}  // namespace popper::trace
