// What `bench compare` and `bench check` decide around a run: how many trials
// (plan.hpp), what noise they saw, how re-measured samples join a table
// (remeasure.hpp), the ABBA alternation of --against (duet.hpp) and saving a
// baseline (baseline.hpp).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <tuple>

#include "bench/baseline.hpp"
#include "bench/duet.hpp"
#include "bench/interval.hpp"
#include "bench/machine.hpp"
#include "bench/plan.hpp"
#include "bench/remeasure.hpp"
#include "popper/error.hpp"

namespace pb = popper::bench;
namespace fs = std::filesystem;

namespace {

pb::BenchRow row(const std::string& tier, const std::string& shape, std::vector<double> samples,
                 std::vector<int> trials) {
  pb::BenchRow r;
  r.key = {"gemm", pb::tier_from(tier, "test"), tier == "ceiling" ? "openblas:Haswell" : "cpu:avx2", shape, "f32", 1,
           "warm"};
  r.samples = std::move(samples);
  r.trials = std::move(trials);
  r.work_per_iter = 1e6;
  r.verdict = pb::Verdict::parse("verified");
  return r;
}

pb::CompareOptions gemm_options() {
  pb::CompareOptions co;
  co.threads = {1, 2};
  co.precisions = {"f32", "f64"};
  co.tiers = {pb::Tier::Ceiling, pb::Tier::Wrapped, pb::Tier::Hand};
  co.min_time = 0.2;
  return co;
}

pb::TrialRequest request(const std::string& reps, const std::string& trials, double budget = 1800,
                         const std::string& noise_csv = "") {
  pb::TrialRequest r;
  r.reps = reps;
  r.trials = trials;
  r.budget = budget;
  r.noise_csv = noise_csv;
  return r;
}

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("popper-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(BenchPlan, CountsAreAutoOrOneToAThousandAndNeverOne) {
  const auto co = gemm_options();
  for (const char* bad : {"x", "0", "1001", "3x"}) {
    EXPECT_THROW(pb::plan_trials(co, request("auto", bad)), popper::Error) << bad;
    EXPECT_THROW(pb::plan_trials(co, request(bad, "auto")), popper::Error) << bad;
  }
  EXPECT_THROW(pb::plan_trials(co, request("1", "auto")), popper::Error);
  EXPECT_THROW(pb::plan_trials(co, request("auto", "1")), popper::Error);
}

TEST(BenchPlan, AutoTrialsComeFromPowerAndTheBudgetCapsThem) {
  auto co = gemm_options();
  const int needed = pb::trials_for_power(0.03, 1.2, 1.1, pb::planning_alpha(co), 0.8);
  const auto plan = pb::plan_trials(co, request("auto", "auto", 1e9));
  EXPECT_EQ(plan.needed, needed);
  EXPECT_EQ(plan.trials, needed);
  // In turns a process runs short repetitions, each beside the other side's;
  // alone, the noise is between processes and the time buys trials.
  EXPECT_EQ(plan.reps_per_trial, pb::kRepetitionsInTurns);
  co.turns = false;
  EXPECT_EQ(pb::plan_trials(co, request("auto", "auto", 1e9)).reps_per_trial, 1);
  co.turns = true;
  EXPECT_EQ(plan.top_up_trials, (needed + 2) / 3);
  EXPECT_DOUBLE_EQ(plan.top_up_alpha, pb::planning_alpha(co));
  EXPECT_DOUBLE_EQ(plan.sigma, 0.03);
  EXPECT_EQ(plan.budget_seconds, 1e9);
  EXPECT_EQ(pb::describe(plan).find("warning"), std::string::npos);

  const auto capped = pb::plan_trials(co, request("auto", "auto", 1));
  EXPECT_EQ(capped.trials, 2);  // never fewer than two
  EXPECT_NE(pb::describe(capped).find("warning: 2 trials are fewer than the"), std::string::npos);
  pb::apply(capped, co);
  EXPECT_EQ(co.trials, 2);
  EXPECT_EQ(co.budget_seconds, 1);
}

TEST(BenchPlan, GivenCountsAreKeptAndRepsSplitOverTrials) {
  const auto co = gemm_options();
  const auto trials = pb::plan_trials(co, request("auto", "4", 1));
  EXPECT_EQ(trials.trials, 4);
  EXPECT_EQ(trials.budget_seconds, 0);  // a given count is not cut by the budget
  const auto reps = pb::plan_trials(co, request("9", "auto"));
  EXPECT_EQ(reps.trials, std::min(9, std::max(reps.needed, 2)));
  EXPECT_EQ(reps.reps_per_trial, (9 + reps.trials - 1) / reps.trials);
}

TEST(BenchPlan, NoiseComesFromTheLoudestRowOfAnEarlierRun) {
  const auto dir = temp_dir("plan-noise");
  pb::BenchTable earlier;
  earlier.rows = {row("hand", "a", {1.0, 1.0, 1.2, 1.2}, {0, 0, 1, 1}), row("hand", "b", {1, 1, 1, 1}, {0, 0, 1, 1})};
  const std::string csv = (dir / "gemm.csv").string();
  pb::write_bench_csv(csv, earlier);
  const auto plan = pb::plan_trials(gemm_options(), request("auto", "auto", 1800, csv));
  const auto& loud = earlier.rows[0];
  EXPECT_DOUBLE_EQ(plan.sigma, pb::between_trial_log_sd({&loud.samples, &loud.trials}));
  EXPECT_EQ(plan.sigma_from, csv);
  EXPECT_EQ(pb::noise_source("", dir.string(), "fp", "gemm"), "");
  EXPECT_EQ(pb::noise_source("given.csv", dir.string(), "fp", "gemm"), "given.csv");
  fs::create_directories(dir / "baselines" / "fp");
  fs::copy_file(csv, dir / "baselines" / "fp" / "gemm.csv");
  EXPECT_EQ(pb::noise_source("", dir.string(), "fp", "gemm"), dir.string() + "/baselines/fp/gemm.csv");
  fs::remove_all(dir);
}

TEST(BenchPlan, NoiseIsRecordedFromTheRowsAChangeCanMove) {
  auto co = gemm_options();
  co.trials = 2;
  pb::BenchTable t;
  t.rows = {row("ceiling", "a", {1, 2}, {0, 1})};
  EXPECT_FALSE(pb::record_noise(t, co, 0.03));  // the vendor's rows say nothing about this repository's
  t.rows.push_back(row("hand", "a", {1.0, 1.1}, {0, 1}));
  EXPECT_TRUE(pb::record_noise(t, co, 0.03));
  EXPECT_NE(t.meta("noise_between_trials").value_or("").find("over 1 rows"), std::string::npos);
  EXPECT_NE(t.meta("detectable_slowdown").value_or("").find("(2 trials a side"), std::string::npos);
}

TEST(BenchRemeasure, NewSamplesJoinTheRowsTheTableHolds) {
  pb::BenchTable t;
  t.rows = {row("hand", "a", {1.0, 1.1}, {0, 1})};
  EXPECT_EQ(pb::next_trial(t), 2);
  pb::BenchTable extra;
  extra.rows = {row("hand", "a", {1.2}, {2}), row("hand", "other", {9}, {2})};
  extra.rows[0].verdict = pb::Verdict::parse("incorrect: max err 1");
  pb::add_samples(t, extra);
  ASSERT_EQ(t.rows.size(), 1u);  // a row the table does not hold stays out
  EXPECT_EQ(t.rows[0].samples, (std::vector<double>{1.0, 1.1, 1.2}));
  EXPECT_EQ(t.rows[0].trials, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(t.rows[0].verdict.label, "incorrect: max err 1");  // a wrong answer while re-measuring is kept
  EXPECT_EQ(pb::next_trial(t), 3);
}

// Rule: a round measures the rows the inconclusive groups were judged on, in
// kRoundMargin times the trials their estimate still lacks (at least 2), while
// the budget lasts; every look is judged at kLookAlpha.
TEST(BenchRemeasure, InconclusiveClaimsAreMeasuredAgainWhileTheBudgetLasts) {
  pb::BenchTable t;
  t.rows = {row("hand", "a", {1.0, 1.1}, {0, 1}), row("ceiling", "a", {1.0, 1.0}, {0, 1}),
            row("hand", "b", {1.0, 1.0}, {0, 1})};
  pb::FamilyDescriptor fam;
  fam.family = "gemm";
  std::vector<std::tuple<std::vector<pb::BenchKey>, int, int>> measured;
  pb::ClaimRemeasure how;
  how.judge = [](const pb::BenchTable& table, double alpha) {
    EXPECT_EQ(alpha, pb::kLookAlpha);
    pb::ClaimResult c;
    c.verdict = table.rows[0].samples.size() < 4 ? pb::ClaimVerdict::Inconclusive : pb::ClaimVerdict::Met;
    if (c.verdict == pb::ClaimVerdict::Inconclusive)
      c.inconclusive_groups = {{"a", "f32", 1, 2, 3, {table.rows[0].key, table.rows[1].key}}};
    return std::vector<pb::ClaimResult>{c};
  };
  how.measure = [&](const std::vector<pb::BenchKey>& rows, int first, int trials) {
    measured.emplace_back(rows, first, trials);
    pb::BenchTable more;
    more.rows = {row("hand", "a", {1.0, 1.0}, {first, first + 1}), row("ceiling", "a", {1.0, 1.0}, {first, first + 1})};
    return more;
  };
  how.first_trial = 2;
  how.budget_seconds = 1e9;
  how.started = std::chrono::steady_clock::now();
  const auto claims = pb::judge_claims_remeasuring(t, fam, nullptr, how);
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_EQ(std::get<0>(measured[0]), (std::vector<pb::BenchKey>{t.rows[1].key, t.rows[0].key}))
      << "the group's two rows, not its shape's every row";
  EXPECT_EQ(std::get<1>(measured[0]), 2);
  EXPECT_EQ(std::get<2>(measured[0]), 4) << "1.5 x 3 trials to decide, less the 2 it had, to a multiple of 4";
  EXPECT_EQ(t.rows[0].trials, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(t.rows[2].trials, (std::vector<int>{0, 1}));
  EXPECT_EQ(claims.at(0).verdict, pb::ClaimVerdict::Met);

  measured.clear();
  how.budget_seconds = 0;
  how.started = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  pb::BenchTable spent;
  spent.rows = {row("hand", "a", {1.0}, {0}), row("ceiling", "a", {1.0}, {0})};
  EXPECT_EQ(pb::judge_claims_remeasuring(spent, fam, nullptr, how).at(0).verdict, pb::ClaimVerdict::Inconclusive);
  EXPECT_TRUE(measured.empty());
}

// Rule: a group is measured again while its estimate is within max_trials,
// or while it has fewer than kWideGroupTrials (its estimate from so few is
// noise), toward those; every round, the last too, adds 1.5 times the trials
// the estimate lacks, more when trials were set aside, never past max_trials
// nor past kRoundGrowth times the trials it has (8 at least: the fewest a look
// at 0.05 / 6 decides on); there are at most kClaimLooks - 1 rounds.
TEST(BenchRemeasure, OnlyWhatMoreTrialsCanDecideIsMeasuredAgain) {
  static_assert(pb::kClaimLooks == 6, "the rounds below are five");
  ASSERT_EQ(pb::sign_test_trials(0, pb::kLookAlpha), 8) << "the fewest trials a look decides on";
  pb::FamilyDescriptor fam;
  fam.family = "gemm";
  std::vector<int> rounds;  // the trials each round asked for
  pb::ClaimRemeasure how;
  how.measure = [&](const std::vector<pb::BenchKey>&, int, int trials) {
    rounds.push_back(trials);
    return pb::BenchTable{};
  };
  how.budget_seconds = 1e9;
  how.started = std::chrono::steady_clock::now();
  pb::BenchTable t;
  t.rows = {row("hand", "a", {1.0, 1.1}, {0, 1})};
  auto judged = [&](pb::ClaimVerdict verdict, double to_decide, int set_aside = 0, int trials = 6) {
    return [=, key = t.rows[0].key](const pb::BenchTable&, double) {
      pb::ClaimResult c;
      c.verdict = verdict;
      c.inconclusive_groups = {{"a", "f32", 1, trials, to_decide, {key}, set_aside}};
      return std::vector<pb::ClaimResult>{c};
    };
  };
  const int wide = static_cast<int>(pb::kWideGroupTrials);
  how.judge = judged(pb::ClaimVerdict::Inconclusive, how.max_trials + 1, 0, wide);  // beyond what a group may take
  EXPECT_EQ(pb::judge_claims_remeasuring(t, fam, nullptr, how).at(0).verdict, pb::ClaimVerdict::Inconclusive);
  EXPECT_TRUE(rounds.empty()) << "beyond max_trials on kWideGroupTrials: left";
  how.judge = judged(pb::ClaimVerdict::Inconclusive, how.max_trials + 1, 0, wide - 1);
  pb::judge_claims_remeasuring(t, fam, nullptr, how);
  EXPECT_EQ(rounds, (std::vector<int>{2, 2, 2, 2, 2})) << "one short of kWideGroupTrials: measured, at least 2";
  rounds.clear();
  how.judge = judged(pb::ClaimVerdict::Inconclusive, 1e9);  // on 6 trials
  pb::judge_claims_remeasuring(t, fam, nullptr, how);
  EXPECT_EQ(rounds, (std::vector<int>{28, 28, 28, 28, 28})) << "toward 96, at most 4 x 8 (not 4 x 6): 26, rounded up";
  rounds.clear();
  how.judge = judged(pb::ClaimVerdict::NotMet, 7);  // a failing group already decided the claim
  pb::judge_claims_remeasuring(t, fam, nullptr, how);
  EXPECT_TRUE(rounds.empty());
  how.judge = judged(pb::ClaimVerdict::Inconclusive, 9.2);
  pb::judge_claims_remeasuring(t, fam, nullptr, how);
  EXPECT_EQ(rounds, (std::vector<int>{8, 8, 8, 8, 8})) << "1.5 x 9.2 less the 6 it had, rounded up, the last round too";
  rounds.clear();
  how.judge = judged(pb::ClaimVerdict::Inconclusive, 9.2, 6);
  pb::judge_claims_remeasuring(t, fam, nullptr, how);
  EXPECT_EQ(rounds, (std::vector<int>{16, 16, 16, 16, 16})) << "half its trials set aside: twice as many";
  rounds.clear();
  how.judge = judged(pb::ClaimVerdict::Inconclusive, 200, 0, 8);  // a group 1% under a 2% threshold, on 8 trials
  pb::judge_claims_remeasuring(t, fam, nullptr, how);
  EXPECT_EQ(rounds, (std::vector<int>{24, 24, 24, 24, 24})) << "1.5 x 200, but at most 4 x the 8 it has";
  rounds.clear();
  how.judge = judged(pb::ClaimVerdict::Inconclusive, 200, 0, 96);
  pb::judge_claims_remeasuring(t, fam, nullptr, how);
  EXPECT_EQ(rounds, (std::vector<int>{204, 204, 204, 204, 204})) << "1.5 x 200 less the 96 it had";
  rounds.clear();
  how.judge = judged(pb::ClaimVerdict::Inconclusive, 300, 96, 96);
  pb::judge_claims_remeasuring(t, fam, nullptr, how);
  EXPECT_EQ(rounds, (std::vector<int>{384, 384, 384, 384, 384}))
      << "to max_trials, twice the 288 it lacks: at most max_trials";
  // One group beyond for one claim and measured for another: the log names the first claim's.
  std::vector<std::string> said;
  how.progress = [&](const std::string& s) { said.push_back(s); };
  how.judge = [key = t.rows[0].key](const pb::BenchTable&, double) {
    std::vector<pb::ClaimResult> claims(2);
    claims[0].id = "BENCH-GEMM-001", claims[1].id = "BENCH-GEMM-002";
    claims[0].verdict = claims[1].verdict = pb::ClaimVerdict::Inconclusive;
    claims[0].inconclusive_groups = {{"a", "f32", 1, 6, 9.2, {key}, 0}};
    claims[1].inconclusive_groups = {{"a", "f32", 1, 96, 1000, {key}, 0}};
    return claims;
  };
  pb::judge_claims_remeasuring(t, fam, nullptr, how);
  EXPECT_TRUE(std::any_of(said.begin(), said.end(), [](const std::string& s) {
    return s.find("cannot decide") != std::string::npos &&
           s.find("BENCH-GEMM-002 a/f32/threads:1") != std::string::npos;
  })) << (said.empty() ? "" : said.front());
}

// Rule: groups that lack different numbers of trials are measured in
// separate runs, each of its own rows and about the trials it lacks, so a
// group near its decision does not run as many trials as the farthest; the
// groups nearest a decision run first, in the last round too: a budget that
// ends within it has decided those.
TEST(BenchRemeasure, EachGroupIsMeasuredInAboutTheTrialsItLacksNearestFirst) {
  static_assert(pb::kClaimLooks == 6, "the rounds below are five");
  pb::FamilyDescriptor fam;
  fam.family = "gemm";
  pb::BenchTable t;
  t.rows = {row("hand", "a", {1.0}, {0}), row("hand", "b", {1.0}, {0})};
  std::vector<std::pair<std::string, int>> measured;  // shape, trials
  pb::ClaimRemeasure how;
  how.measure = [&](const std::vector<pb::BenchKey>& rows, int, int trials) {
    for (const auto& k : rows) measured.emplace_back(k.shape, trials);
    return pb::BenchTable{};
  };
  how.judge = [&](const pb::BenchTable&, double) {
    pb::ClaimResult c;
    c.verdict = pb::ClaimVerdict::Inconclusive;
    c.inconclusive_groups = {{"a", "f32", 1, 6, 40, {t.rows[0].key}, 0}, {"b", "f32", 1, 6, 10, {t.rows[1].key}, 0}};
    return std::vector<pb::ClaimResult>{c};
  };
  how.budget_seconds = 1e9;
  how.started = std::chrono::steady_clock::now();
  pb::judge_claims_remeasuring(t, fam, nullptr, how);
  using Runs = std::vector<std::pair<std::string, int>>;
  EXPECT_EQ(measured, (Runs{{"b", 12},
                            {"a", 28},
                            {"b", 12},
                            {"a", 28},
                            {"b", 12},
                            {"a", 28},
                            {"b", 12},
                            {"a", 28},
                            {"b", 12},
                            {"a", 28}}))
      << "1.5 x 10 - 6 to 12 and 4 x 8 - 6 to 28; b (10 trials decide it) before a (40), in the last round too";
}

// A claim that fails while any sample of shape "a" is over 1.5: a replicate
// of fast samples, judged alone, does not fail it; pooled, the old ones still do.
std::vector<pb::ClaimResult> slow_fails(const pb::BenchTable& table, double) {
  pb::ClaimResult c;
  c.contract = "gemm-v1", c.id = "BENCH-X", c.family = "gemm", c.verdict = pb::ClaimVerdict::Met;
  if (table.rows.empty()) {
    c.verdict = pb::ClaimVerdict::NotMeasured;
    return {c};
  }
  const auto& s = table.rows.at(0).samples;
  c.figures["a/f32/threads:1"] = std::to_string(*std::max_element(s.begin(), s.end()));
  if (*std::max_element(s.begin(), s.end()) > 1.5) {
    c.verdict = pb::ClaimVerdict::NotMet;
    c.failing_groups = {{"a", "f32", 1, {table.rows[0].key}}};
  }
  return {c};
}

TEST(BenchRemeasure, ANotMetClaimStandsOnlyIfItsReplicateFailsToo) {
  pb::FamilyDescriptor fam;
  fam.family = "gemm";
  std::vector<std::pair<std::vector<pb::BenchKey>, int>> measured;
  double replicate_sample = 1.0;
  pb::ClaimRemeasure how;
  how.judge = slow_fails;
  how.measure = [&](const std::vector<pb::BenchKey>& rows, int first, int trials) {
    measured.emplace_back(rows, trials);
    pb::BenchTable more;
    std::vector<int> ids(static_cast<std::size_t>(trials));
    std::iota(ids.begin(), ids.end(), first);
    more.rows = {row("hand", "a", std::vector<double>(ids.size(), replicate_sample), ids)};
    return more;
  };
  how.budget_seconds = 1e9;
  how.started = std::chrono::steady_clock::now();
  std::vector<double> slow(6, 2.0);
  std::vector<int> six{0, 1, 2, 3, 4, 5};

  pb::BenchTable once;  // a disturbance that lasted one run
  std::vector<int> ten(10);
  std::iota(ten.begin(), ten.end(), 0);
  once.rows = {row("hand", "a", std::vector<double>(10, 2.0), ten)};
  how.first_trial = 10;
  auto c = pb::judge_claims_remeasuring(once, fam, nullptr, how).at(0);
  ASSERT_EQ(measured.size(), 1u);  // once, as many trials as the failing group had
  EXPECT_EQ(measured[0], (std::pair<std::vector<pb::BenchKey>, int>{{once.rows[0].key}, 10}));
  EXPECT_EQ(once.rows[0].samples.size(), 20u);  // the replicate's trials join the table
  EXPECT_EQ(c.verdict, pb::ClaimVerdict::Inconclusive);
  EXPECT_NE(c.detail.find("not reproduced (a/f32/threads:1 read 1.0"), std::string::npos) << c.detail;

  measured.clear();
  replicate_sample = 1.8;  // a real slowdown fails again
  pb::BenchTable twice;
  twice.rows = {row("hand", "a", {2.0, 2.0}, {0, 1})};
  how.first_trial = 2;
  c = pb::judge_claims_remeasuring(twice, fam, nullptr, how).at(0);
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_EQ(measured[0].second, pb::kReplicateTrials);  // never fewer
  EXPECT_GE(pb::kReplicateTrials, pb::sign_test_trials(0, pb::kLookAlpha)) << "a replicate too short is never judged";
  EXPECT_EQ(c.verdict, pb::ClaimVerdict::NotMet);
  EXPECT_NE(c.detail.find("reproduced: a/f32/threads:1 read 1.8"), std::string::npos) << c.detail;

  measured.clear();  // a replicate that measured nothing leaves the verdict standing
  const auto measure = how.measure;
  how.measure = [&](const std::vector<pb::BenchKey>& rows, int, int trials) {
    measured.emplace_back(rows, trials);
    return pb::BenchTable{};
  };
  pb::BenchTable lost;
  lost.rows = {row("hand", "a", slow, six)};
  c = pb::judge_claims_remeasuring(lost, fam, nullptr, how).at(0);
  EXPECT_EQ(measured.size(), 1u);  // once, not again every round
  EXPECT_EQ(c.verdict, pb::ClaimVerdict::NotMet);
  EXPECT_NE(c.detail.find("not replicated: its replicate did not measure a/f32/threads:1"), std::string::npos)
      << c.detail;
  how.measure = measure;

  measured.clear();  // a wrong answer is not measured again
  how.judge = [](const pb::BenchTable& t, double alpha) {
    auto claims = slow_fails(t, alpha);
    claims[0].failed_rows = true;
    return claims;
  };
  pb::BenchTable wrong;
  wrong.rows = {row("hand", "a", slow, six)};
  EXPECT_EQ(pb::judge_claims_remeasuring(wrong, fam, nullptr, how).at(0).verdict, pb::ClaimVerdict::NotMet);
  EXPECT_TRUE(measured.empty());

  how.judge = slow_fails;  // no budget left: the verdict stands, and says so
  how.budget_seconds = 0;
  how.started = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  pb::BenchTable late;
  late.rows = {row("hand", "a", slow, six)};
  c = pb::judge_claims_remeasuring(late, fam, nullptr, how).at(0);
  EXPECT_TRUE(measured.empty());
  EXPECT_EQ(c.verdict, pb::ClaimVerdict::NotMet);
  EXPECT_NE(c.detail.find("not replicated: the budget was spent"), std::string::npos) << c.detail;
}

TEST(BenchRemeasure, RerunsRunUnderTheBaselinesEnvironmentAndTheCurrentsSlowdown) {
  pb::BenchTable base, cur;
  base.set_environment({{"OPENBLAS_CORETYPE", "Haswell"}, {"POPPER_BENCH_INJECT_SLOWDOWN", "1.25"}});
  EXPECT_EQ(pb::rerun_environment(base, cur),
            (pb::Environment{{"OPENBLAS_CORETYPE", "Haswell"}, {"POPPER_BENCH_INJECT_SLOWDOWN", ""}}));
  cur.set_meta("injected_slowdown", "1.1");
  EXPECT_EQ(pb::rerun_environment(base, cur),
            (pb::Environment{{"OPENBLAS_CORETYPE", "Haswell"}, {"POPPER_BENCH_INJECT_SLOWDOWN", "1.1"}}));
}

// The baseline's side of check --rerun's interleaving: this build only for a
// check of the code against itself (both runs at the commit the tree is at,
// unmodified); a commit the tree has moved from is built; a baseline whose
// commit is unknown, dirty or unbuildable has none, and the reason says why.
TEST(BenchRemeasure, TheBaselinesSideIsThisBuildOnlyForACheckOfTheCodeAgainstItself) {
  const auto repo = temp_dir("baseline-build");
  const std::string git = "git -C '" + repo.string() + "' -c user.name=t -c user.email=t@t ";
  ASSERT_EQ(std::system((git + "init -q && echo a > '" + (repo / "f").string() + "' && " + git + "add f && " + git +
                         "commit -qm one")
                            .c_str()),
            0);
  const std::string head = pb::capture_command("git -C '" + repo.string() + "' rev-parse HEAD");
  ASSERT_EQ(head.size(), 40u);
  pb::BaselineBuildOptions opt{repo.string(), (repo / "build").string(), 1, nullptr};
  pb::BenchTable base, cur;
  std::string label, why;
  EXPECT_FALSE(pb::baseline_build(base, cur, opt, label, why));
  EXPECT_NE(why.find("does not say which commit"), std::string::npos) << why;
  base.set_meta("commit", head + "-dirty");
  EXPECT_FALSE(pb::baseline_build(base, cur, opt, label, why));
  EXPECT_NE(why.find("uncommitted"), std::string::npos) << why;
  base.set_meta("commit", head);
  cur.set_meta("commit", head);
  EXPECT_EQ(pb::baseline_build(base, cur, opt, label, why), opt.build_dir);
  EXPECT_NE(label.find("this build"), std::string::npos) << label;
  // The tree changed since: the baseline's commit must be built (this one has no CMakeLists.txt).
  std::ofstream(repo / "f") << "b\n";
  why.clear();
  EXPECT_FALSE(pb::baseline_build(base, cur, opt, label, why));
  EXPECT_NE(why.find("could not be built"), std::string::npos) << why;
  EXPECT_TRUE(fs::exists(repo / "build" / "check-ref" / head / "src" / "f")) << "the commit was extracted to build";
  fs::remove_all(repo);
}

TEST(BenchDuet, TrialsAlternateAbbaAndEachSideKeepsItsTrials) {
  std::vector<std::pair<bool, int>> order;
  const auto d = pb::alternate(4, [&](bool current, int trial) {
    order.emplace_back(current, trial);
    pb::BenchTable one;
    one.set_meta("side", current ? "current" : "base");
    one.rows = {row("hand", "a", {current ? 1.0 : 2.0}, {trial})};
    return one;
  });
  const std::vector<std::pair<bool, int>> abba = {{true, 0},  {false, 0}, {false, 1}, {true, 1},
                                                  {false, 2}, {true, 2},  {true, 3},  {false, 3}};
  EXPECT_EQ(order, abba);
  EXPECT_EQ(d.current.meta("side"), "current");
  EXPECT_EQ(d.base.meta("side"), "base");
  EXPECT_EQ(d.current.rows.at(0).trials, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(d.base.rows.at(0).samples, (std::vector<double>{2, 2, 2, 2}));
}

TEST(BenchBaseline, SaveKeysByFingerprintKeepsThePreviousAndRefusesInjectedRuns) {
  const auto dir = temp_dir("baseline-save");
  pb::BenchTable t;
  t.set_meta("fingerprint", "amd-epyc-2c-avx2-zen-00000000");
  t.rows = {row("hand", "a", {1.0}, {0})};
  const std::string from = (dir / "bench-gemm.csv").string();
  pb::write_bench_csv(from, t);
  const auto first = pb::save_baseline(from, (dir / "baselines").string());
  EXPECT_EQ(first.path, (dir / "baselines" / "amd-epyc-2c-avx2-zen-00000000" / "gemm.csv").string());
  EXPECT_EQ(first.previous, "");
  EXPECT_EQ(first.rows, 1u);
  const auto again = pb::save_baseline(from, (dir / "baselines").string());
  EXPECT_EQ(again.previous, (dir / "baselines" / "amd-epyc-2c-avx2-zen-00000000" / "gemm.prev.csv").string());
  EXPECT_TRUE(fs::exists(again.previous));

  t.set_meta("injected_slowdown", "1.25");
  pb::write_bench_csv(from, t);
  EXPECT_THROW(pb::save_baseline(from, (dir / "baselines").string()), popper::Error);
  t.metadata.clear();
  pb::write_bench_csv(from, t);
  EXPECT_THROW(pb::save_baseline(from, (dir / "baselines").string()), popper::Error);
  fs::remove_all(dir);
}

}  // namespace
