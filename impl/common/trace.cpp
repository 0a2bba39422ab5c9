// popper::trace (trace.hpp): recording, escalation statistics and the two exports.
#include "impl/common/trace.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::trace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Tracer::Tracer(std::vector<std::string> categories, int detail_steps, Clock clock)
    : categories_(std::move(categories)), detail_steps_(detail_steps < 1 ? 1 : detail_steps), clock_(clock) {
  const auto wall =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  unix_offset_ns_ = wall - clock_();
  current_.reserve(1024);
  open_stack_.reserve(16);
}

int Tracer::category_of(const std::string& name) const {
  for (std::size_t i = 0; i < categories_.size(); ++i)
    if (categories_[i] == name) return static_cast<int>(i);
  return -1;
}

void Tracer::begin_step(std::int64_t step) {
  if (in_step_) throw Error("trace: begin_step inside an open step");
  in_step_ = true;
  current_.clear();
  open_stack_.clear();
  current_.push_back(Span{"step", -1, -1, 0, kNone, clock_(), 0, 0, 0});
  current_[0].index = static_cast<int>(step);
  open_stack_.push_back(0);
}

int Tracer::open(const char* name, int category, int index, double flops, double bytes) {
  if (!in_step_) return -1;  // outside a step nothing is recorded
  const int parent = open_stack_.back();
  const int id = static_cast<int>(current_.size());
  current_.push_back(
      Span{name, index, parent, current_[static_cast<std::size_t>(parent)].depth + 1, category, 0, 0, flops, bytes});
  open_stack_.push_back(id);
  current_.back().start_ns = clock_();
  return id;
}

void Tracer::close(int id) {
  if (id < 0 || !in_step_) return;
  current_[static_cast<std::size_t>(id)].end_ns = clock_();
  if (!open_stack_.empty() && open_stack_.back() == id) open_stack_.pop_back();
}

void Tracer::end_step() {
  if (!in_step_) throw Error("trace: end_step without begin_step");
  current_[0].end_ns = clock_();
  in_step_ = false;
  StepRecord r;
  r.step = current_[0].index;
  r.start_ns = current_[0].start_ns;
  r.end_ns = current_[0].end_ns;
  const std::size_t n = categories_.size();
  r.category_seconds.assign(n, 0.0), r.category_flops.assign(n, 0.0), r.category_bytes.assign(n, 0.0);
  for (const Span& s : current_)
    if (s.category >= 0 && static_cast<std::size_t>(s.category) < n) {
      const auto c = static_cast<std::size_t>(s.category);
      r.category_seconds[c] += static_cast<double>(s.end_ns - s.start_ns) * 1e-9;
      r.category_flops[c] += s.flops;
      r.category_bytes[c] += s.bytes;
    }
  steps_.push_back(std::move(r));
  if (static_cast<int>(detail_.size()) == detail_steps_) detail_.erase(detail_.begin());
  detail_.push_back(DetailedStep{current_[0].index, current_});
}

// ---------------------------------------------------------------- escalation
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

namespace {
std::string percent(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * x);
  return b;
}
}  // namespace

std::vector<CategoryStats> category_stats(const Tracer& t, const Peaks& peaks, std::size_t first_step,
                                          const Thresholds& th) {
  std::vector<CategoryStats> out;
  const auto& steps = t.steps();
  const bool ignore_cv = POPPER_MUTANT("trace-escalation-cv-ignored");
  const bool keep_beaten_bound = POPPER_MUTANT("trace-beaten-bound-kept");
  for (std::size_t c = 0; c < t.categories().size(); ++c) {
    CategoryStats s;
    s.name = t.categories()[c];
    std::vector<double> times;
    for (std::size_t i = first_step; i < steps.size(); ++i) times.push_back(steps[i].category_seconds[c]);
    if (times.empty()) {
      out.push_back(s);
      continue;
    }
    s.median_s = median(times);
    double mean = 0, var = 0;
    for (double x : times) mean += x;
    mean /= static_cast<double>(times.size());
    for (double x : times) var += (x - mean) * (x - mean);
    s.cv = times.size() > 1 && mean > 0 ? std::sqrt(var / static_cast<double>(times.size() - 1)) / mean : 0;
    const StepRecord& last = steps.back();
    s.flops = last.category_flops[c], s.bytes = last.category_bytes[c];
    const double tf = peaks.flops_per_s > 0 ? s.flops / peaks.flops_per_s : 0;
    const double tb = peaks.bytes_per_s > 0 ? s.bytes / peaks.bytes_per_s : 0;
    s.roofline_s = std::max(tf, tb);
    s.efficiency = s.median_s > 0 && s.roofline_s > 0 ? s.roofline_s / s.median_s : 0;
    if (s.efficiency > 1 && !keep_beaten_bound) {
      s.bound_invalid =
          "measured at " + percent(s.efficiency) +
          (tf >= tb ? " of its FP32-peak roofline: the brick's FLOP count or the peak probe is wrong "
                      "for it"
                    : " of its triad roofline: its operands are partly cache-resident, or the triad's footprint, "
                      "access pattern, thread count or page size differ from this brick's") +
          ", so the bound is invalid";
      s.efficiency = 0;
    }
    if (s.cv > th.cv && !ignore_cv) {
      s.escalated = true;
      s.why = "cv " + percent(s.cv) + " > " + percent(th.cv);
    }
    if (s.roofline_s > 0 && s.bound_invalid.empty() && s.efficiency < th.efficiency) {
      s.why +=
          std::string(s.escalated ? "; " : "") + "efficiency " + percent(s.efficiency) + " < " + percent(th.efficiency);
      s.escalated = true;
    }
    out.push_back(s);
  }
  return out;
}

// ---------------------------------------------------------------- exports
std::string json_quote(const std::string& s) {
  std::string out = "\"";
  const bool raw = POPPER_MUTANT("trace-json-unescaped");
  for (const unsigned char ch : s) {
    if (raw) {
      out += static_cast<char>(ch);
      continue;
    }
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (ch < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", ch);
          out += b;
        } else {
          out += static_cast<char>(ch);
        }
    }
  }
  return out + "\"";
}

namespace {

std::string num(double x) {
  if (!std::isfinite(x)) return "0";
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", x);
  return b;
}

std::string span_name(const Span& s) {
  return s.index >= 0 && s.depth > 0 ? std::string(s.name) + "." + std::to_string(s.index) : std::string(s.name);
}

bool exported(const Span& s, const ExportOptions& o) {
  if (s.category < 0) return true;  // step and block spans always
  const auto c = static_cast<std::size_t>(s.category);
  return c < o.detailed.size() && o.detailed[c];
}

std::string category_name(const Tracer& t, int c) {
  return c >= 0 && static_cast<std::size_t>(c) < t.categories().size() ? t.categories()[static_cast<std::size_t>(c)]
                                                                       : std::string("structure");
}

}  // namespace

std::string to_chrome_json(const Tracer& t, const ExportOptions& o) {
  const std::int64_t t0 = t.steps().empty() ? 0 : t.steps().front().start_ns;
  auto us = [&](std::int64_t ns) { return num(static_cast<double>(ns - t0) * 1e-3); };
  std::string j = "{\"displayTimeUnit\":\"ms\",\"otherData\":{";
  for (std::size_t i = 0; i < o.attributes.size(); ++i)
    j += (i ? "," : "") + json_quote(o.attributes[i].first) + ":" + json_quote(o.attributes[i].second);
  j += "},\"traceEvents\":[";
  j += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":" + json_quote(o.service) + "}}";
  j += ",{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"training loop\"}}";
  // Per-step category totals as one counter track per category (every step, escalated or not).
  for (const StepRecord& r : t.steps()) {
    j += ",{\"name\":\"brick ms\",\"ph\":\"C\",\"pid\":1,\"tid\":1,\"ts\":" + us(r.start_ns) + ",\"args\":{";
    for (std::size_t c = 0; c < t.categories().size(); ++c)
      j += (c ? "," : "") + json_quote(t.categories()[c]) + ":" + num(r.category_seconds[c] * 1e3);
    j += "}}";
  }
  for (const auto& d : t.detail())
    for (const Span& s : d.spans) {
      if (!exported(s, o)) continue;
      j += ",{\"name\":" + json_quote(span_name(s)) + ",\"cat\":" + json_quote(category_name(t, s.category)) +
           ",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":" + us(s.start_ns) +
           ",\"dur\":" + num(static_cast<double>(s.end_ns - s.start_ns) * 1e-3) +
           ",\"args\":{\"step\":" + std::to_string(d.step) + ",\"flops\":" + num(s.flops) +
           ",\"bytes\":" + num(s.bytes) + "}}";
    }
  return j + "]}\n";
}

std::string to_otlp_json(const Tracer& t, const ExportOptions& o) {
  // One trace per step; span ids are unique within the export: (position in step + 1) | step << 24.
  const std::uint64_t run = static_cast<std::uint64_t>(t.steps().empty() ? 0 : t.unix_ns(t.steps().front().start_ns));
  auto hex = [](std::uint64_t v, int digits) {
    std::string s(static_cast<std::size_t>(digits), '0');
    for (int i = digits - 1; i >= 0 && v; --i, v >>= 4) s[static_cast<std::size_t>(i)] = "0123456789abcdef"[v & 15];
    return s;
  };
  auto span_id = [](std::int64_t step, int pos) {
    return (static_cast<std::uint64_t>(step) << 24) | static_cast<std::uint64_t>(pos + 1);
  };
  const bool drop_parent = POPPER_MUTANT("trace-otlp-parent-dropped");
  std::string j =
      "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\",\"value\":{\"stringValue\":" +
      json_quote(o.service) + "}}";
  for (const auto& [k, v] : o.attributes)
    j += ",{\"key\":" + json_quote(k) + ",\"value\":{\"stringValue\":" + json_quote(v) + "}}";
  j += "]},\"scopeSpans\":[{\"scope\":{\"name\":\"popper.trace\",\"version\":\"1\"},\"spans\":[";
  bool first = true;
  for (const auto& d : t.detail())
    for (std::size_t i = 0; i < d.spans.size(); ++i) {
      const Span& s = d.spans[i];
      if (!exported(s, o)) continue;
      j += first ? "" : ",";
      first = false;
      j += "{\"traceId\":\"" + hex(run, 16) + hex(static_cast<std::uint64_t>(d.step), 16) + "\",\"spanId\":\"" +
           hex(span_id(d.step, static_cast<int>(i)), 16) + "\"";
      if (s.parent >= 0 && !drop_parent) j += ",\"parentSpanId\":\"" + hex(span_id(d.step, s.parent), 16) + "\"";
      j += ",\"name\":" + json_quote(span_name(s)) + ",\"kind\":1,\"startTimeUnixNano\":\"" +
           std::to_string(t.unix_ns(s.start_ns)) + "\",\"endTimeUnixNano\":\"" + std::to_string(t.unix_ns(s.end_ns)) +
           "\",\"attributes\":[{\"key\":\"popper.brick\",\"value\":{\"stringValue\":" +
           json_quote(category_name(t, s.category)) + "}},{\"key\":\"popper.step\",\"value\":{\"intValue\":\"" +
           std::to_string(d.step) + "\"}},{\"key\":\"popper.flops\",\"value\":{\"doubleValue\":" + num(s.flops) +
           "}},{\"key\":\"popper.bytes\",\"value\":{\"doubleValue\":" + num(s.bytes) + "}}]}";
    }
  return j + "]}]}]}\n";
}

}  // namespace popper::trace
