// `popper report html`: one self-contained page (inline CSS and a little inline
// JS; no URL of any kind, nothing loaded) over what the other commands wrote:
//   #summary   the audit's verdict and totals, each with its denominator:
//              obligations covered, tests passed/failed/skipped/UNBOUND/not run,
//              mutants killed/declared, benchmark claims by verdict; the
//              failures, waivers, orphans and warnings it listed
//   #coverage  per contract: each test and harness id with its outcome, the
//              reason (skip, UNBOUND, not run, failure), the backends its runs
//              recorded as evidence with their sites (native/emulated, auto/
//              forced), declines, and its mutant power killed/declared; the
//              obligations with what covers them or why not
//   #mutants   every declared mutant: the test, the path it breaks, outcome by site
//   #claims    the contracts' benchmark claims as the audit judged them
//   #bench     per reports/bench-<family>.csv: the three-tier table (the figures of
//              bench::table_figures, which bench-<family>.md prints too: hand ÷
//              best ceiling, % of peak, roofline bound and % of bound) and the
//              chart with the roofline (bench::render_svg)
//   #history   the committed baselines through git: every committed version of
//              every baselines/<key>/<family>[-gate].csv, the hand tier's median
//              per kernel row (shape/precision/threads) as a trend per family and
//              kind (gate: instructions; timed: seconds), grouped regardless of
//              the key, with each commit's short sha and date and a mark where
//              the key changed
// A missing input is a section that says so and names the command that makes
// it; skipped, UNBOUND, not-run and declined items are shown as such, never as
// passes. Every string from an input is HTML-escaped.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/csv.hpp"

namespace popper::report {

struct BenchPage {
  std::string family;  // from the file name bench-<family>.csv
  bench::BenchTable table;
};

// One committed version of one baseline CSV: the hand tier's median per row.
struct BaselineVersion {
  std::string commit, date;                          // full sha, committer date (YYYY-MM-DD)
  std::string key;                                   // the folder: gate key or machine fingerprint
  std::vector<std::pair<std::string, double>> hand;  // "shape/precision/threads:N" -> median
};
struct BaselineSeries {
  std::string family, kind, unit;         // kind: "gate" (instructions) | "timed" (seconds)
  std::vector<BaselineVersion> versions;  // oldest first; one per commit that changed the file
};
struct History {
  std::vector<BaselineSeries> series;  // by family, then kind
  std::string note;                    // why there is no or only partial history, else empty
};

// Reads every committed version of <baselines_dir>/**/*.csv (not *.prev.csv)
// through git, over the newest `max_commits` commits that touched the folder; a
// version is a commit where the file's content changed (or appeared under a new
// key). Never throws for a missing folder, git or repository: the note says why.
History read_history(const std::string& baselines_dir, int max_commits = 40);

// The page. `coverage` is reports/coverage.json as popper audit writes it
// (throws nlohmann::json::exception when a key has the wrong type);
// `reports_dir` is named where an input is missing.
std::string render_html(const std::optional<nlohmann::json>& coverage, const std::string& reports_dir,
                        const std::vector<BenchPage>& bench, const History& history);

}  // namespace popper::report
