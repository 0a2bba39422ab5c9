// What `popper audit` reads: test results, bindings, bench claims, mutant
// runs, waivers; and how several runs of one id merge (audit.hpp).
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <ctime>
#include <regex>

#include "common/text.hpp"
#include "popper/audit.hpp"
#include "popper/binding.hpp"
#include "popper/error.hpp"
#include "popper/io.hpp"
#include "popper/version.hpp"

namespace popper {

namespace {

nlohmann::json parse_json_file(const std::string& path) {
  const std::string text = read_file(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not valid JSON: " + e.what());
  }
}

int outcome_rank(const std::string& o) {
  if (o == "failed") return 4;
  if (o == "unbound") return 3;
  if (o == "passed") return 2;
  if (o == "skipped") return 1;
  return 0;  // not_run, or anything unknown
}

int mutant_rank(const std::string& o) {
  if (o == "killed") return 3;
  if (o == "survived") return 2;
  if (o == "not_reached") return 1;
  return 0;  // not_run
}

template <class T>
void add_unique(std::vector<T>& v, const T& x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

}  // namespace

void merge_result(IdResult& into, const IdResult& from) {
  if (into.outcome.empty() || outcome_rank(from.outcome) > outcome_rank(into.outcome)) {
    into.outcome = from.outcome;
    into.reason = from.reason;
  }
  for (const auto& [tag, sites] : from.backends)
    for (const auto& s : sites) add_unique(into.backends[tag], s);
  for (const auto& d : from.declines) add_unique(into.declines, d);
  for (const auto& s : from.sites) add_unique(into.sites, s);
}

void merge_mutant(MutantResult& into, const MutantResult& from) {
  if (into.outcome.empty() || mutant_rank(from.outcome) > mutant_rank(into.outcome)) {
    into.outcome = from.outcome;
    into.detail = from.detail;
  }
  for (const auto& [site, o] : from.by_site) {
    auto it = into.by_site.find(site);
    if (it == into.by_site.end() || mutant_rank(o) > mutant_rank(it->second)) into.by_site[site] = o;
  }
}

void read_gtest_results(const std::string& path, std::map<std::string, IdResult>& out) {
  const nlohmann::json doc = parse_json_file(path);
  if (!doc.is_object() || !doc.contains("testsuites") || !doc["testsuites"].is_array())
    throw Error(path + ": not GoogleTest JSON output (no 'testsuites' array)");
  for (const auto& suite : doc["testsuites"]) {
    if (!suite.contains("testsuite") || !suite["testsuite"].is_array()) continue;
    for (const auto& tc : suite["testsuite"]) {
      if (!tc.contains("popper_id") || !tc["popper_id"].is_string()) continue;
      IdResult r;
      r.outcome = tc.value("popper_outcome", "not_run");
      r.reason = tc.value("popper_reason", "");
      // The JSON's own verdict wins over the recorded property if they disagree.
      const bool has_failures = tc.contains("failures") && tc["failures"].is_array() && !tc["failures"].empty();
      if (has_failures) {
        r.outcome = "failed";
        if (r.reason.empty() && tc["failures"][0].contains("failure"))
          r.reason = tc["failures"][0]["failure"].get<std::string>().substr(0, 300);
      }
      const std::string site = tc.value("popper_where", "native");
      r.sites.push_back(site);
      if (r.outcome == "passed")
        for (const auto& b : parse_backends(tc.value("popper_backends", "")))
          add_unique(r.backends[b.tag], EvidenceSite{site, to_string(b.how)});
      for (const auto& d : split_nonempty(tc.value("popper_declines", ""), ';')) {
        std::string t = d;
        while (!t.empty() && t.front() == ' ') t.erase(0, 1);
        if (!t.empty()) r.declines.push_back(t);
      }
      merge_result(out[tc["popper_id"].get<std::string>()], r);
    }
  }
}

std::vector<std::string> read_bindings(const std::string& path) {
  const nlohmann::json doc = parse_json_file(path);
  if (!doc.is_object() || !doc.contains("bindings") || !doc["bindings"].is_array())
    throw Error(path + ": not a binding list (expected the output of --popper-list-bindings)");
  std::vector<std::string> ids;
  for (const auto& b : doc["bindings"])
    if (b.contains("id") && b["id"].is_string()) ids.push_back(b["id"].get<std::string>());
  return ids;
}

void read_bench_claims(const std::string& path, std::map<std::string, IdResult>& out) {
  const nlohmann::json doc = parse_json_file(path);
  if (!doc.is_object() || !doc.contains("claims") || !doc["claims"].is_array())
    throw Error(path + ": not a bench claims file (expected {\"claims\": [...]})");
  for (const auto& c : doc["claims"])
    if (c.contains("id") && c["id"].is_string())
      out[c["id"].get<std::string>()] = {c.value("verdict", "not_measured"), c.value("detail", "")};
}

nlohmann::json mutant_results_json(const std::vector<MutantResult>& results) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& m : results)
    arr.push_back({{"contract", m.contract},
                   {"test", m.test_id},
                   {"mutant", m.mutant_id},
                   {"path", m.path},
                   {"outcome", m.outcome},
                   {"detail", m.detail},
                   {"by_site", m.by_site}});
  return {{"mutants", arr}, {"popper", build_json()}};
}

void read_mutant_results(const std::string& path, std::vector<MutantResult>& out) {
  const nlohmann::json doc = parse_json_file(path);
  if (!doc.is_object() || !doc.contains("mutants") || !doc["mutants"].is_array())
    throw Error(path + ": not a mutant results file (expected {\"mutants\": [...]} from popper audit --mutants)");
  for (const auto& j : doc["mutants"]) {
    MutantResult m;
    m.contract = j.value("contract", "");
    m.test_id = j.value("test", "");
    m.mutant_id = j.value("mutant", "");
    m.path = j.value("path", "");
    m.outcome = j.value("outcome", "not_run");
    m.detail = j.value("detail", "");
    if (j.contains("by_site") && j["by_site"].is_object())
      for (const auto& [site, o] : j["by_site"].items()) m.by_site[site] = o.get<std::string>();
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const MutantResult& x) { return x.test_id == m.test_id && x.mutant_id == m.mutant_id; });
    if (it == out.end()) out.push_back(m);
    else merge_mutant(*it, m);
  }
}

nlohmann::json bench_mutant_results_json(const std::vector<bench::BenchMutantResult>& results) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& m : results)
    arr.push_back({{"family", m.family},
                   {"mutant", m.mutant},
                   {"outcome", m.outcome},
                   {"rows", m.rows},
                   {"caught", m.caught},
                   {"caught_by", m.caught_by},
                   {"detail", m.detail}});
  return {{"bench_mutants", arr}, {"popper", build_json()}};
}

void read_bench_mutant_results(const std::string& path, std::vector<bench::BenchMutantResult>& out) {
  const nlohmann::json doc = parse_json_file(path);
  if (!doc.is_object() || !doc.contains("bench_mutants") || !doc["bench_mutants"].is_array())
    throw Error(path +
                ": not a bench-mutant results file (expected {\"bench_mutants\": [...]} from popper bench mutants)");
  for (const auto& j : doc["bench_mutants"]) {
    if (!j.is_object()) throw Error(path + ": a bench-mutant result is an object");
    bench::BenchMutantResult m;
    m.family = j.value("family", "");
    m.mutant = j.value("mutant", "");
    m.outcome = j.value("outcome", "survived");
    m.rows = j.value("rows", std::size_t{0});
    m.caught = j.value("caught", std::size_t{0});
    m.caught_by = j.value("caught_by", "");
    m.detail = j.value("detail", "");
    if (m.family.empty() || m.mutant.empty()) throw Error(path + ": a bench-mutant result names its family and mutant");
    if (m.outcome != "killed" && m.outcome != "survived")
      throw Error(path + ": bench mutant " + m.family + "/" + m.mutant + " has outcome '" + m.outcome +
                  "' (killed or survived)");
    out.push_back(std::move(m));
  }
}

std::vector<Waiver> read_waivers(const std::string& path) {
  const std::string text = read_file(path);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(path + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  std::vector<Waiver> out;
  if (root.IsNull()) return out;
  if (!root.IsMap() || !root["waivers"] || !root["waivers"].IsSequence())
    throw Error(path + ": a waivers file is `waivers:` followed by a list of {id, reason, expires}");
  static const std::regex kDate(R"(^\d{4}-\d{2}-\d{2}$)");
  for (const auto& w : root["waivers"]) {
    const int line = w.Mark().line + 1;
    const auto where = path + ":" + std::to_string(line);
    if (!w.IsMap()) throw Error(where + ": each waiver is a mapping {id, reason, expires}");
    for (const auto& kv : w) {
      const auto key = kv.first.as<std::string>();
      if (key != "id" && key != "reason" && key != "expires")
        throw Error(fmt::format("{}: unknown key '{}' in a waiver (keys: id, reason, expires)", where, key));
    }
    Waiver x;
    x.pos = {path, line, w.Mark().column + 1};
    for (const char* key : {"id", "reason", "expires"})
      if (!w[key] || !w[key].IsScalar() || w[key].Scalar().find_first_not_of(" \t") == std::string::npos)
        throw Error(where + ": a waiver needs '" + key + "': no waiver without an id, a reason and an expiry date");
    x.id = w["id"].Scalar();
    x.reason = w["reason"].Scalar();
    x.expires = w["expires"].Scalar();
    if (!std::regex_match(x.expires, kDate))
      throw Error(where + ": expires must be a date YYYY-MM-DD, got '" + x.expires + "'");
    out.push_back(x);
  }
  return out;
}

std::string today_utc() {
  const std::time_t now = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&now));
  return buf;
}

}  // namespace popper
