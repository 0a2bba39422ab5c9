// Google Benchmark JSON and ceiling CSV -> BenchRow (see ingest.hpp).
#include "bench/ingest.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

namespace popper::bench {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

double to_seconds(double v, const std::string& unit) {
  if (unit == "ns") return v * 1e-9;
  if (unit == "us") return v * 1e-6;
  if (unit == "ms") return v * 1e-3;
  return v;  // "s"
}

BenchRow* find_row(std::vector<BenchRow>& rows, const BenchKey& k) {
  for (auto& r : rows)
    if (r.key == k) return &r;
  return nullptr;
}

}  // namespace

std::vector<BenchRow> rows_from_gbench_json(const std::string& text, const std::string& file,
                                            const std::string& work_unit) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw BenchFileError(file + ": not Google Benchmark JSON: " + e.what());
  }
  if (!j.contains("benchmarks") || !j["benchmarks"].is_array())
    throw BenchFileError(file + ": no 'benchmarks' array: not Google Benchmark JSON");
  const auto context = j.value("context", nlohmann::json::object());
  std::vector<BenchRow> rows;
  for (const auto& b : j["benchmarks"]) {
    if (b.value("run_type", "iteration") != "iteration") continue;  // aggregates are recomputed from samples
    const auto name = parse_bench_name(b.value("run_name", b.value("name", "")));
    if (!name) continue;  // not a protocol row
    const std::string tier(to_string(name->tier));
    BenchKey key{name->family,
                 name->tier,
                 tier,
                 name->shape,
                 name->precision,
                 name->threads,
                 std::string(to_string(name->cache))};
    const std::string ctx_key = "popper_backend_" + tier;
    if (context.contains(ctx_key) && context[ctx_key].is_string()) key.backend = context[ctx_key].get<std::string>();
    BenchRow* row = find_row(rows, key);
    if (!row) {
      rows.emplace_back();
      row = &rows.back();
      row->key = key;
      row->work_unit = work_unit;
    }
    if (b.value("error_occurred", false)) {
      row->verdict = Verdict::parse(b.value("error_message", std::string("error")), true);
      row->samples.clear();
      row->sample_pace.clear();
      continue;
    }
    if (row->samples.empty() && row->verdict != Verdict{}) continue;  // an earlier repetition errored
    const std::string label = b.value("label", "");
    row->verdict = label.empty() ? Verdict::not_verified("no label") : Verdict::parse(label);
    row->samples.push_back(to_seconds(b.value("real_time", 0.0), b.value("time_unit", "ns")));
    row->sample_pace.push_back(b.contains(kPaceCounter) && b[kPaceCounter].is_number() ? b[kPaceCounter].get<double>()
                                                                                       : 0.0);
    if (b.contains(work_unit) && b[work_unit].is_number()) row->work_per_iter = b[work_unit].get<double>();
    if (b.contains("bytes") && b["bytes"].is_number()) row->bytes_per_iter = b["bytes"].get<double>();
    if (b.contains("read_bytes_per_second") && b["read_bytes_per_second"].is_number())
      row->read_bound = std::max(row->read_bound, b["read_bytes_per_second"].get<double>());
  }
  return rows;
}

std::vector<BenchRow> rows_from_ceiling_csv(const std::string& text, const std::string& file) {
  // A program built against an older popper/ceiling_cli.h writes no pace column.
  static const std::string header =
      "family,tier,backend,shape,precision,threads,rep,iterations,seconds_per_iter,flop_per_iter,bytes_per_iter,"
      "verdict";
  static const std::string paced_header = header + "," + kPaceCounter;
  std::size_t columns = 12;
  std::vector<BenchRow> rows;
  std::istringstream in(text);
  std::string line;
  std::size_t lineno = 0;
  bool header_seen = false;
  auto num = [&](const std::string& s, const char* col) {
    double v = 0;
    auto res = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || res.ec != std::errc() || res.ptr != s.data() + s.size())
      throw BenchFileError(file + ":" + std::to_string(lineno) + ": column '" + col + "': '" + s + "' is not a number");
    return v;
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    if (!header_seen) {
      if (line != header && line != paced_header)
        throw BenchFileError(file + ":" + std::to_string(lineno) + ": not a ceiling CSV header");
      columns = line == header ? 12 : 13;
      header_seen = true;
      continue;
    }
    const auto f = split(line, ',');
    if (f.size() != columns)
      throw BenchFileError(file + ":" + std::to_string(lineno) + ": expected " + std::to_string(columns) +
                           " columns, found " + std::to_string(f.size()));
    const auto tier = parse_tier(f[1]);
    if (!tier)
      throw BenchFileError(file + ":" + std::to_string(lineno) + ": tier '" + f[1] + "' is not one of " + tier_names());
    BenchKey key{f[0], *tier, f[2], f[3], f[4], static_cast<int>(num(f[5], "threads")), "warm"};
    BenchRow* row = find_row(rows, key);
    if (!row) {
      rows.emplace_back();
      row = &rows.back();
      row->key = key;
      row->work_per_iter = num(f[9], "flop_per_iter");
      row->bytes_per_iter = num(f[10], "bytes_per_iter");
      row->verdict = Verdict::parse(f[11]);
    } else if (!row->verdict.failed()) {
      // A later repetition's failure (a thread left running after it) fails the row.
      if (auto v = Verdict::parse(f[11]); v.failed()) row->verdict = std::move(v);
    }
    row->samples.push_back(num(f[8], "seconds_per_iter"));
    row->sample_pace.push_back(columns == 13 ? num(f[12], kPaceCounter) : 0);
  }
  if (!header_seen && !rows.empty()) throw BenchFileError(file + ": no ceiling CSV header");
  return rows;
}

void merge_rows(std::vector<BenchRow>& dst, const std::vector<BenchRow>& src) {
  for (const auto& r : src) {
    BenchRow* d = find_row(dst, r.key);
    if (!d) {
      dst.push_back(r);
      dst.back().trials.resize(r.samples.size(), 0);
      dst.back().sample_pace.resize(r.samples.size(), 0);
      for (std::size_t i = 0; i < r.samples.size(); ++i) {
        dst.back().trials[i] = r.trial_of(i);
        dst.back().sample_pace[i] = r.pace_of(i);
      }
    } else {
      d->trials.resize(d->samples.size(), 0);
      d->sample_pace.resize(d->samples.size(), 0);
      for (std::size_t i = 0; i < r.samples.size(); ++i) {
        d->samples.push_back(r.samples[i]);
        d->trials.push_back(r.trial_of(i));
        d->sample_pace.push_back(r.pace_of(i));
      }
      d->pace.insert(r.pace.begin(), r.pace.end());
      d->link.insert(r.link.begin(), r.link.end());
      d->read.insert(r.read.begin(), r.read.end());
      d->read_bound = std::max(d->read_bound, r.read_bound);
      if (r.verdict.failed()) d->verdict = r.verdict;
    }
  }
}

}  // namespace popper::bench
