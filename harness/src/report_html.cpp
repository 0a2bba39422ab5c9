// The self-contained HTML report (report_html.hpp).
#include "report_html.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "bench/process.hpp"
#include "bench/report.hpp"

namespace popper::report {

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(ch);
    }
  }
  return out;
}

namespace {

namespace fs = std::filesystem;

// ---- history: committed baselines through git ----

bench::ProcessResult git(const std::string& repo, std::vector<std::string> args) {
  args.insert(args.begin(), {"git", "-C", repo});
  return bench::run_process(args, {}, {}, 60);
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

// ---- Markdown (as bench::render_markdown writes it) to HTML ----

// `code` and **bold** inside escaped text.
std::string inline_md(const std::string& text) {
  std::string s = html_escape(text), out;
  bool code = false, bold = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '`') {
      out += code ? "</code>" : "<code>";
      code = !code;
    } else if (!code && s.compare(i, 2, "**") == 0) {
      out += bold ? "</b>" : "<b>";
      bold = !bold;
      ++i;
    } else {
      out.push_back(s[i]);
    }
  }
  if (code) out += "</code>";
  if (bold) out += "</b>";
  return out;
}

std::vector<std::string> table_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cur;
  for (std::size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '|') {
      cells.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(line[i]);
    }
  }
  for (auto& c : cells) {
    c.erase(0, c.find_first_not_of(' '));
    c.erase(c.find_last_not_of(' ') + 1);
  }
  return cells;
}

std::string markdown_to_html(const std::string& md) {
  std::ostringstream out;
  const auto ls = lines_of(md);
  for (std::size_t i = 0; i < ls.size(); ++i) {
    const std::string& l = ls[i];
    if (l.rfind("# ", 0) == 0) continue;  // the family heading: the section has its own
    if (l.rfind("## ", 0) == 0) {
      out << "<h4>" << inline_md(l.substr(3)) << "</h4>\n";
    } else if (l.rfind("- ", 0) == 0) {
      out << "<ul>";
      for (; i < ls.size() && ls[i].rfind("- ", 0) == 0; ++i) out << "<li>" << inline_md(ls[i].substr(2)) << "</li>";
      --i;
      out << "</ul>\n";
    } else if (l.rfind("|", 0) == 0) {
      out << "<table>";
      bool head = true;
      for (; i < ls.size() && ls[i].rfind("|", 0) == 0; ++i) {
        if (ls[i].rfind("|---", 0) == 0 || ls[i].rfind("|:--", 0) == 0) continue;
        out << "<tr>";
        for (const auto& c : table_cells(ls[i])) out << (head ? "<th>" : "<td>") << inline_md(c) << (head ? "</th>" : "</td>");
        out << "</tr>";
        head = false;
      }
      --i;
      out << "</table>\n";
    } else {
      out << "<p>" << inline_md(l) << "</p>\n";
    }
  }
  return out.str();
}

// ---- coverage ----

std::string outcome_class(const std::string& o) {
  if (o == "passed" || o == "killed" || o == "met" || o == "PASS") return "ok";
  if (o == "failed" || o == "survived" || o == "not_reached" || o == "not_met" || o == "unbound" || o == "FAIL")
    return "bad";
  return "warn";  // skipped, not_run, not_measured, inconclusive, ...
}

std::string badge(const std::string& outcome) {
  return fmt::format("<span class=\"b {}\">{}</span>", outcome_class(outcome), html_escape(outcome));
}

std::string str(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

long num(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<long>() : 0;
}

std::string ratio(const nlohmann::json& j, const char* key, const char* part, const char* whole) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_object()) return "—";
  return fmt::format("{}/{}", num(*it, part), num(*it, whole));
}

void render_summary(std::ostringstream& o, const nlohmann::json& cov, const std::string& source) {
  const auto& t = cov.at("total");
  const long code = num(cov, "exit_code");
  o << "<p>From <code>" << html_escape(source) << "</code>. Audit verdict: "
    << badge(code == 0 ? "PASS" : "FAIL") << " (exit " << code << ")</p>\n<table class=\"kv\">";
  auto row = [&](const std::string& name, const std::string& value) {
    o << "<tr><th>" << html_escape(name) << "</th><td>" << value << "</td></tr>";
  };
  row("contracts", std::to_string(num(t, "contracts")));
  row("obligations covered", ratio(t, "obligations_covered", "covered", "total"));
  if (t.contains("falsification_tests")) {
    const auto& f = t.at("falsification_tests");
    for (const char* k : {"passed", "failed", "skipped", "unbound", "not_run"})
      row(std::string("falsification tests ") + k, fmt::format("{}/{}", num(f, k), num(f, "total")));
  }
  row("harnesses run", ratio(t, "harnesses_run", "covered", "total"));
  if (t.contains("mutants")) row("mutants killed (power)", fmt::format("{}/{}", num(t.at("mutants"), "killed"), num(t.at("mutants"), "declared")));
  if (t.contains("benchmarks")) {
    const auto& b = t.at("benchmarks");
    for (const char* k : {"met", "not_met", "inconclusive", "partially_measured", "not_measured"})
      row(std::string("benchmark claims ") + k, fmt::format("{}/{}", num(b, k), num(b, "total")));
  }
  o << "</table>\n";
  for (const char* list : {"failures", "orphans", "warnings"}) {
    if (!cov.contains(list) || cov.at(list).empty()) continue;
    o << "<h4>" << list << "</h4><ul>";
    for (const auto& item : cov.at(list)) o << "<li>" << html_escape(item.is_string() ? item.get<std::string>() : item.dump()) << "</li>";
    o << "</ul>\n";
  }
}

std::string evidence(const nlohmann::json& r) {
  std::string out;
  if (r.contains("backends") && r.at("backends").is_object())
    for (const auto& [backend, sites] : r.at("backends").items()) {
      std::vector<std::string> where;
      for (const auto& s : sites) where.push_back(str(s, "site") + " " + str(s, "how"));
      out += fmt::format("<span class=\"ev\">{}</span> <small>{}</small><br>", html_escape(backend),
                         html_escape(fmt::format("{}", fmt::join(where, ", "))));
    }
  if (r.contains("declines"))
    for (const auto& d : r.at("declines"))
      out += "<span class=\"b warn\">declined</span> <small>" + html_escape(d.get<std::string>()) + "</small><br>";
  return out.empty() ? "—" : out;
}

void render_coverage(std::ostringstream& cov_out, std::ostringstream& mut_out, std::ostringstream& claims_out,
                     const nlohmann::json& cov) {
  for (const auto& c : cov.at("contracts")) {
    const std::string name = str(c, "contract");
    cov_out << "<details open class=\"contract\"><summary><b>" << html_escape(name) << "</b> — obligations covered "
            << ratio(c, "obligations_covered", "covered", "total") << ", power "
            << (c.contains("mutants") ? fmt::format("{}/{}", num(c.at("mutants"), "killed"), num(c.at("mutants"), "declared")) : "—")
            << ", qa gate " << (c.contains("qa_gate") ? badge(str(c.at("qa_gate"), "verdict")) : "—") << "</summary>\n";
    cov_out << "<table class=\"ids\"><tr><th>id</th><th>kind</th><th>outcome</th><th>reason</th><th>evidence (backend, site)</th>"
               "<th>power</th></tr>\n";
    for (const auto& r : c.value("results", nlohmann::json::array())) {
      const std::string id = str(r, "id"), kind = str(r, "kind"), outcome = str(r, "outcome");
      if (kind == "benchmark") {
        claims_out << "<tr><td>" << html_escape(name) << "</td><td>" << html_escape(id) << "</td><td>" << badge(outcome)
                   << "</td><td>" << html_escape(str(r, "reason")) << "</td></tr>\n";
        continue;
      }
      long killed = 0, declared = 0;
      for (const auto& m : r.value("mutants", nlohmann::json::array())) {
        ++declared;
        killed += str(m, "outcome") == "killed";
        std::vector<std::string> sites;
        if (m.contains("by_site"))
          for (const auto& [site, out] : m.at("by_site").items()) sites.push_back(site + ": " + out.get<std::string>());
        mut_out << "<tr><td>" << html_escape(name) << "</td><td>" << html_escape(id) << "</td><td>" << html_escape(str(m, "id"))
                << "</td><td>" << html_escape(str(m, "path")) << "</td><td>" << badge(str(m, "outcome")) << "</td><td>"
                << html_escape(fmt::format("{}", fmt::join(sites, "; "))) << "</td><td>" << html_escape(str(m, "description"))
                << "<br><small>" << html_escape(str(m, "detail")) << "</small></td></tr>\n";
      }
      cov_out << "<tr class=\"id\"><td>" << html_escape(id) << "</td><td>" << html_escape(kind) << "</td><td>" << badge(outcome)
              << "</td><td>" << html_escape(str(r, "reason")) << "</td><td>" << evidence(r) << "</td><td>"
              << (declared ? fmt::format("{}/{}", killed, declared) : "none declared") << "</td></tr>\n";
    }
    cov_out << "</table></details>\n";
  }
}

// ---- history charts ----

std::string trend_svg(const BaselineSeries& s) {
  // Every row's value divided by its first value; x = version index.
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
  lo = std::min(lo, 0.9);
  hi = std::max(hi, 1.1);
  const double w = 720, h = 260, left = 60, right = 240, top = 20, bottom = 40;
  const double pw = w - left - right, ph = h - top - bottom;
  const std::size_t n = std::max<std::size_t>(s.versions.size(), 2);
  auto x = [&](std::size_t v) { return left + pw * double(v) / double(n - 1); };
  auto y = [&](double r) { return top + ph * (hi - r) / (hi - lo); };
  std::ostringstream o;
  o << fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">", w, h);
  o << fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>", left,
                   y(1.0), left + pw);
  for (double r : {lo, 1.0, hi})
    o << fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">{:.3f}×</text>", left - 4, y(r) + 4, r);
  for (std::size_t v = 0; v < s.versions.size(); ++v)
    o << fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>", x(v), h - bottom + 14,
                     html_escape(s.versions[v].commit.substr(0, 7)));
  static const char* colors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"};
  std::size_t k = 0, legend = 0;
  for (const auto& [row, pts] : lines) {
    const char* c = colors[k++ % 8];
    std::string poly;
    for (const auto& [v, value] : pts) poly += fmt::format("{:.1f},{:.1f} ", x(v), y(value / pts.front().second));
    o << "<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"" << c << "\" points=\"" << poly << "\"><title>"
      << html_escape(row) << "</title></polyline>";
    for (const auto& [v, value] : pts)
      o << fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"><title>{} @ {}: {:.6g} {}</title></circle>", x(v),
                       y(value / pts.front().second), c, html_escape(row), html_escape(s.versions[v].commit.substr(0, 7)),
                       value, html_escape(s.unit));
    if (legend < 14)
      o << fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" fill=\"{}\">{}</text>", left + pw + 10, top + 12 * double(++legend), c,
                       html_escape(row));
  }
  if (lines.size() > 14)
    o << fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\">… {} more (hover the lines)</text>", left + pw + 10,
                     top + 12 * double(legend + 1), lines.size() - 14);
  o << "</svg>";
  return o.str();
}

void render_history(std::ostringstream& o, const History& h) {
  if (!h.note.empty()) o << "<p class=\"missing\">" << html_escape(h.note) << "</p>\n";
  for (const auto& s : h.series) {
    o << "<h3>" << html_escape(s.family) << " — " << html_escape(s.kind) << " baselines (" << html_escape(s.unit)
      << ", hand tier, each row ÷ its oldest committed value)</h3>\n";
    o << trend_svg(s) << "\n<table><tr><th>commit</th><th>date</th><th>key</th><th>hand rows</th></tr>";
    std::string prev_key;
    for (const auto& v : s.versions) {
      o << "<tr><td><code>" << html_escape(v.commit.substr(0, 10)) << "</code></td><td>" << html_escape(v.date) << "</td><td>"
        << html_escape(v.key) << (v.key != prev_key && !prev_key.empty() ? " <span class=\"b warn\">key changed</span>" : "")
        << "</td><td>" << v.hand.size() << "</td></tr>";
      prev_key = v.key;
    }
    o << "</table>\n";
  }
}

constexpr const char* kStyle = R"(body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;vertical-align:top;text-align:left}
th{background:#f3f3f3}.b{border-radius:3px;padding:0 4px;font-size:12px}.ok{background:#d4edda}.bad{background:#f8d7da}
.warn{background:#fff3cd}.missing{color:#8a6d3b}.ev{font-family:monospace}nav a{margin-right:1em}section{margin-top:2em}
code{background:#f6f6f6}small{color:#666}#filter{margin:.5em 0;width:24em})";

// Filters the coverage rows by id; shows the count of rows it hides.
constexpr const char* kScript = R"(document.getElementById('filter').addEventListener('input', function (e) {
  var q = e.target.value.toLowerCase(), hidden = 0;
  document.querySelectorAll('#coverage tr.id').forEach(function (tr) {
    var show = tr.cells[0].textContent.toLowerCase().indexOf(q) >= 0;
    tr.style.display = show ? '' : 'none';
    if (!show) hidden++;
  });
  document.getElementById('filter-count').textContent = hidden ? hidden + ' hidden' : '';
});)";

}  // namespace

History read_history(const std::string& baselines_dir, int max_commits) {
  History h;
  std::error_code ec;
  const fs::path dir = fs::absolute(baselines_dir, ec);
  if (ec || !fs::is_directory(dir)) {
    h.note = "no baselines folder " + baselines_dir;
    return h;
  }
  const auto top = git(dir.string(), {"rev-parse", "--show-toplevel"});
  if (top.exit_code != 0) {
    h.note = "no history: " + dir.string() + " is not in a git checkout (or git is not installed)";
    return h;
  }
  const std::string root = lines_of(top.out).at(0);
  const std::string rel = fs::relative(dir, root, ec).string();
  const auto log = git(root, {"log", "--format=%H %cs", "-n", std::to_string(max_commits), "--", rel});
  std::vector<std::pair<std::string, std::string>> commits;
  for (const auto& l : lines_of(log.out)) commits.push_back({l.substr(0, l.find(' ')), l.substr(l.find(' ') + 1)});
  std::reverse(commits.begin(), commits.end());  // oldest first
  if (commits.empty()) {
    h.note = "no history: no commit touches " + rel;
    return h;
  }
  std::map<std::pair<std::string, std::string>, BaselineSeries> series;  // (family, kind)
  for (const auto& [sha, date] : commits) {
    const auto tree = git(root, {"ls-tree", "-r", "--name-only", sha, "--", rel});
    for (const auto& path : lines_of(tree.out)) {
      const fs::path p(path);
      if (p.extension() != ".csv" || path.ends_with(".prev.csv")) continue;
      const std::string key = p.parent_path().filename().string();
      const bool gate = key.rfind("gate-", 0) == 0;
      std::string family = p.stem().string();
      if (family.ends_with("-gate")) family.resize(family.size() - 5);
      const auto show = git(root, {"show", sha + ":" + path});
      if (show.exit_code != 0) continue;
      bench::BenchTable t;
      try {
        t = bench::parse_bench_csv(show.out, path + "@" + sha.substr(0, 7));
      } catch (const std::exception&) {
        continue;  // a version this harness cannot read is left out of the trend
      }
      BaselineVersion v{sha, date, key, {}};
      std::string unit;
      for (const auto& r : t.rows)
        if (r.key.tier == "hand" && !r.samples.empty()) {
          v.hand.push_back({fmt::format("{}/{}/threads:{}", r.key.shape, r.key.precision, r.key.threads), r.median()});
          unit = r.unit;
        }
      auto& s = series[{family, gate ? "gate" : "timed"}];
      s.family = family;
      s.kind = gate ? "gate" : "timed";
      if (!unit.empty()) s.unit = unit;
      // One version per commit: a commit holding several keys keeps the newest folder's.
      if (!s.versions.empty() && s.versions.back().commit == sha) s.versions.back() = v;
      else s.versions.push_back(std::move(v));
    }
  }
  for (auto& [k, s] : series) h.series.push_back(std::move(s));
  return h;
}

std::string render_html(const std::optional<nlohmann::json>& coverage, const std::string& coverage_source,
                        const std::vector<BenchPage>& bench, const History& history) {
  std::ostringstream summary, cov, mut, claims, benchs, hist;
  if (coverage) {
    render_summary(summary, *coverage, coverage_source);
    render_coverage(cov, mut, claims, *coverage);
  }
  for (const auto& b : bench) {
    benchs << "<h3>" << html_escape(b.family) << "</h3>\n" << markdown_to_html(bench::render_markdown(b.table, b.family));
    benchs << "<div class=\"chart\">" << bench::render_svg(b.table, b.family, nullptr, "", "") << "</div>\n";
  }
  render_history(hist, history);

  const std::string no_audit = "<p class=\"missing\">No audit results (<code>" + html_escape(coverage_source) +
                               "</code> not found): run <code>make audit</code>.</p>";
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>popper report</title><style>" << kStyle
    << "</style></head><body>\n<h1>popper report</h1>\n<nav><a href=\"#summary\">summary</a><a href=\"#coverage\">coverage</a>"
       "<a href=\"#mutants\">mutants</a><a href=\"#claims\">claims</a><a href=\"#bench\">bench</a><a href=\"#history\">history</a></nav>\n";
  o << "<section id=\"summary\"><h2>Summary</h2>\n" << (coverage ? summary.str() : no_audit) << "</section>\n";
  o << "<section id=\"coverage\"><h2>Coverage</h2>\n<p>A skipped, UNBOUND, not-run or declined item is shown as such, never as "
       "passed. Evidence: the backends each id's passing runs recorded, with where they ran and how the path was chosen.</p>\n"
       "<input id=\"filter\" placeholder=\"filter ids\"> <span id=\"filter-count\"></span>\n"
    << (coverage ? cov.str() : no_audit) << "</section>\n";
  o << "<section id=\"mutants\"><h2>Mutants</h2>\n"
    << (coverage ? "<table><tr><th>contract</th><th>test</th><th>mutant</th><th>path</th><th>outcome</th><th>by site</th>"
                   "<th>what it breaks</th></tr>\n" + mut.str() + "</table>"
                 : no_audit)
    << "</section>\n";
  o << "<section id=\"claims\"><h2>Benchmark claims</h2>\n"
    << (coverage ? "<table><tr><th>contract</th><th>claim</th><th>verdict</th><th>why</th></tr>\n" + claims.str() + "</table>"
                 : no_audit)
    << "</section>\n";
  o << "<section id=\"bench\"><h2>Benchmarks</h2>\n"
    << (bench.empty() ? "<p class=\"missing\">No bench tables: run <code>make bench-compare FAMILY=…</code>.</p>" : benchs.str())
    << "</section>\n";
  o << "<section id=\"history\"><h2>Committed baselines over time</h2>\n" << hist.str() << "</section>\n";
  o << "<script>" << kScript << "</script>\n</body></html>\n";
  return o.str();
}

}  // namespace popper::report
