#include "bench/remeasure.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "bench/compare.hpp"
#include "bench/gate.hpp"
#include "bench/ingest.hpp"
#include "bench/interval.hpp"
#include "bench/machine.hpp"
#include "bench/plausibility.hpp"

namespace popper::bench {

int next_trial(const BenchTable& t) {
  int next = 0;
  for (const auto& r : t.rows)
    for (std::size_t i = 0; i < r.samples.size(); ++i) next = std::max(next, r.trial_of(i) + 1);
  return next;
}

void add_samples(BenchTable& table, const BenchTable& extra) {
  std::vector<BenchRow> known;
  for (const auto& r : extra.rows)
    if (table.find(r.key)) known.push_back(r);
  merge_rows(table.rows, known);
  mark_invalid_vendor_rows(table);  // judged on the samples the rows now hold
}

namespace {

// What replicating the failing groups found, by "<contract>/<claim>@<group>".
struct Replicates {
  std::set<std::string> tried;                // measured again (once each, whatever came of it)
  std::map<std::string, std::string> figure;  // replicated: the replicate's own figure for the group
  std::set<std::string> confirmed;            // replicated and failed again
  std::string skipped;                        // why some were not replicated
};

std::string replicate_key(const ClaimResult& c, const ClaimResult::Failing& g) {
  return c.contract + "/" + c.id + "@" + g.name();
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Measures the groups of not-met claims that were never replicated, judges
// the claims on the new trials alone, and adds the trials to `table`.
// Returns whether it measured anything.
bool replicate_failures(BenchTable& table, const FamilyDescriptor& fam, const PeakResult* peak,
                        const ClaimRemeasure& how, const std::vector<ClaimResult>& claims, Replicates& seen,
                        int& next) {
  std::set<BenchKey> rows;
  std::vector<std::pair<const ClaimResult*, const ClaimResult::Failing*>> todo;
  for (const auto& c : claims)
    if (c.verdict == ClaimVerdict::NotMet && !c.failed_rows)
      for (const auto& g : c.failing_groups)
        if (!seen.tried.count(replicate_key(c, g)))
          todo.emplace_back(&c, &g), rows.insert(g.rows.begin(), g.rows.end());
  if (todo.empty()) return false;
  if (seconds_since(how.started) > how.budget_seconds) {
    seen.skipped = "not replicated: the budget was spent";
    return false;
  }
  int trials = kReplicateTrials;
  for (const auto& r : table.rows)
    if (rows.count(r.key))
      trials = std::max(trials, static_cast<int>(std::set<int>(r.trials.begin(), r.trials.end()).size()));
  if (how.progress)
    how.progress("claims not met on " + std::to_string(todo.size()) + " group(s): measuring their " +
                 std::to_string(rows.size()) + " row(s) again in " + std::to_string(trials) +
                 " new trials; a verdict stands only if they fail again");
  BenchTable again = how.measure({rows.begin(), rows.end()}, next, trials);
  next += trials;
  apply_peaks(again, fam, peak);
  const auto rejudged = how.judge(again, kLookAlpha);
  for (const auto& [c, g] : todo) {
    const std::string key = replicate_key(*c, *g);
    seen.tried.insert(key);
    for (const auto& r : rejudged)
      if (r.contract == c->contract && r.id == c->id) {
        if (const auto f = r.figures.find(g->name()); f != r.figures.end()) seen.figure[key] = f->second;
        for (const auto& h : r.failing_groups)
          if (h.name() == g->name()) seen.confirmed.insert(key);
      }
    // A replicate that measured nothing of the group says nothing against the verdict.
    if (!seen.figure.count(key)) seen.skipped = "not replicated: its replicate did not measure " + g->name();
  }
  add_samples(table, again);
  apply_peaks(table, fam, peak);
  return true;
}

// A not-met claim none of whose failing groups failed again in its replicate
// is inconclusive; one that did says so.
void apply_replicates(std::vector<ClaimResult>& claims, const Replicates& seen) {
  for (auto& c : claims) {
    if (c.verdict != ClaimVerdict::NotMet || c.failed_rows || c.failing_groups.empty()) continue;
    std::string confirmed, unconfirmed;
    bool all_replicated = true;
    for (const auto& g : c.failing_groups) {
      const std::string key = replicate_key(c, g);
      const auto it = seen.figure.find(key);
      const std::string text = it == seen.figure.end() ? "" : g.name() + " read " + it->second + " in its replicate";
      if (it == seen.figure.end()) all_replicated = false;
      else if (seen.confirmed.count(key) && confirmed.empty()) confirmed = text;
      else if (!seen.confirmed.count(key) && unconfirmed.empty()) unconfirmed = text;
    }
    if (!confirmed.empty()) {
      c.detail += "; reproduced: " + confirmed;
    } else if (all_replicated) {
      c.verdict = ClaimVerdict::Inconclusive;
      c.detail = "not reproduced (" + unconfirmed + "; two measurements of one build disagree): " + c.detail;
    } else if (!seen.skipped.empty()) {
      c.detail += "; " + seen.skipped;
    }
  }
}

}  // namespace

std::vector<ClaimResult> judge_claims_remeasuring(BenchTable& table, const FamilyDescriptor& fam,
                                                  const PeakResult* peak, const ClaimRemeasure& how) {
  Replicates seen;
  int next = how.first_trial;
  auto judge = [&] {
    auto claims = how.judge(table, kLookAlpha);
    if (replicate_failures(table, fam, peak, how, claims, seen, next)) claims = how.judge(table, kLookAlpha);
    apply_replicates(claims, seen);
    return claims;
  };
  auto claims = judge();
  const int fewest = sign_test_trials(0, kLookAlpha);
  for (int look = 2; look <= kClaimLooks; ++look) {
    // The rows to measure, by the trials that decide the group and the
    // trials it lacks (both rounded up to a multiple of 4): each group gets
    // about its own count, in a few runs. The groups nearest a decision run
    // first: where the budget ends within a round, they are the ones it decided.
    const auto up4 = [](double n) { return 4 * static_cast<int>(std::ceil(n / 4)); };
    std::map<std::pair<int, int>, std::set<BenchKey>> batches;
    std::set<std::string> again;   // groups
    std::set<std::string> beyond;  // a claim's groups: one group may be beyond for one claim only
    for (const auto& c : claims)
      if (c.verdict == ClaimVerdict::Inconclusive)
        for (const auto& g : c.inconclusive_groups) {
          // A group whose estimate is beyond max_trials is left only once it
          // has kWideGroupTrials: an estimate from fewer trials of a wide
          // group is noise. Until then it is measured toward them.
          const bool out_of_reach = g.trials_to_decide > how.max_trials;
          if ((out_of_reach && g.trials >= kWideGroupTrials) || g.rows.empty()) {
            beyond.insert(c.id + " " + g.name());
            continue;
          }
          again.insert(g.name());
          const double goal =
              std::min({out_of_reach ? kWideGroupTrials : kRoundMargin * g.trials_to_decide,
                        static_cast<double>(how.max_trials), kRoundGrowth * std::max(g.trials, fewest)});
          const double kept = g.trials > 0 ? static_cast<double>(g.trials) / (g.trials + g.set_aside) : 1.0;
          int lacking = static_cast<int>(std::ceil((goal - g.trials) / kept));
          lacking = lacking <= 2 ? 2 : std::min(up4(lacking), how.max_trials);
          batches[{up4(g.trials_to_decide), lacking}].insert(g.rows.begin(), g.rows.end());
        }
    if (!beyond.empty() && how.progress)
      how.progress(
          fmt::format("left inconclusive, as {} trials cannot decide them (their intervals are too wide "
                      "about the threshold): {}",
                      how.max_trials, fmt::join(beyond, ", ")));
    const double spent = seconds_since(how.started);
    if (spent > how.budget_seconds || again.empty()) break;
    std::vector<std::string> plan;
    for (const auto& [order, rows] : batches)
      plan.push_back(fmt::format("{} row(s) in {} trials", rows.size(), order.second));
    if (how.progress)
      how.progress(
          fmt::format("claims inconclusive on {} group(s): measuring {}, look {} of {} ({:.0f} of {:.0f} s of "
                      "budget spent)",
                      again.size(), fmt::join(plan, ", "), look, kClaimLooks, spent, how.budget_seconds));
    for (const auto& [order, rows] : batches) {
      if (seconds_since(how.started) > how.budget_seconds) break;
      add_samples(table, how.measure({rows.begin(), rows.end()}, next, order.second));
      next += order.second;
    }
    apply_peaks(table, fam, peak);
    claims = judge();
  }
  return claims;
}

Environment rerun_environment(const BenchTable& baseline, const BenchTable& current) {
  auto env = baseline.environment();
  std::erase_if(env, [](const auto& kv) { return kv.first == "POPPER_BENCH_INJECT_SLOWDOWN"; });
  env.emplace_back("POPPER_BENCH_INJECT_SLOWDOWN", current.meta("injected_slowdown").value_or(""));
  return env;
}

namespace {

// `trials` trials of the rows `keys` on `build_dir` under `env` (ceiling
// configurations unscreened), numbered from first_trial; the rows of the
// run's cross product that were not asked for are dropped.
std::vector<BenchRow> measure_rows(const std::string& source_dir, const std::string& build_dir, const Environment& env,
                                   const std::vector<BenchKey>& keys, int trials, int first_trial,
                                   const std::function<void(const std::string&)>& progress) {
  CompareOptions co;
  co.source_dir = source_dir;
  co.build_dir = build_dir;
  restrict_to_rows(co, keys);
  co.trials = trials;
  co.first_trial = first_trial;
  co.env = env;
  co.blas_core_types = false;
  co.progress = progress;
  const auto t = run_compare(co, load_family(source_dir, keys.front().family, build_dir), probe_machine(), nullptr);
  std::vector<BenchRow> out;
  for (const auto& r : t.rows)
    if (std::find(keys.begin(), keys.end(), r.key) != keys.end()) out.push_back(r);
  return out;
}

}  // namespace

Remeasure rerun_measure(const std::string& source_dir, const std::string& build_dir, const Environment& env,
                        int first_trial, const std::function<void(const std::string&)>& progress) {
  return [=, next = first_trial](const std::vector<BenchKey>& keys) mutable -> std::optional<std::vector<BenchRow>> {
    if (keys.empty()) return std::vector<BenchRow>{};
    auto out = measure_rows(source_dir, build_dir, env, keys, 2, next, progress);
    next += 2;
    return out;
  };
}

Interleave interleaved_measure(const std::string& source_dir, const std::string& build_dir,
                               const Environment& current_env, const std::string& base_build,
                               const Environment& base_env, int first_trial,
                               const std::function<void(const std::string&)>& progress) {
  Interleave il;
  il.measure = [=, next = first_trial](const std::vector<BenchKey>& keys,
                                       bool base_side) mutable -> std::optional<std::vector<BenchRow>> {
    if (keys.empty()) return std::vector<BenchRow>{};
    if (progress)
      progress(std::string("interleaved trial on ") + (base_side ? "the baseline's side" : "this build") + ": " +
               std::to_string(keys.size()) + " row(s)");
    try {  // one trial id count for both sides: the ids give the order the trials ran in
      return measure_rows(source_dir, base_side ? base_build : build_dir, base_side ? base_env : current_env, keys, 1,
                          next++, nullptr);
    } catch (const std::exception& e) {
      if (progress) progress(std::string("interleaved trial failed: ") + e.what());
      return std::nullopt;
    }
  };
  return il;
}

std::optional<std::string> baseline_build(const BenchTable& baseline, const BenchTable& current,
                                          const BaselineBuildOptions& opt, std::string& label, std::string& why) {
  const std::string commit = baseline.meta("commit").value_or("unknown");
  if (commit == "unknown" || commit.empty()) {
    why = "the baseline does not say which commit it measured";
    return std::nullopt;
  }
  if (commit.ends_with("-dirty")) {
    why = "the baseline was measured with uncommitted changes (commit " + commit + "), which cannot be rebuilt";
    return std::nullopt;
  }
  const std::string git = "git -C '" + opt.source_dir + "' ";
  if (current.meta("commit").value_or("") == commit && capture_command(git + "rev-parse HEAD") == commit &&
      capture_command(git + "status --porcelain --untracked-files=no").empty()) {
    label = "commit " + commit.substr(0, 12) + ", this build";
    return opt.build_dir;
  }
  std::set<std::string> families;
  for (const auto& r : baseline.rows) families.insert(r.key.family);
  RefBuildOptions rb;
  rb.source_dir = opt.source_dir;
  rb.build_dir = opt.build_dir;
  rb.ref = commit;
  rb.families.assign(families.begin(), families.end());
  rb.jobs = opt.jobs;
  rb.progress = opt.progress;
  rb.same_options = true;
  try {
    const std::string dir = build_reference(rb);
    label = "commit " + commit.substr(0, 12) + ", built in " + dir;
    return dir;
  } catch (const std::exception& e) {
    why = std::string("the baseline's commit could not be built here: ") + e.what();
    return std::nullopt;
  }
}

}  // namespace popper::bench
