// Bench CSV writer/reader; schema in csv.hpp and baselines/README.md.
#include "bench/csv.hpp"
#include "popper/io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "bench/plausibility.hpp"
#include "bench/stats.hpp"

namespace popper::bench {
namespace {

std::string fmt_double(double v) {
  if (std::isnan(v)) return "na";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  return std::string(buf, res.ptr);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(ch);
    }
  }
  out.push_back(cur);
  return out;
}

// Commas and newlines would break the row; free text gets them replaced.
std::string clean_text(std::string s) {
  for (char& ch : s)
    if (ch == ',' || ch == '\n' || ch == '\r') ch = (ch == ',') ? ';' : ' ';
  return s;
}

void check_key_field(const std::string& name, const std::string& v) {
  if (v.empty() || v.find_first_of(",\n\r") != std::string::npos)
    throw InvalidArgument("bench row field '" + name + "' is empty or contains ',' or a newline: '" + v + "'");
}

[[noreturn]] void fail(const std::string& file, std::size_t line, const std::string& what) {
  throw BenchFileError(file + ":" + std::to_string(line) + ": " + what);
}

double parse_number(const std::string& text, const std::string& file, std::size_t line, const std::string& col,
                    bool allow_na) {
  if (allow_na && text == "na") return std::nan("");
  double v = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto res = std::from_chars(first, last, v);
  if (text.empty() || res.ec != std::errc() || res.ptr != last)
    fail(file, line, "column '" + col + "': '" + text + "' is not a number");
  return v;
}

// A trial number: a whole number an int holds (a cast of any other double is undefined).
int parse_trial(const std::string& text, const std::string& file, std::size_t line, const std::string& col) {
  const double v = parse_number(text, file, line, col, false);
  if (!(v >= 0 && v <= std::numeric_limits<int>::max()) || v != std::floor(v))
    fail(file, line, "column '" + col + "' holds '" + text + "', not a trial number");
  return static_cast<int>(v);
}

// A probe by trial (BenchRow::pace, link, read) as "<trial>=<value>" entries.
std::string format_trial_map(const std::map<int, double>& m) {
  std::string out;
  for (const auto& [trial, v] : m) out += (out.empty() ? "" : ";") + std::to_string(trial) + "=" + fmt_double(v);
  return out;
}

// A column of one value per sample (trials, sample_pace), ';'-separated; empty: none.
template <class Parse>
auto parse_per_sample(const std::string& text, const BenchRow& r, const std::string& file, std::size_t line,
                      const std::string& col, Parse parse) {
  std::vector<decltype(parse(text))> out;
  if (text.empty()) return out;
  for (const auto& v : split(text, ';')) out.push_back(parse(v));
  if (out.size() != r.samples.size())
    fail(file, line,
         "column '" + col + "' has " + std::to_string(out.size()) + " entries for " + std::to_string(r.samples.size()) +
             " samples");
  return out;
}

std::map<int, double> parse_trial_map(const std::string& text, const BenchRow& r, const std::string& file,
                                      std::size_t line, const std::string& col) {
  std::map<int, double> out;
  if (text.empty()) return out;
  const std::set<int> ran = r.trials_ran();
  for (const auto& entry : split(text, ';')) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos) fail(file, line, "column '" + col + "' holds '" + entry + "', not <trial>=<value>");
    const int trial = parse_trial(entry.substr(0, eq), file, line, col);
    const double v = parse_number(entry.substr(eq + 1), file, line, col, false);
    if (!ran.contains(trial))
      fail(file, line, "column '" + col + "' names trial " + std::to_string(trial) + ", which no sample ran in");
    if (!(v > 0) || !std::isfinite(v))
      fail(file, line, "column '" + col + "' holds '" + entry + "', not a positive value");
    if (!out.emplace(trial, v).second)
      fail(file, line, "column '" + col + "' names trial " + std::to_string(trial) + " twice");
  }
  return out;
}

}  // namespace

Tier tier_from(const std::string& name, const std::string& where) {
  if (const auto t = parse_tier(name)) return *t;
  throw InvalidArgument(where + ": '" + name + "' is not a tier (" + tier_names() + ")");
}

std::vector<Tier> tiers_from(const std::vector<std::string>& names, const std::string& where) {
  std::vector<Tier> out;
  out.reserve(names.size());
  for (const auto& n : names) out.push_back(tier_from(n, where));
  return out;
}

std::string BenchKey::to_string() const {
  return family + "/" + tier_text(tier) + "/" + backend + "/" + shape + "/" + precision +
         "/threads:" + std::to_string(threads) + "/" + cache_mode;
}

double BenchRow::median() const { return samples.empty() ? std::nan("") : bench::median(samples); }

std::set<int> BenchRow::trials_ran() const {
  std::set<int> out;
  for (std::size_t i = 0; i < samples.size(); ++i) out.insert(trial_of(i));
  return out;
}

double BenchRow::throughput() const {
  if (unit != kUnitSeconds || samples.empty()) return 0;
  const double m = median();
  return m > 0 ? work_per_iter / m : 0;
}

std::optional<std::string> BenchTable::meta(const std::string& key) const {
  for (const auto& [k, v] : metadata)
    if (k == key) return v;
  return std::nullopt;
}

void BenchTable::set_meta(const std::string& key, const std::string& value) {
  for (auto& [k, v] : metadata)
    if (k == key) {
      v = value;
      return;
    }
  metadata.emplace_back(key, value);
}

const BenchRow* BenchTable::find(const BenchKey& key) const {
  for (const auto& r : rows)
    if (r.key == key) return &r;
  return nullptr;
}

Environment BenchTable::environment(const std::string& key) const {
  Environment env;
  std::istringstream in(meta(key).value_or(""));
  for (std::string kv; in >> kv;) {
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

void BenchTable::set_environment(const Environment& env, const std::string& key) {
  std::string text;
  for (const auto& [k, v] : env) {
    if (!text.empty()) text += ' ';
    text += k;
    text += '=';
    text += v;
  }
  set_meta(key, text.empty() ? "none" : text);
}

std::vector<std::string> BenchTable::meta_list(const std::string& key) const {
  const auto text = meta(key);
  if (!text || text->empty() || *text == "none") return {};
  std::vector<std::string> out;
  for (auto& entry : split(*text, '|')) {
    entry.erase(0, entry.find_first_not_of(' '));
    entry.erase(entry.find_last_not_of(' ') + 1);
    out.push_back(std::move(entry));
  }
  return out;
}

void BenchTable::set_meta_list(const std::string& key, const std::vector<std::string>& entries) {
  std::string text;
  for (const auto& e : entries) text += (text.empty() ? "" : " | ") + e;
  set_meta(key, entries.empty() ? "none" : text);
}

std::string CeilingSkip::to_string() const {
  return vendor + " " + (kernels.empty() ? setting : kernels + " (" + setting + ")") + ": " + status + ": " + reason;
}

std::optional<CeilingSkip> CeilingSkip::parse(const std::string& text) {
  const auto space = text.find(' ');
  if (space == std::string::npos) return std::nullopt;
  const auto what_end = text.find(": ", space);
  if (what_end == std::string::npos) return std::nullopt;
  const auto status_end = text.find(": ", what_end + 2);
  if (status_end == std::string::npos) return std::nullopt;
  CeilingSkip s;
  s.vendor = text.substr(0, space);
  const std::string what = text.substr(space + 1, what_end - space - 1);
  const auto open = what.find(" (");
  if (open != std::string::npos && what.back() == ')') {
    s.kernels = what.substr(0, open);
    s.setting = what.substr(open + 2, what.size() - open - 3);
  } else {
    s.setting = what;
  }
  s.status = text.substr(what_end + 2, status_end - what_end - 2);
  s.reason = text.substr(status_end + 2);
  return s;
}

std::vector<CeilingSkip> BenchTable::ceiling_not_run() const {
  std::vector<CeilingSkip> out;
  for (const auto& entry : meta_list("ceiling_not_run"))
    if (auto s = CeilingSkip::parse(entry)) out.push_back(std::move(*s));
  return out;
}

void BenchTable::set_ceiling_not_run(const std::vector<CeilingSkip>& skips) {
  std::vector<std::string> entries;
  entries.reserve(skips.size());
  for (const auto& s : skips) entries.push_back(s.to_string());
  set_meta_list("ceiling_not_run", entries);
}

namespace {
std::string footprint_read_key(const std::string& shape, const std::string& precision, int threads,
                               const std::string& cache_mode) {
  return shape + (precision.empty() ? "" : "/" + precision) + "/threads:" + std::to_string(threads) +
         (cache_mode == "cold" ? "/cold" : "");
}
}  // namespace

void BenchTable::set_footprint_reads() {
  std::map<std::string, double> best;
  for (const auto& r : rows)
    if (r.read_bound > 0) {
      double& b = best[footprint_read_key(r.key.shape, r.key.precision, r.key.threads, r.key.cache_mode)];
      b = std::max(b, r.read_bound);
    }
  if (best.empty()) return;
  std::vector<std::string> entries;
  for (const auto& [k, v] : best) {
    char gbs[32];
    std::snprintf(gbs, sizeof gbs, "%.2f", v * 1e-9);
    entries.push_back(k + "=" + gbs);
  }
  set_meta_list("footprint_read_gbs", entries);
}

double BenchTable::footprint_read(const std::string& shape, const std::string& precision, int threads,
                                  const std::string& cache_mode) const {
  for (const std::string& key : {footprint_read_key(shape, precision, threads, cache_mode),
                                 footprint_read_key(shape, "", threads, cache_mode)}) {
    const std::string want = key + "=";
    for (const auto& e : meta_list("footprint_read_gbs"))
      if (e.rfind(want, 0) == 0) return std::atof(e.c_str() + want.size()) * 1e9;
  }
  return 0;
}

const std::vector<std::string>& bench_columns() {
  static const std::vector<std::string> cols = {
      "family",    "tier",           "backend",     "shape",       "precision",
      "threads",   "cache_mode",     "unit",        "n",           "min",
      "median",    "mean",           "stddev",      "cv",          "work_per_iter",
      "work_unit", "bytes_per_iter", "throughput",  "pct_of_peak", "verdict",
      "samples",   "trials",         "sample_pace", "trial_pace",  "trial_link",
      "trial_read"};
  return cols;
}

std::string format_bench_csv(const BenchTable& table) {
  std::ostringstream out;
  for (const auto& [k, v] : table.metadata) {
    if (k.empty() || k.find_first_of(":\n") != std::string::npos)
      throw InvalidArgument("metadata key '" + k + "' is empty or contains ':' or a newline");
    std::string value = v;
    for (char& ch : value)
      if (ch == '\n' || ch == '\r') ch = ' ';
    out << "# " << k << ": " << value << "\n";
  }
  const auto& cols = bench_columns();
  for (std::size_t i = 0; i < cols.size(); ++i) out << (i ? "," : "") << cols[i];
  out << "\n";
  for (const auto& r : table.rows) {
    const auto& k = r.key;
    check_key_field("family", k.family);
    check_key_field("backend", k.backend);
    check_key_field("shape", k.shape);
    check_key_field("precision", k.precision);
    check_key_field("cache_mode", k.cache_mode);
    check_key_field("unit", r.unit);
    check_key_field("work_unit", r.work_unit);
    const bool has = !r.samples.empty();
    const double nan = std::nan("");
    double mn = nan;
    if (has) {
      mn = r.samples[0];
      for (double s : r.samples) mn = std::min(mn, s);
    }
    out << k.family << ',' << bench::to_string(k.tier) << ',' << k.backend << ',' << k.shape << ',' << k.precision
        << ',' << k.threads << ',' << k.cache_mode << ',' << r.unit << ',' << r.samples.size() << ',' << fmt_double(mn)
        << ',' << fmt_double(has ? r.median() : nan) << ',' << fmt_double(has ? mean(r.samples) : nan) << ','
        << fmt_double(has ? stddev(r.samples) : nan) << ','
        << fmt_double(has ? coefficient_of_variation(r.samples) : nan) << ',' << fmt_double(r.work_per_iter) << ','
        << r.work_unit << ',' << fmt_double(r.bytes_per_iter) << ','
        << fmt_double(has && r.unit == kUnitSeconds ? r.throughput() : nan) << ','
        << fmt_double(r.pct_of_peak >= 0 ? r.pct_of_peak : nan) << ','
        << (r.verdict.label.empty() ? std::string("not_verified") : clean_text(r.verdict.label)) << ',';
    for (std::size_t i = 0; i < r.samples.size(); ++i) out << (i ? ";" : "") << fmt_double(r.samples[i]);
    out << ',';
    for (std::size_t i = 0; i < r.samples.size(); ++i) out << (i ? ";" : "") << r.trial_of(i);
    out << ',';
    if (std::ranges::any_of(r.sample_pace, [](double p) { return p > 0; }))
      for (std::size_t i = 0; i < r.samples.size(); ++i) out << (i ? ";" : "") << fmt_double(r.pace_of(i));
    out << ',' << format_trial_map(r.pace) << ',' << format_trial_map(r.link) << ',' << format_trial_map(r.read)
        << "\n";
  }
  out << "# end rows=" << table.rows.size() << "\n";
  return out.str();
}

BenchTable parse_bench_csv(const std::string& text, const std::string& file) {
  BenchTable table;
  std::istringstream in(text);
  std::string line;
  std::size_t lineno = 0;
  bool header_seen = false, end_seen = false;
  std::size_t end_rows = 0;
  const auto& cols = bench_columns();
  // Files written before the probes travelled with the rows lack the last four
  // columns (their claims are judged on every trial); files written before
  // samples carried their trial lack the last five (all trial 0).
  const std::vector<std::string> cols_v2(cols.begin(), cols.end() - 4);
  const std::vector<std::string> cols_v1(cols.begin(), cols.end() - 5);
  std::size_t ncols = cols.size();
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (end_seen) {
      if (!line.empty()) fail(file, lineno, "content after the '# end rows=N' trailer");
      continue;
    }
    if (line.empty()) fail(file, lineno, "empty line (the bench CSV has none)");
    if (line[0] == '#') {
      if (line.rfind("# end rows=", 0) == 0) {
        if (!header_seen) fail(file, lineno, "trailer before the header line");
        end_rows = static_cast<std::size_t>(parse_number(line.substr(11), file, lineno, "rows", false));
        end_seen = true;
        continue;
      }
      if (header_seen) fail(file, lineno, "metadata line after the header line");
      const auto colon = line.find(':');
      if (line.size() < 3 || line[1] != ' ' || colon == std::string::npos)
        fail(file, lineno, "metadata line must look like '# key: value'");
      std::string key = line.substr(2, colon - 2);
      std::string value = line.substr(colon + 1);
      if (!value.empty() && value[0] == ' ') value.erase(0, 1);
      table.metadata.emplace_back(key, value);
      continue;
    }
    const auto fields = split(line, ',');
    if (!header_seen) {
      if (fields != cols && fields != cols_v2 && fields != cols_v1)
        fail(file, lineno, "header line does not match the bench CSV schema (see baselines/README.md)");
      ncols = fields.size();
      header_seen = true;
      continue;
    }
    if (fields.size() != ncols)
      fail(file, lineno, "expected " + std::to_string(ncols) + " columns, found " + std::to_string(fields.size()));
    BenchRow r;
    r.key.family = fields[0];
    const auto tier = parse_tier(fields[1]);
    if (!tier) fail(file, lineno, "column 'tier' holds '" + fields[1] + "', not a tier (" + tier_names() + ")");
    r.key.tier = *tier;
    r.key.backend = fields[2];
    r.key.shape = fields[3];
    r.key.precision = fields[4];
    const double threads = parse_number(fields[5], file, lineno, "threads", false);
    if (threads < 1 || threads != std::floor(threads))
      fail(file, lineno, "column 'threads' must be a positive integer");
    r.key.threads = static_cast<int>(threads);
    r.key.cache_mode = fields[6];
    r.unit = fields[7];
    if (r.unit != kUnitSeconds && r.unit != kUnitInstructions)
      fail(file, lineno, "column 'unit' must be 'seconds' or 'instructions', found '" + r.unit + "'");
    for (std::size_t i = 0; i < 7; ++i)
      if (fields[i].empty()) fail(file, lineno, "column '" + cols[i] + "' is empty");
    const double n = parse_number(fields[8], file, lineno, "n", false);
    for (std::size_t i = 9; i <= 13; ++i) parse_number(fields[i], file, lineno, cols[i], true);
    r.work_per_iter = parse_number(fields[14], file, lineno, "work_per_iter", false);
    r.work_unit = fields[15];
    r.bytes_per_iter = parse_number(fields[16], file, lineno, "bytes_per_iter", false);
    parse_number(fields[17], file, lineno, "throughput", true);
    const double pct = parse_number(fields[18], file, lineno, "pct_of_peak", true);
    r.pct_of_peak = std::isnan(pct) ? -1 : pct;
    r.verdict = Verdict::parse(fields[19]);
    if (!fields[20].empty())
      for (const auto& s : split(fields[20], ';')) r.samples.push_back(parse_number(s, file, lineno, "samples", false));
    if (static_cast<double>(r.samples.size()) != n)
      fail(file, lineno,
           "column 'n' says " + fields[8] + " but 'samples' holds " + std::to_string(r.samples.size()) + " values");
    if (ncols > cols_v1.size())
      r.trials = parse_per_sample(fields[21], r, file, lineno, "trials",
                                  [&](const std::string& t) { return parse_trial(t, file, lineno, "trials"); });
    if (ncols == cols.size()) {
      r.sample_pace = parse_per_sample(fields[22], r, file, lineno, "sample_pace", [&](const std::string& p) {
        const double v = parse_number(p, file, lineno, "sample_pace", false);
        if (!(v >= 0) || !std::isfinite(v)) fail(file, lineno, "column 'sample_pace' holds '" + p + "', not seconds");
        return v;
      });
      r.pace = parse_trial_map(fields[23], r, file, lineno, "trial_pace");
      r.link = parse_trial_map(fields[24], r, file, lineno, "trial_link");
      r.read = parse_trial_map(fields[25], r, file, lineno, "trial_read");
    }
    table.rows.push_back(std::move(r));
  }
  if (!header_seen) fail(file, lineno, "no header line: not a bench CSV (or empty)");
  if (!end_seen) fail(file, lineno, "missing '# end rows=N' trailer: the file is truncated");
  if (end_rows != table.rows.size())
    fail(file, lineno,
         "trailer says rows=" + std::to_string(end_rows) + " but the file holds " + std::to_string(table.rows.size()));
  // Which ceilings are invalid follows from the rows (a merged or older file too).
  mark_invalid_vendor_rows(table);
  return table;
}

void write_bench_csv(const std::string& path, const BenchTable& table) {
  write_file_atomic(path, format_bench_csv(table));
}

BenchTable read_bench_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BenchFileError(path + ": cannot open bench CSV");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_bench_csv(ss.str(), path);
}

}  // namespace popper::bench
