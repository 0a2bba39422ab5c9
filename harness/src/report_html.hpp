// `popper report html`: one self-contained page (inline CSS and a little inline
// JS, no URL of any kind) over what the other commands wrote:
//   #summary   the audit's totals, each with its denominator, and its verdict
//   #coverage  per contract and id: outcome, reason, backends with evidence
//              (backend@site, how chosen), declines, power = killed/declared
//   #mutants   every declared mutant: outcome, where it ran, the detail
//   #claims    the benchmark claims as the audit judged them
//   #bench     per family: the three-tier table (bench::render_markdown) and
//              its chart with the roofline (bench::render_svg)
//   #history   the committed baselines through git history: per family and
//              kind, the hand tier's median of each row divided by its value
//              in the oldest commit that has it (a trend line per kernel)
// A missing input is a section that says so and names the command that makes
// it; skipped, UNBOUND, not-run and declined items are shown as such, never as
// passes. Every string from an input is HTML-escaped.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/csv.hpp"

namespace popper::report {

struct BenchPage {
  std::string family;
  bench::BenchTable table;
};

// One committed version of one baseline CSV: the hand tier's median per row.
struct BaselineVersion {
  std::string commit, date, key;  // key: the gate key or machine fingerprint folder
  std::vector<std::pair<std::string, double>> hand;  // "shape/precision/threads:N" -> median
};
struct BaselineSeries {
  std::string family, kind, unit;  // kind: "gate" (instructions) | "timed" (seconds)
  std::vector<BaselineVersion> versions;  // oldest first
};
struct History {
  std::vector<BaselineSeries> series;
  std::string note;  // why there is no history ("not a git checkout", ...), else empty
};

// Reads every committed version of <baselines_dir>/*/*.csv (not *.prev.csv)
// through git, newest `max_commits` commits that touched the folder. Never
// throws for a missing git or repository: the note says why.
History read_history(const std::string& baselines_dir, int max_commits = 40);

std::string html_escape(const std::string& s);

std::string render_html(const std::optional<nlohmann::json>& coverage, const std::string& coverage_source,
                        const std::vector<BenchPage>& bench, const History& history);

}  // namespace popper::report
