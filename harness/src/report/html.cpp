// The self-contained HTML report: what each section holds is in html.hpp.
// Plain string building, no template engine; every input string goes through
// markup_escape (common/text.hpp), every number through fmt.
#include "report/html.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "bench/report.hpp"
#include "common/process.hpp"
#include "common/text.hpp"
#include "popper/version.hpp"

namespace popper::report {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string esc(const std::string& s) { return markup_escape(s); }

// ---- reading the audit's JSON (keys as harness/src/audit.cpp writes them) ----

std::string str(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

long num(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<long>() : 0;
}

const json& obj(const json& j, const char* key) {
  static const json empty = json::object();
  const auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : empty;
}

const json& arr(const json& j, const char* key) {
  static const json empty = json::array();
  const auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : empty;
}

// A JSON value as text: a string as is, anything else as JSON.
std::string text(const json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }

// "115/123" of a {covered, total} fraction.
std::string fraction(const json& j, const char* key) {
  const json& f = obj(j, key);
  return f.empty() ? "—" : fmt::format("{}/{}", num(f, "covered"), num(f, "total"));
}

// ---- outcome badges: only passed / killed / met / PASS are green ----

std::string outcome_class(const std::string& o) {
  if (o == "passed" || o == "killed" || o == "met" || o == "PASS" || o == "covered") return "ok";
  if (o == "failed" || o == "survived" || o == "not_reached" || o == "not_met" || o == "unbound" || o == "FAIL" ||
      o == "not covered")
    return "bad";
  return "warn";  // skipped, not_run, not_checked, not_measured, inconclusive, declined, INCOMPLETE, ...
}

std::string badge(const std::string& outcome) {
  const std::string shown = outcome == "unbound" ? "UNBOUND" : outcome == "not_run" ? "not run" : outcome;
  return fmt::format("<span class=\"b {}\">{}</span>", outcome_class(outcome), esc(shown));
}

// ---- #summary ----

void render_summary(std::ostringstream& o, const json& cov, const std::string& source) {
  const json& t = obj(cov, "total");
  const long code = num(cov, "exit_code");
  // The headline says the exit code and the performance claims beside it (older reports: the exit code alone).
  const bool headline = cov.contains("headline") && cov.at("headline").is_string();
  // The audit may come from another build than this page (a GPU machine's bundle): say which.
  const json& by = obj(cov, "popper");  // empty in audits written before 0.2.0
  const std::string audit_by =
      by.empty() ? "" : " " + text(by.value("version", json("?"))) + " (" + text(by.value("commit", json("?"))) + ")";
  o << "<p>From <code>" << esc(source) << "</code> (<code>popper" << esc(audit_by)
    << " audit</code>). Verdict: " << badge(code == 0 ? "PASS" : "FAIL") << " "
    << (headline ? esc(cov.at("headline").get<std::string>()) : "(exit " + std::to_string(code) + ")")
    << "</p>\n<table class=\"kv\">\n";
  auto row = [&](const std::string& name, const std::string& value, const std::string& cls = "") {
    o << "<tr" << (cls.empty() ? "" : " class=\"" + cls + "\"") << "><th>" << esc(name) << "</th><td>" << value
      << "</td></tr>\n";
  };
  row("contracts", std::to_string(num(t, "contracts")));
  row("equations with obligations", fraction(t, "equations_with_obligations"));
  row("obligations covered", fraction(t, "obligations_covered"));
  const json& f = obj(t, "falsification_tests");
  for (const auto& [k, name] : std::vector<std::pair<std::string, std::string>>{{"passed", "passed"},
                                                                                {"failed", "failed"},
                                                                                {"skipped", "skipped"},
                                                                                {"unbound", "UNBOUND"},
                                                                                {"not_run", "not run"}}) {
    const long n = num(f, k.c_str());
    row("falsification tests " + name, fmt::format("{}/{}", n, num(f, "total")),
        n > 0 && k != "passed" ? outcome_class(k) : "");
  }
  row("harnesses run", fraction(t, "harnesses_run"));
  const json& m = obj(t, "mutants");
  row("tests declaring mutants", fraction(m, "tests_with_mutants"));
  const bool ran = !m.contains("ran") || (m.at("ran").is_boolean() && m.at("ran").get<bool>());
  row("mutants killed (power)",
      ran ? fmt::format("{}/{}", num(m, "killed"), num(m, "declared"))
          : fmt::format("{} declared, not run (audit without --mutants)", num(m, "declared")),
      !ran                                    ? "warn"
      : num(m, "killed") < num(m, "declared") ? "bad"
                                              : "");
  const json& b = obj(t, "benchmarks");
  for (const char* k : {"met", "not_met", "inconclusive", "partially_measured", "not_measured"}) {
    const long n = num(b, k);
    std::string name = std::string("benchmark claims ") + k;
    std::replace(name.begin(), name.end(), '_', ' ');
    row(name, fmt::format("{}/{}", n, num(b, "total")), n > 0 && k != std::string("met") ? outcome_class(k) : "");
  }
  row("orphan bindings", std::to_string(arr(cov, "orphans").size()), arr(cov, "orphans").empty() ? "" : "bad");
  o << "</table>\n";
  for (const char* list : {"failures", "waived", "orphans", "warnings"}) {
    const json& items = arr(cov, list);
    if (items.empty()) continue;
    o << "<h3>" << list << " (" << items.size() << ")</h3><ul class=\"" << list << "\">";
    for (const auto& item : items) o << "<li>" << esc(text(item)) << "</li>";
    o << "</ul>\n";
  }
}

// ---- #coverage, #mutants, #claims ----

// "cpu:avx2 native auto, native forced" per backend, then the declines.
std::string evidence(const json& backends, const json& declines) {
  std::string out;
  for (const auto& [backend, sites] : backends.items()) {
    std::vector<std::string> where;
    for (const auto& s : sites) where.push_back(str(s, "site") + " " + str(s, "how"));
    out += fmt::format("<span class=\"ev\">{}</span> <small>{}</small><br>", esc(backend),
                       esc(fmt::format("{}", fmt::join(where, ", "))));
  }
  for (const auto& d : declines)
    out += "<span class=\"b warn\">declined</span> <small>" + esc(text(d)) + "</small><br>";
  return out.empty() ? "<small>none recorded</small><br>" : out;
}

void render_coverage(std::ostringstream& cov_out, std::ostringstream& mut_out, std::ostringstream& claims_out,
                     const json& cov) {
  const json& tm = obj(obj(cov, "total"), "mutants");
  const bool mutants_ran = !tm.contains("ran") || (tm.at("ran").is_boolean() && tm.at("ran").get<bool>());
  for (const auto& c : arr(cov, "contracts")) {
    const std::string name = str(c, "contract");
    std::ostringstream rows;
    bool trouble = str(obj(c, "qa_gate"), "verdict") == "FAIL";
    for (const auto& r : arr(c, "results")) {
      const std::string id = str(r, "id"), kind = str(r, "kind"), outcome = str(r, "outcome");
      if (kind == "benchmark") {
        claims_out << "<tr><td>" << esc(name) << "</td><td>" << esc(id) << "</td><td>" << badge(outcome) << "</td><td>"
                   << esc(str(r, "reason")) << "</td></tr>\n";
        continue;
      }
      trouble = trouble || outcome != "passed";
      long killed = 0, declared = 0, not_run = 0;
      for (const auto& mu : arr(r, "mutants")) {
        ++declared;
        killed += str(mu, "outcome") == "killed";
        not_run += str(mu, "outcome") == "not_run";
        std::string sites;
        for (const auto& [site, out] : obj(mu, "by_site").items()) sites += esc(site) + ": " + badge(text(out)) + " ";
        mut_out << "<tr class=\"row-" << outcome_class(str(mu, "outcome")) << "\"><td>" << esc(name) << "</td><td>"
                << esc(id) << "</td><td>" << esc(str(mu, "id")) << "</td><td>"
                << (str(mu, "path").empty() ? "any" : esc(str(mu, "path"))) << "</td><td>" << badge(str(mu, "outcome"))
                << "</td><td>" << (sites.empty() ? "—" : sites) << "</td><td>" << esc(str(mu, "description"))
                << "<br><small>" << esc(str(mu, "detail")) << "</small></td></tr>\n";
      }
      std::string power = "<span class=\"b bad\">none declared</span>";
      if (declared > 0 && mutants_ran)
        power = fmt::format("<span class=\"b {}\">{}/{}</span>{}", killed == declared ? "ok" : "bad", killed, declared,
                            not_run ? fmt::format(" <small>{} not run</small>", not_run) : "");
      else if (declared > 0) power = fmt::format("<span class=\"b warn\">{} declared, not run</span>", declared);
      std::string sites;
      for (const auto& s : arr(r, "sites")) sites += (sites.empty() ? "" : ", ") + esc(text(s));
      rows << "<tr class=\"id " << (outcome == "passed" ? "pass" : "problem") << "\"><td>" << esc(id) << "</td><td>"
           << esc(kind) << "</td><td>" << badge(outcome) << "</td><td>" << esc(str(r, "reason")) << "</td><td>"
           << evidence(obj(r, "backends"), arr(r, "declines"))
           << (sites.empty() ? "" : "<small>ran at: " + sites + "</small>") << "</td><td>" << power << "</td></tr>\n";
    }
    std::ostringstream obs;
    bool uncovered = false;
    for (const auto& ob : arr(c, "obligations")) {
      const bool covered = ob.value("covered", false);
      uncovered = uncovered || !covered;
      std::vector<std::string> required, backed;
      for (const auto& b : arr(ob, "backends_required")) required.push_back(text(b));
      for (const auto& b : arr(ob, covered ? "passed" : "backed_by")) backed.push_back(text(b));
      obs << "<tr><td>" << esc(str(ob, "id")) << "</td><td>" << esc(str(ob, "applies_to")) << "</td><td>"
          << badge(covered ? "covered" : "not covered") << "</td><td>"
          << (required.empty() ? "any" : esc(fmt::format("{}", fmt::join(required, ", ")))) << "</td><td>"
          << evidence(obj(ob, "evidence"), json::array()) << "</td><td>"
          << (covered ? "passed: " + esc(fmt::format("{}", fmt::join(backed, ", "))) : esc(str(ob, "why_not")))
          << "</td></tr>\n";
    }
    trouble = trouble || uncovered;
    const json& ft = obj(c, "falsification_tests");
    const json& cm = obj(c, "mutants");
    cov_out << "<details class=\"contract\"" << (trouble ? " open" : "") << "><summary><b>" << esc(name)
            << "</b> — obligations " << fraction(c, "obligations_covered") << ", tests passed " << num(ft, "passed")
            << "/" << num(ft, "total") << ", power " << num(cm, "killed") << "/" << num(cm, "declared") << ", qa gate "
            << (c.contains("qa_gate") ? badge(str(obj(c, "qa_gate"), "verdict")) : "—") << " <small>"
            << esc(str(c, "file"))
            << "</small></summary>\n<table class=\"ids\"><tr><th>id</th><th>kind</th><th>outcome</th><th>reason</th>"
               "<th>evidence: backend, where it ran (site, how chosen); declines</th><th>power (mutants "
               "killed/declared)</th></tr>\n"
            << rows.str() << "</table>\n";
    if (!obs.str().empty())
      cov_out << "<details class=\"obligations\"" << (uncovered ? " open" : "")
              << "><summary>obligations</summary><table><tr><th>obligation</th><th>applies to</th>"
                 "<th>covered</th><th>backends required</th><th>evidence</th><th>covered by / why not</th></tr>\n"
              << obs.str() << "</table></details>\n";
    const json& open_checks = arr(obj(c, "qa_gate"), "open_checks");
    if (!open_checks.empty()) {
      cov_out << "<p><small>qa gate open checks:";
      for (const auto& chk : open_checks) cov_out << " " << esc(text(chk)) << ";";
      cov_out << "</small></p>\n";
    }
    cov_out << "</details>\n";
  }
}

// ---- #bench ----

std::string verdict_badge(const bench::Verdict& v) {
  const char* cls = v.is_verified() ? "ok" : v.failed() ? "bad" : "warn";
  return fmt::format("<span class=\"b {}\">{}</span>", cls, esc(v.label));
}

void render_bench(std::ostringstream& o, const BenchPage& b) {
  const auto& t = b.table;
  o << "<details open class=\"family\"><summary><b>" << esc(b.family) << "</b> <small>bench-" << esc(b.family)
    << ".csv</small></summary>\n<table class=\"kv\">";
  auto meta = bench::report_metadata(t);
  for (const char* k : {"ceiling_vendors", "ceiling_not_run", "vendor_warnings", "invalid_vendor_rows"})
    if (auto v = t.meta(k)) meta.emplace_back(k, *v);
  for (const auto& [k, v] : meta) o << "<tr><th>" << esc(k) << "</th><td>" << esc(v) << "</td></tr>";
  o << "</table>\n";
  const bench::ThroughputScale scale = bench::throughput_scale(t);
  const std::string& unit = scale.unit;
  const auto groups = bench::table_figures(t);
  for (const auto& g : groups) {
    o << "<h4>" << esc(g.precision) << ", threads " << g.threads << (g.cache_mode == "warm" ? "" : ", " + g.cache_mode)
      << "</h4>\n<table class=\"num\"><tr><th>shape</th><th>ceiling " << unit
      << " (best configuration)</th><th>wrapped " << unit << "</th><th>hand " << unit
      << "</th><th>hand ÷ best ceiling</th><th>hand % of peak</th><th>roofline bound " << unit
      << " (limit)</th><th>hand % of bound</th><th>ceiling % of bound</th><th>FFI overhead</th><th>wrapped ÷ "
         "ceiling</th>"
         "<th>cv c / w / h</th><th>verdict wrapped / hand</th></tr>\n";
    for (const auto& f : g.shapes) {
      auto tput = [&](const bench::BenchRow* r) {
        return r ? bench::figure(r->throughput() * scale.factor, "%.2f") : std::string("—");
      };
      o << "<tr><td>" << esc(f.shape) << "</td><td>" << tput(f.ceiling)
        << (f.ceiling ? " <small>" + esc(f.ceiling->key.backend) + "</small>" : "")
        << (f.invalid_ceilings.empty()
                ? std::string()
                : " <small>(left out: " + esc(f.invalid_ceilings.front()->key.backend) +
                      " invalid: " + esc(f.invalid_ceilings.front()->invalid_reason) +
                      (f.invalid_ceilings.size() > 1 ? " and " + std::to_string(f.invalid_ceilings.size() - 1) + " more"
                                                     : "") +
                      ")</small>")
        << "</td><td>" << tput(f.wrapped) << "</td><td>" << tput(f.hand) << "</td><td><b>"
        << bench::figure(f.hand_vs_ceiling, "%.3f×") << "</b></td><td>" << bench::figure(f.hand_pct_of_peak, "%.1f%%")
        << "</td><td>" << esc(bench::bound_cell(f, scale)) << "</td><td>"
        << bench::figure(f.hand_pct_of_bound, "%.1f%%") << "</td><td>"
        << bench::figure(f.ceiling_pct_of_bound, "%.1f%%") << "</td><td>" << bench::figure(f.ffi, "%.3f×")
        << "</td><td>" << bench::figure(f.wrapped_vs_ceiling, "%.3f×") << "</td><td>"
        << bench::figure(f.cv_pct[0], "%.1f%%") << " / " << bench::figure(f.cv_pct[1], "%.1f%%") << " / "
        << bench::figure(f.cv_pct[2], "%.1f%%") << "</td><td>" << verdict_badge(f.verdict_wrapped) << " "
        << verdict_badge(f.verdict_hand) << "</td></tr>\n";
    }
    o << "</table>\n";
  }
  // Instruction-count rows (a gate table) have no timed figures: listed as counted.
  std::ostringstream counts;
  for (const auto& r : t.rows)
    if (r.unit != bench::kUnitSeconds)
      counts << "<tr><td>" << esc(r.key.shape) << "</td><td>" << esc(r.key.precision) << "</td><td>" << r.key.threads
             << "</td><td>" << esc(bench::tier_text(r.key.tier)) << "</td><td>" << esc(r.key.backend) << "</td><td>"
             << (r.samples.empty() ? std::string("—") : fmt::format("{:.6g}", r.median())) << " " << esc(r.unit)
             << "</td><td>" << verdict_badge(r.verdict) << "</td></tr>\n";
  if (!counts.str().empty())
    o << "<h4>counted rows</h4><table class=\"num\"><tr><th>shape</th><th>precision</th><th>threads</th><th>tier</th>"
         "<th>backend</th><th>median per iteration</th><th>verdict</th></tr>\n"
      << counts.str() << "</table>\n";
  if (groups.empty() && counts.str().empty()) o << "<p class=\"missing\">This table has no rows.</p>\n";
  o << "<p><small>hand ÷ best ceiling: median time of the fastest ceiling configuration ÷ the hand kernel's (&gt; 1: "
       "faster than the best library). % of peak: of the peak measured by <code>popper peak</code>. Bound: roofline "
       "min(P, BW × flop/byte) from the table's measured peaks (— without them). cv: stddev/mean of the samples. The "
       "same figures as <code>reports/bench-"
    << esc(b.family) << ".md</code>, which also lists every ceiling configuration.</small></p>\n";
  if (!groups.empty()) o << "<div class=\"chart\">" << bench::render_svg(t, b.family, nullptr, "", "") << "</div>\n";
  o << "</details>\n";
}

// ---- #history ----

ProcessResult git(const std::string& repo, std::vector<std::string> args) {
  args.insert(args.begin(), {"git", "-C", repo});
  return run_process(args, {}, {}, 60);
}

std::string first_line(const std::string& s) {
  const auto lines = split_nonempty(s, '\n');
  return lines.empty() ? std::string() : lines.front();
}

std::string short_sha(const std::string& sha) { return sha.substr(0, 7); }

// Every row's median divided by its value in the oldest version that has it;
// x = the version, labelled with its short sha and date; a dashed line where
// the key changed.
std::string trend_svg(const BaselineSeries& s) {
  std::map<std::string, std::vector<std::pair<std::size_t, double>>> lines;
  for (std::size_t v = 0; v < s.versions.size(); ++v)
    for (const auto& [row, value] : s.versions[v].hand)
      if (value > 0 && std::isfinite(value)) lines[row].push_back({v, value});
  double lo = 1.0, hi = 1.0;
  for (const auto& [row, pts] : lines)
    for (const auto& [v, value] : pts) {
      lo = std::min(lo, value / pts.front().second);
      hi = std::max(hi, value / pts.front().second);
    }
  lo = std::min(lo, 0.95);
  hi = std::max(hi, 1.05);
  const double left = 60, right = 250, top = 16, bottom = 44;
  const std::size_t n = std::max<std::size_t>(s.versions.size(), 2);
  const double pw = std::max(300.0, std::min(900.0, 70.0 * double(n))), ph = 200, w = left + pw + right,
               h = top + ph + bottom;
  auto x = [&](std::size_t v) { return left + pw * double(v) / double(n - 1); };
  auto y = [&](double r) { return top + ph * (hi - r) / (hi - lo); };
  std::ostringstream o;
  o << fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" role=\"img\">",
      w, h);
  o << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#ccc\"/>", left, top, pw,
                   ph);
  o << fmt::format(
      "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>", left,
      y(1.0), left + pw);
  for (double r : {lo, 1.0, hi})
    o << fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">{:.3f}×</text>", left - 4,
                     y(r) + 4, r);
  const std::size_t every = std::max<std::size_t>(1, (s.versions.size() + 11) / 12);  // at most ~12 labels
  for (std::size_t v = 0; v < s.versions.size(); ++v) {
    if (v > 0 && s.versions[v].key != s.versions[v - 1].key)
      o << fmt::format(
          "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e15759\" stroke-dasharray=\"3 3\">"
          "<title>key changed: {3}</title></line><text x=\"{0:.1f}\" y=\"{4}\" font-size=\"9\" fill=\"#e15759\" "
          "text-anchor=\"middle\">key</text>",
          x(v), top, top + ph, esc(s.versions[v].key), top - 4);
    if (v % every != 0 && v + 1 != s.versions.size()) continue;
    o << fmt::format(
        "<text x=\"{0:.1f}\" y=\"{1}\" font-size=\"10\" text-anchor=\"middle\">{2}</text>"
        "<text x=\"{0:.1f}\" y=\"{3}\" font-size=\"9\" fill=\"#666\" text-anchor=\"middle\">{4}</text>",
        x(v), top + ph + 14, esc(short_sha(s.versions[v].commit)), top + ph + 26, esc(s.versions[v].date));
  }
  static const char* colors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                 "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  std::size_t k = 0, legend = 0;
  for (const auto& [row, pts] : lines) {
    const char* c = colors[k++ % 10];
    std::string poly;
    for (const auto& [v, value] : pts) poly += fmt::format("{:.1f},{:.1f} ", x(v), y(value / pts.front().second));
    o << "<polyline class=\"trend\" fill=\"none\" stroke-width=\"1.5\" stroke=\"" << c << "\" points=\"" << poly
      << "\"><title>" << esc(row) << "</title></polyline>";
    for (const auto& [v, value] : pts)
      o << fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"><title>{} @ {} {}: {:.6g} {} "
          "({})</title></circle>",
          x(v), y(value / pts.front().second), c, esc(row), esc(short_sha(s.versions[v].commit)),
          esc(s.versions[v].date), value, esc(s.unit), esc(s.versions[v].key));
    if (legend < 14)
      o << fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" fill=\"{}\">{}</text>", left + pw + 10,
                       top + 12 * double(++legend), c, esc(row));
  }
  if (lines.size() > 14)
    o << fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\">… {} more (the table below)</text>", left + pw + 10,
                     top + 12 * double(legend + 1), lines.size() - 14);
  o << "</svg>";
  return o.str();
}

void render_history(std::ostringstream& o, const History& h) {
  if (!h.note.empty()) o << "<p class=\"missing\">" << esc(h.note) << "</p>\n";
  if (h.series.empty() && h.note.empty())
    o << "<p class=\"missing\">No baseline CSV was ever committed: <code>make bench-gate-baseline</code> records the "
         "gate "
         "baselines, <code>make bench-baseline</code> a timed one.</p>\n";
  for (const auto& s : h.series) {
    o << "<details open class=\"series\"><summary><b>" << esc(s.family) << "</b> — " << esc(s.kind) << " baselines ("
      << esc(s.unit.empty() ? "no hand rows" : s.unit) << "): " << s.versions.size()
      << " committed version(s); the hand tier's median per kernel row, each ÷ its oldest committed value</summary>\n"
      << trend_svg(s) << "\n<table><tr><th>#</th><th>commit</th><th>date</th><th>key (folder)</th></tr>";
    for (std::size_t v = 0; v < s.versions.size(); ++v) {
      const auto& ver = s.versions[v];
      o << "<tr><td>" << v + 1 << "</td><td><code>" << esc(short_sha(ver.commit)) << "</code></td><td>" << esc(ver.date)
        << "</td><td>" << esc(ver.key)
        << (v > 0 && ver.key != s.versions[v - 1].key ? " <span class=\"b warn\">key changed</span>" : "")
        << "</td></tr>";
    }
    o << "</table>\n<div class=\"wide\"><table class=\"num\"><tr><th>hand row</th>";
    std::vector<std::string> rows;
    for (const auto& ver : s.versions)
      for (const auto& [row, value] : ver.hand)
        if (std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);
    std::sort(rows.begin(), rows.end());
    for (std::size_t v = 0; v < s.versions.size(); ++v)
      o << "<th>" << v + 1 << " <code>" << esc(short_sha(s.versions[v].commit)) << "</code></th>";
    o << "</tr>\n";
    for (const auto& row : rows) {
      o << "<tr><td>" << esc(row) << "</td>";
      double prev = 0;
      for (const auto& ver : s.versions) {
        const auto it = std::find_if(ver.hand.begin(), ver.hand.end(), [&](const auto& p) { return p.first == row; });
        if (it == ver.hand.end()) {
          o << "<td>—</td>";
          continue;
        }
        o << "<td>" << (it->second >= 1000 ? fmt::format("{:.0f}", it->second) : fmt::format("{:.4g}", it->second));
        if (prev > 0 && it->second != prev)
          o << fmt::format(" <small>({:+.1f}%)</small>", 100.0 * (it->second / prev - 1.0));
        o << "</td>";
        prev = it->second;
      }
      o << "</tr>\n";
    }
    o << "</table></div></details>\n";
  }
}

constexpr const char* kStyle = R"(body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:110em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;vertical-align:top;text-align:left}
th{background:#f3f3f3}tr.problem{background:#fffbea}table.num td{text-align:right}table.num td:first-child{text-align:left}
.b{border-radius:3px;padding:0 4px;font-size:12px;white-space:nowrap}.ok{background:#d4edda}.bad{background:#f8d7da}
.warn{background:#fff3cd}.row-bad{background:#fdf0f1}.row-warn{background:#fffbea}.missing{color:#8a6d3b;font-style:italic}
.ev{font-family:monospace}nav a{margin-right:1em}section{margin-top:2em;border-top:2px solid #ddd}
details{margin:.4em 0}summary{cursor:pointer}code{background:#f6f6f6}small{color:#666}.wide{overflow-x:auto}
.chart svg{max-width:100%;height:auto}#filter{width:24em})";

// The coverage filter: ids containing the text (and, when ticked, only those not
// passed); a contract opens when it has a shown id.
constexpr const char* kScript = R"((function () {
  var box = document.getElementById('filter'), only = document.getElementById('only-problems');
  if (!box || !only) return;
  function apply() {
    var q = box.value.toLowerCase(), hidden = 0;
    document.querySelectorAll('#coverage details.contract').forEach(function (d) {
      var shown = 0;
      d.querySelectorAll('tr.id').forEach(function (tr) {
        var show = tr.cells[0].textContent.toLowerCase().indexOf(q) >= 0 && !(only.checked && tr.classList.contains('pass'));
        tr.style.display = show ? '' : 'none';
        if (show) { shown++; } else { hidden++; }
      });
      if (q || only.checked) { d.open = shown > 0; }
    });
    document.getElementById('filter-count').textContent = hidden ? hidden + ' hidden' : '';
  }
  box.addEventListener('input', apply);
  only.addEventListener('change', apply);
})();)";

}  // namespace

History read_history(const std::string& baselines_dir, int max_commits) {
  History h;
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(fs::absolute(baselines_dir, ec), ec);
  if (ec || !fs::is_directory(dir)) {
    h.note = "No baselines folder " + baselines_dir + " (make bench-gate-baseline records the gate baselines).";
    return h;
  }
  const auto top = git(dir.string(), {"rev-parse", "--show-toplevel"});
  const std::string root = first_line(top.out);
  if (top.exit_code != 0 || root.empty()) {
    h.note = "No history: " + baselines_dir + " is not in a git checkout, or git is not installed" +
             (first_line(top.err).empty() ? std::string(".") : " (git: " + first_line(top.err) + ").");
    return h;
  }
  std::string rel = fs::relative(dir, root, ec).generic_string();
  if (ec || rel.empty()) rel = ".";
  // The branch's own line (--first-parent): a merged branch's commits arrive with its merge, so
  // versions never alternate between two lines of history.
  const auto log = git(
      root, {"log", "--first-parent", "--format=%H %cs", "-n", std::to_string(std::max(1, max_commits)), "--", rel});
  std::vector<std::pair<std::string, std::string>> commits;
  for (const auto& l : split_nonempty(log.out, '\n'))
    if (const auto sp = l.find(' '); sp != std::string::npos) commits.emplace_back(l.substr(0, sp), l.substr(sp + 1));
  std::reverse(commits.begin(), commits.end());  // oldest first
  if (commits.empty()) {
    h.note = "No history: no commit touches " + baselines_dir +
             (log.exit_code != 0 ? " (git: " + first_line(log.err) + ")." : ".");
    return h;
  }
  std::map<std::pair<std::string, std::string>, BaselineSeries> series;  // (family, kind)
  std::map<std::string, std::string> blob_of;                            // path -> blob at the previous commit
  std::vector<std::string> unreadable;
  for (const auto& [sha, date] : commits) {
    const auto tree = git(root, {"ls-tree", "-r", "-z", sha, "--", rel});
    std::map<std::string, std::string> now;
    for (const auto& entry : split_nonempty(tree.out, '\0')) {  // "<mode> blob <sha>\t<path>"
      const auto tab = entry.find('\t');
      const auto sp1 = entry.find(' '), sp2 = entry.find(' ', sp1 + 1);
      if (tab == std::string::npos || sp2 == std::string::npos || entry.compare(sp1 + 1, 5, "blob ") != 0) continue;
      const std::string path = entry.substr(tab + 1), blob = entry.substr(sp2 + 1, tab - sp2 - 1);
      if (!path.ends_with(".csv") || path.ends_with(".prev.csv")) continue;
      now[path] = blob;
      if (blob_of.count(path) && blob_of[path] == blob) continue;  // unchanged in this commit
      const auto show = git(root, {"cat-file", "blob", blob});
      if (!show.ok()) continue;
      bench::BenchTable t;
      try {
        t = bench::parse_bench_csv(show.out, path + "@" + short_sha(sha));
      } catch (const std::exception&) {
        unreadable.push_back(path + "@" + short_sha(sha));  // a version this harness cannot read is left out
        continue;
      }
      const fs::path p(path);
      BaselineVersion v{sha, date, p.parent_path().filename().string(), {}};
      std::string unit;
      for (const auto& r : t.rows)
        if (r.key.tier == bench::Tier::Hand && !r.samples.empty()) {
          v.hand.emplace_back(fmt::format("{}/{}/threads:{}", r.key.shape, r.key.precision, r.key.threads), r.median());
          unit = r.unit;
        }
      bool counts = path.ends_with("-gate.csv");
      for (const auto& r : t.rows) counts = counts || r.unit == "instructions";
      std::string family = p.stem().string();
      if (family.ends_with("-gate")) family.resize(family.size() - 5);
      auto& s = series[{family, counts ? "gate" : "timed"}];
      s.family = family;
      s.kind = counts ? "gate" : "timed";
      if (!unit.empty()) s.unit = unit;
      s.versions.push_back(std::move(v));
    }
    blob_of = std::move(now);
  }
  for (auto& [k, s] : series) h.series.push_back(std::move(s));
  if (!unreadable.empty())
    h.note = fmt::format("Left out (not a bench CSV this harness reads): {}.", fmt::join(unreadable, ", "));
  return h;
}

std::string render_html(const std::optional<json>& coverage, const std::string& reports_dir,
                        const std::vector<BenchPage>& bench, const History& history) {
  const std::string coverage_source = reports_dir + "/coverage.json";
  std::ostringstream summary, cov, mut, claims, benchs, hist;
  if (coverage) {
    render_summary(summary, *coverage, coverage_source);
    render_coverage(cov, mut, claims, *coverage);
  }
  for (const auto& b : bench) render_bench(benchs, b);
  render_history(hist, history);

  const std::string no_audit = "<p class=\"missing\">No audit results: <code>" + esc(coverage_source) +
                               "</code> not found. Run <code>make audit</code> (<code>popper audit ... -o " +
                               esc(reports_dir) + "</code>).</p>\n";
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>popper report</title><style>" << kStyle
    << "</style></head><body>\n<h1>popper report</h1>\n<p><small>written by popper " << esc(build_id())
    << "</small></p>\n<nav><a href=\"#summary\">summary</a><a "
       "href=\"#coverage\">coverage</a>"
       "<a href=\"#mutants\">mutants</a><a href=\"#claims\">claims</a><a href=\"#bench\">bench</a><a "
       "href=\"#history\">history</a></nav>\n";
  o << "<section id=\"summary\"><h2>Summary</h2>\n" << (coverage ? summary.str() : no_audit) << "</section>\n";
  o << "<section id=\"coverage\"><h2>Coverage</h2>\n";
  if (coverage)
    o << "<p>Per contract, each test and harness: its outcome (a skipped, UNBOUND, not-run or declined item is shown "
         "as such, "
         "never as passed), the reason, the backends its passing runs recorded as evidence with where they ran and how "
         "the "
         "path was chosen, and its power: the mutants it killed of those it declares. Contracts with an item not "
         "passed "
         "are open.</p>\n<p><input id=\"filter\" placeholder=\"filter ids\"> <label><input type=\"checkbox\" "
         "id=\"only-problems\"> only items not passed</label> <span id=\"filter-count\"></span></p>\n"
      << cov.str();
  else o << no_audit;
  o << "</section>\n";
  o << "<section id=\"mutants\"><h2>Mutants</h2>\n";
  if (coverage)
    o << "<p>Every declared mutant: a deliberately broken kernel or input the test must fail on. Survived or not "
         "reached "
         "means the test cannot see that "
         "fault.</p>\n<table><tr><th>contract</th><th>test</th><th>mutant</th><th>path</th>"
         "<th>outcome</th><th>by site</th><th>what it breaks</th></tr>\n"
      << mut.str() << "</table>\n";
  else o << no_audit;
  o << "</section>\n";
  o << "<section id=\"claims\"><h2>Benchmark claims</h2>\n";
  if (coverage)
    o << "<table><tr><th>contract</th><th>claim</th><th>verdict</th><th>why</th></tr>\n"
      << claims.str()
      << "</table>\n<p><small>Claims are measured by <code>make bench-compare</code> "
         "(<code>reports/bench-claims.json</code>) "
         "and judged by the audit.</small></p>\n";
  else o << no_audit;
  o << "</section>\n";
  o << "<section id=\"bench\"><h2>Benchmarks</h2>\n";
  if (bench.empty())
    o << "<p class=\"missing\">No bench tables: no <code>" << esc(reports_dir)
      << "/bench-&lt;family&gt;.csv</code>. Run <code>make bench-compare FAMILY=gemm</code> (or another family).</p>\n";
  else o << benchs.str();
  o << "</section>\n";
  o << "<section id=\"history\"><h2>Committed baselines over time</h2>\n" << hist.str() << "</section>\n";
  o << "<script>" << kScript << "</script>\n</body></html>\n";
  return o.str();
}

}  // namespace popper::report
