// Contract `benchmarks` claims evaluated on a bench table (rules in claims.hpp).
#include "popper/io.hpp"
#include "popper/bench/claims.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "popper/bench/report.hpp"

namespace popper::bench {
namespace {

bool holds(double v, const std::string& op, double threshold) {
  if (op == "<") return v < threshold;
  if (op == "<=") return v <= threshold;
  if (op == ">") return v > threshold;
  if (op == ">=") return v >= threshold;
  return false;
}

// "Worst" is the value closest to failing: the largest for < and <=, the smallest for > and >=.
bool worse(double a, double b, const std::string& op) { return (op == "<" || op == "<=") ? a > b : a < b; }

std::string group_name(const std::string& shape, const std::string& prec, int threads) {
  return shape + "/" + prec + "/threads:" + std::to_string(threads);
}

}  // namespace

std::vector<ClaimResult> evaluate_claims(const std::vector<Contract>& contracts, const std::string& family,
                                         const BenchTable& table, const PeakResult* peak,
                                         const std::map<std::string, std::string>& peak_kind) {
  std::vector<ClaimResult> out;
  // Groups present in the table.
  struct G {
    std::string shape, precision;
    int threads;
    bool operator<(const G& o) const {
      return std::tie(shape, precision, threads) < std::tie(o.shape, o.precision, o.threads);
    }
  };
  std::set<G> present;
  for (const auto& r : table.rows)
    if (r.key.family == family && r.unit == kUnitSeconds) present.insert({r.key.shape, r.key.precision, r.key.threads});

  for (const auto& c : contracts)
    for (const auto& claim : c.benchmarks) {
      if (claim.family != family) continue;
      ClaimResult res{c.stem, claim.id, family, "not_measured", ""};
      const bool all_shapes = claim.shapes.empty() || (claim.shapes.size() == 1 && claim.shapes[0] == "all");
      std::vector<std::string> unmeasured, failures;
      bool have_worst = false, any_fail = false;
      double worst = 0;
      std::string worst_group;
      std::set<std::string> listed_seen;
      for (const auto& g : present) {
        if (!all_shapes && std::find(claim.shapes.begin(), claim.shapes.end(), g.shape) == claim.shapes.end()) continue;
        if (!claim.precision.empty() && claim.precision != g.precision) continue;
        if (claim.threads && *claim.threads != g.threads) continue;
        listed_seen.insert(g.shape);
        const std::string gname = group_name(g.shape, g.precision, g.threads);
        const BenchRow* num = best_row(table, claim.numerator, g.shape, g.precision, g.threads);
        // Same backend when the denominator tier has it (wrapped vs ceiling on one OpenBLAS core).
        const BenchRow* den = claim.metric == "peak_fraction" || !num
                                  ? nullptr
                                  : matching_row(table, claim.denominator, g.shape, g.precision, g.threads,
                                                 num->key.backend);
        // A tier that ran but produced a wrong result cannot meet a performance claim.
        for (const auto& r : table.rows)
          if (r.key.shape == g.shape && r.key.precision == g.precision && r.key.threads == g.threads &&
              (r.key.tier == claim.numerator || r.key.tier == claim.denominator) && r.verdict.rfind("incorrect", 0) == 0) {
            any_fail = true;
            failures.push_back(gname + ": " + r.key.tier + " " + r.verdict);
          }
        double value = std::nan("");
        if (claim.metric == "time_ratio" && num && den) value = num->median() / den->median();
        else if (claim.metric == "throughput_ratio" && num && den && den->throughput() > 0)
          value = num->throughput() / den->throughput();
        else if (claim.metric == "peak_fraction" && num && peak) {
          const auto it = peak_kind.find(g.precision);
          const std::string kind = it == peak_kind.end() ? "" : it->second;
          const double p = kind.empty() ? 0 : row_peak(*peak, kind, g.threads, num->work_per_iter, num->bytes_per_iter);
          // A bandwidth peak is compared with bytes/s (as apply_peaks does), any other with work/s.
          const double achieved = kind == "bandwidth" ? (num->median() > 0 ? num->bytes_per_iter / num->median() : 0)
                                                      : num->throughput();
          if (p > 0) value = achieved / p;
        }
        if (std::isnan(value)) {
          unmeasured.push_back(gname);
          continue;
        }
        if (!holds(value, claim.op, claim.threshold)) any_fail = true;
        if (!have_worst || worse(value, worst, claim.op)) {
          worst = value;
          worst_group = gname;
          have_worst = true;
        }
      }
      if (!all_shapes)
        for (const auto& s : claim.shapes)
          if (!listed_seen.count(s)) unmeasured.push_back(s + " (not run)");
      char buf[256];
      if (have_worst)
        std::snprintf(buf, sizeof buf, "worst %s: %.4g %s %.4g %s", worst_group.c_str(), worst, claim.op.c_str(),
                      claim.threshold, holds(worst, claim.op, claim.threshold) ? "holds" : "fails");
      std::string detail = have_worst ? buf : "no group measured";
      if (!failures.empty()) detail += "; " + failures.front();
      if (!unmeasured.empty()) {
        detail += "; not measured: " + unmeasured.front();
        if (unmeasured.size() > 1) detail += " and " + std::to_string(unmeasured.size() - 1) + " more";
      }
      if (any_fail) res.verdict = "not_met";
      else if (have_worst && unmeasured.empty()) res.verdict = "met";
      else res.verdict = "not_measured";
      res.detail = detail;
      out.push_back(res);
    }
  return out;
}

void write_claims_json(const std::string& path, const std::string& family, const std::vector<ClaimResult>& results) {
  nlohmann::json doc = {{"claims", nlohmann::json::array()}};
  if (std::ifstream in(path); in) {
    try {
      const auto old = nlohmann::json::parse(in);
      if (old.contains("claims") && old["claims"].is_array())
        for (const auto& c : old["claims"])
          if (c.value("family", "") != family) doc["claims"].push_back(c);
    } catch (const nlohmann::json::exception&) {
      // An unreadable old file is replaced.
    }
  }
  for (const auto& r : results)
    doc["claims"].push_back({{"contract", r.contract}, {"id", r.id}, {"family", r.family}, {"verdict", r.verdict},
                             {"detail", r.detail}});
  write_file_atomic(path, doc.dump(2) + "\n");
}

}  // namespace popper::bench
