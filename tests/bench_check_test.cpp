// Regression classification: count boundaries, trial-aware timed verdicts
// (REGRESSION / NOISY / UNCHANGED), the effect-size fallback, re-measuring,
// MISSING, baselines, and the different-fingerprint (normalized) mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "bench/check.hpp"
#include "bench/interval.hpp"

namespace pb = popper::bench;

namespace {

pb::BenchRow row(const std::string& tier, const std::string& backend, std::vector<double> samples,
                 std::vector<int> trials = {}, const std::string& unit = pb::kUnitSeconds,
                 const std::string& shape = "small_64") {
  pb::BenchRow r;
  r.key = {"gemm", pb::tier_from(tier, "test"), backend, shape, "f32", 1, "warm"};
  r.unit = unit;
  r.samples = std::move(samples);
  r.trials = std::move(trials);
  r.work_per_iter = 1e6;
  r.verdict = pb::Verdict::parse("verified");
  return r;
}

// Samples of several trials: trial t is centred on center * level[t], with a
// tiny spread inside the trial (the between-trial variation dominates).
pb::BenchRow trial_row(const std::string& tier, const std::string& backend, double center,
                       const std::vector<double>& level, int reps = 3, const std::string& shape = "small_64") {
  std::vector<double> s;
  std::vector<int> t;
  for (std::size_t k = 0; k < level.size(); ++k)
    for (int i = 0; i < reps; ++i) {
      s.push_back(center * level[k] * (1 + 0.001 * (i - reps / 2)));
      t.push_back(static_cast<int>(k));
    }
  return row(tier, backend, s, t, pb::kUnitSeconds, shape);
}

pb::BenchTable table(const std::string& fp, std::vector<pb::BenchRow> rows) {
  pb::BenchTable t;
  t.set_meta("fingerprint", fp);
  t.rows = std::move(rows);
  return t;
}

pb::Change classify_counts(double base, double cur) {
  const auto b = table("m", {row("hand", "cpu", {base}, {}, pb::kUnitInstructions)});
  const auto c = table("m", {row("hand", "cpu", {cur}, {}, pb::kUnitInstructions)});
  const auto rep = pb::check_tables(b, c);
  EXPECT_EQ(rep.rows.size(), 1u);
  return rep.rows.at(0).change;
}

const std::vector<double> kQuiet = {1.00, 1.01, 0.99, 1.005, 0.995};  // 1% between trials
const std::vector<double> kLoud = {0.80, 1.25, 0.95, 1.30, 0.85};     // 20% between trials

// A re-measure that answers every key with new trials (ids not used before)
// centred on `center` at the given trial levels; counts its rounds in `calls`.
pb::Remeasure fresh_trials(double center, std::vector<double> level, int& calls) {
  return [center, level, &calls](const std::vector<pb::BenchKey>& keys) {
    ++calls;
    std::vector<pb::BenchRow> more;
    for (const auto& k : keys) {
      auto r = trial_row(std::string(pb::to_string(k.tier)), k.backend, center, level);
      r.key = k;
      for (auto& t : r.trials) t += 10 * calls;
      more.push_back(r);
    }
    return std::optional<std::vector<pb::BenchRow>>(more);
  };
}

}  // namespace

TEST(BenchCheck, CountRatioBoundaries) {
  EXPECT_EQ(classify_counts(1000, 1049), pb::Change::Unchanged);   // 4.9% slower
  EXPECT_EQ(classify_counts(1000, 1051), pb::Change::Warning);     // 5.1%
  EXPECT_EQ(classify_counts(1000, 1099), pb::Change::Warning);     // 9.9%
  EXPECT_EQ(classify_counts(1000, 1101), pb::Change::Regression);  // 10.1%
  EXPECT_EQ(classify_counts(1000, 951), pb::Change::Unchanged);    // 4.9% faster
  EXPECT_EQ(classify_counts(1000, 949), pb::Change::Improvement);  // 5.1% faster
}

TEST(BenchCheck, TimedVerdictsComeFromTheTrialInterval) {
  const auto base = table("m", {trial_row("hand", "cpu", 1.0, kQuiet)});
  const auto slow = pb::check_tables(base, table("m", {trial_row("hand", "cpu", 1.25, kQuiet)}));
  EXPECT_EQ(slow.rows[0].change, pb::Change::Regression) << pb::format_check_report(slow);
  EXPECT_GT(slow.rows[0].lo, 1.10) << "REGRESSION means the interval clears the threshold";
  EXPECT_EQ(slow.exit_code(), 1);
  const auto same = pb::check_tables(base, table("m", {trial_row("hand", "cpu", 1.0, kQuiet)}));
  EXPECT_EQ(same.rows[0].change, pb::Change::Unchanged) << pb::format_check_report(same);
  EXPECT_EQ(same.exit_code(), 0);
  // Median 15% slower, but trials vary by 20%: cannot be decided at the threshold.
  const auto loud_base = table("m", {trial_row("hand", "cpu", 1.0, kLoud)});
  const auto noisy = pb::check_tables(loud_base, table("m", {trial_row("hand", "cpu", 1.15, kLoud)}));
  EXPECT_EQ(noisy.rows[0].change, pb::Change::Noisy) << pb::format_check_report(noisy);
  EXPECT_EQ(noisy.exit_code(), 0);
  EXPECT_EQ(noisy.exit_code(true), 1) << "--strict fails on NOISY";
}

TEST(BenchCheck, RepetitionsOfOneProcessAreNotIndependentTrials) {
  // Five repetitions in one process each: a 15% shift that a rank test on the
  // samples would call certain. With one trial a side there is no noise
  // estimate: the effect size decides, and the note says so.
  const auto base = table("m", {row("hand", "cpu", {1.0, 1.001, 0.999, 1.0005, 0.9995}, {0, 0, 0, 0, 0})});
  const auto cur = table("m", {row("hand", "cpu", {1.15, 1.151, 1.149, 1.1505, 1.1495}, {0, 0, 0, 0, 0})});
  const auto rep = pb::check_tables(base, cur);
  EXPECT_EQ(rep.rows[0].change, pb::Change::Regression);
  EXPECT_NE(rep.rows[0].note.find("effect size only"), std::string::npos) << rep.rows[0].note;
}

TEST(BenchCheck, RemeasuringResolvesNoisyRows) {
  const auto base = table("m", {trial_row("hand", "cpu", 1.0, kQuiet)});
  const auto cur = table("m", {trial_row("hand", "cpu", 1.0, {0.8, 1.3})});  // two wild trials
  pb::CheckOptions opt;
  int calls = 0;
  opt.remeasure = fresh_trials(1.0, kQuiet, calls);
  const auto first = pb::check_tables(base, cur);
  EXPECT_EQ(first.rows[0].change, pb::Change::Noisy) << pb::format_check_report(first);
  const auto rep = pb::check_tables(base, cur, opt);
  EXPECT_GE(calls, 1);
  EXPECT_EQ(rep.rows[0].change, pb::Change::Unchanged) << pb::format_check_report(rep);
}

TEST(BenchCheck, NoisyCeilingRowsAreRemeasuredOnTheirOwn) {
  // A vendor row's scatter says nothing about this repository's code, but
  // --strict fails on it: it is measured again with the NOISY hand row (it is
  // of another shape, so not as the hand row's normalizer).
  const auto base = table(
      "m", {trial_row("ceiling", "openblas", 1.0, kQuiet, 3, "small_128"), trial_row("hand", "cpu", 1.0, kQuiet)});
  const auto cur = table("m", {trial_row("ceiling", "openblas", 1.0, {0.8, 1.3}, 3, "small_128"),
                               trial_row("hand", "cpu", 1.0, {0.8, 1.3})});
  pb::CheckOptions opt;
  std::vector<std::string> asked;
  opt.remeasure = [&](const std::vector<pb::BenchKey>& keys) {
    for (const auto& k : keys) asked.push_back(std::string(pb::to_string(k.tier)));
    return std::optional<std::vector<pb::BenchRow>>();
  };
  const auto rep = pb::check_tables(base, cur, opt);
  ASSERT_EQ(rep.rows.size(), 2u);
  EXPECT_EQ(rep.rows[0].change, pb::Change::Noisy) << pb::format_check_report(rep);
  EXPECT_EQ(rep.rows[1].change, pb::Change::Noisy) << pb::format_check_report(rep);
  EXPECT_EQ(asked, (std::vector<std::string>{"ceiling", "hand"}));
}

TEST(BenchCheck, MachineThatMovesWhileRemeasuringIsSeenInTheRemeasuredCeilings) {
  // The first pass is undecided; by the time rows are re-measured, the whole
  // machine runs 1.5x slower. The ceiling rows re-measured in the same trials
  // show it, so the table is judged relative to them: no regression is
  // invented from the machine's slowdown.
  const std::vector<std::string> vendors = {"openblas:Haswell", "openblas:SkylakeX", "blis:skx"};
  std::vector<pb::BenchRow> b, c;
  for (const auto& v : vendors) {
    b.push_back(trial_row("ceiling", v, 1.0, kQuiet));
    c.push_back(trial_row("ceiling", v, 1.0, kQuiet));
  }
  b.push_back(trial_row("hand", "cpu", 1.0, kQuiet));
  c.push_back(trial_row("hand", "cpu", 1.0, {0.8, 1.3}));  // two wild trials: NOISY
  const auto base = table("m", b), cur = table("m", c);
  pb::CheckOptions opt;
  int calls = 0;
  opt.remeasure = fresh_trials(1.5, {1.0, 1.01, 0.99, 1.0, 1.0, 1.01, 0.99, 1.0}, calls);
  const auto rep = pb::check_tables(base, cur, opt);
  EXPECT_EQ(rep.mode, pb::CheckMode::Normalized) << pb::format_check_report(rep);
  EXPECT_EQ(rep.count(pb::Change::Regression), 0) << pb::format_check_report(rep);
}

TEST(BenchCheck, MissingRowFailsTheCheck) {
  const auto base =
      table("m", {trial_row("hand", "cpu", 1.0, kQuiet), trial_row("wrapped", "openblas:Zen", 1.0, kQuiet)});
  const auto cur = table("m", {trial_row("hand", "cpu", 1.0, kQuiet)});
  const auto rep = pb::check_tables(base, cur);
  EXPECT_EQ(rep.count(pb::Change::Missing), 1);
  EXPECT_EQ(rep.count(pb::Change::Unchanged), 1);
  EXPECT_EQ(rep.exit_code(), 1);
  auto empty = row("wrapped", "openblas:Zen", {});
  empty.verdict = pb::Verdict::parse("incorrect: max err");
  const auto rep2 = pb::check_tables(base, table("m", {trial_row("hand", "cpu", 1.0, kQuiet), empty}));
  EXPECT_EQ(rep2.count(pb::Change::Missing), 1);
}

TEST(BenchCheck, CeilingConfigurationScreenedOutIsSkippedNotMissing) {
  // BLIS's zen kernels sit near the screen's cut-off (1.50-1.79x on one shape):
  // they run in one run and not the next. The vendor set changing is not a
  // regression; a ceiling row that vanished without a recorded reason is.
  const auto base = table("m", {trial_row("ceiling", "blis:zen", 1.0, kQuiet), trial_row("hand", "cpu", 1.0, kQuiet)});
  auto cur = table("m", {trial_row("hand", "cpu", 1.0, kQuiet)});
  const auto missing = pb::check_tables(base, cur);
  EXPECT_EQ(missing.rows[0].change, pb::Change::Missing) << pb::format_check_report(missing);
  EXPECT_EQ(missing.exit_code(), 1);
  cur.set_meta(
      "ceiling_not_run",
      "blis knl (BLIS_ARCH_TYPE=1): cpu_lacks: no avx512pf | blis zen (BLIS_ARCH_TYPE=8): screened_out: 1.63x "
      "slower than the best BLIS configuration on small_256 (screen 1.50x; POPPER_CEILING_CONFIGS=all runs it) ");
  const auto screened = pb::check_tables(base, cur);
  EXPECT_EQ(screened.rows[0].change, pb::Change::Skipped) << pb::format_check_report(screened);
  EXPECT_NE(screened.rows[0].note.find("screened_out: 1.63x"), std::string::npos) << screened.rows[0].note;
  EXPECT_EQ(screened.exit_code(), 0);
  cur.set_meta("ceiling_not_run", "blis zen3 (BLIS_ARCH_TYPE=6): screened_out: 1.70x slower");  // another configuration
  EXPECT_EQ(pb::check_tables(base, cur).rows[0].change, pb::Change::Missing);
}

TEST(BenchCheck, CountRegressionConfirmedOrClearedByRerun) {
  const auto base = table("m", {row("hand", "cpu", {1000}, {}, pb::kUnitInstructions)});
  const auto cur = table("m", {row("hand", "cpu", {1300}, {}, pb::kUnitInstructions)});
  const auto cleared = pb::check_tables(base, cur, {}, [&](const pb::BenchRow& r) {
    auto again = r;
    again.samples = {1001};
    return std::optional<pb::BenchRow>(again);
  });
  EXPECT_EQ(cleared.rows[0].change, pb::Change::Unchanged);
  EXPECT_NE(cleared.rows[0].note.find("not confirmed"), std::string::npos);
  const auto confirmed =
      pb::check_tables(base, cur, {}, [&](const pb::BenchRow& r) { return std::optional<pb::BenchRow>(r); });
  EXPECT_EQ(confirmed.rows[0].change, pb::Change::Regression);
  EXPECT_NE(confirmed.rows[0].note.find("confirmed on re-run"), std::string::npos);
}

TEST(BenchCheck, BaselinesMustExistAndBeClean) {
  try {
    pb::read_baseline("/nonexistent/baselines/x/gemm.csv");
    FAIL() << "a missing baseline must be an error";
  } catch (const pb::NoBaseline& e) {
    EXPECT_NE(std::string(e.what()).find("popper bench baseline save"), std::string::npos) << e.what();
  }
  auto t = table("m", {trial_row("hand", "cpu", 1.0, kQuiet)});
  t.set_meta("injected_slowdown", "0.25");
  const std::string path = std::string(POPPER_BINARY_DIR) + "/injected-baseline.csv";
  pb::write_bench_csv(path, t);
  EXPECT_THROW(pb::read_baseline(path), pb::BenchFileError) << "a baseline recorded with an injected slowdown";
}

TEST(BenchCheck, DifferentFingerprintComparesOnlyNormalizedRatios) {
  const auto base = table(
      "machine-a", {trial_row("ceiling", "openblas:Haswell", 1.0, kQuiet), trial_row("hand", "cpu", 2.0, kQuiet)});
  const auto same_ratio =
      table("machine-b", {trial_row("ceiling", "openblas:Zen", 0.5, kQuiet), trial_row("hand", "cpu", 1.0, kQuiet)});
  const auto rep = pb::check_tables(base, same_ratio);
  EXPECT_EQ(rep.mode, pb::CheckMode::Normalized);
  ASSERT_EQ(rep.rows.size(), 1u);  // the ceiling is the normalizer, not a compared row
  EXPECT_EQ(rep.rows[0].change, pb::Change::Unchanged) << pb::format_check_report(rep);
  EXPECT_NEAR(rep.rows[0].ratio, 1.0, 0.01);
  const auto worse =
      table("machine-b", {trial_row("ceiling", "openblas:Zen", 0.5, kQuiet), trial_row("hand", "cpu", 1.3, kQuiet)});
  EXPECT_EQ(pb::check_tables(base, worse).rows[0].change, pb::Change::Regression);
  // No ceiling to normalize by: MISSING, which fails (never a silent skip).
  const auto no_ceiling = table("machine-b", {trial_row("hand", "cpu", 1.0, kQuiet)});
  const auto rep3 = pb::check_tables(base, no_ceiling);
  EXPECT_EQ(rep3.rows[0].change, pb::Change::Missing);
  EXPECT_EQ(rep3.exit_code(), 1);
  EXPECT_EQ(pb::check_tables(base, base).mode, pb::CheckMode::Absolute);
}

TEST(BenchCheck, WholeMachineSlowdownIsJudgedAgainstTheSameRunCeiling) {
  // Same machine, but everything (the vendor library included) is 30% slower:
  // the load changed, not the code. Judged relative to the ceiling: unchanged.
  const auto base =
      table("m", {trial_row("ceiling", "openblas:Haswell", 1.0, kQuiet), trial_row("hand", "cpu", 2.0, kQuiet)});
  const auto loaded =
      table("m", {trial_row("ceiling", "openblas:Haswell", 1.3, kQuiet), trial_row("hand", "cpu", 2.6, kQuiet)});
  const auto rep = pb::check_tables(base, loaded, pb::CheckOptions{});
  EXPECT_EQ(rep.mode, pb::CheckMode::Normalized);
  EXPECT_NE(rep.mode_reason.find("1.300x"), std::string::npos) << rep.mode_reason;
  ASSERT_EQ(rep.rows.size(), 1u);
  EXPECT_EQ(rep.rows[0].change, pb::Change::Unchanged) << pb::format_check_report(rep);
  // A slower hand kernel on the loaded machine is still a regression.
  const auto slower =
      table("m", {trial_row("ceiling", "openblas:Haswell", 1.3, kQuiet), trial_row("hand", "cpu", 3.4, kQuiet)});
  EXPECT_EQ(pb::check_tables(base, slower, pb::CheckOptions{}).rows[0].change, pb::Change::Regression);
  // Only the hand kernel slower (the ceiling steady): absolute mode, REGRESSION.
  const auto hand_only =
      table("m", {trial_row("ceiling", "openblas:Haswell", 1.0, kQuiet), trial_row("hand", "cpu", 2.6, kQuiet)});
  const auto rep2 = pb::check_tables(base, hand_only, pb::CheckOptions{});
  EXPECT_EQ(rep2.mode, pb::CheckMode::Absolute);
  EXPECT_EQ(rep2.rows[1].change, pb::Change::Regression) << pb::format_check_report(rep2);
  pb::CheckOptions absolute;
  absolute.normalize_on_drift = false;
  EXPECT_EQ(pb::check_tables(base, loaded, absolute).mode, pb::CheckMode::Absolute);
}

TEST(BenchCheck, NoisyCeilingRowsDoNotRescaleTheTable) {
  // Two ceiling rows whose medians came out 1.3x and 1.5x (as two tiny LAPACK
  // rows of the arrow gate shape can): two rows that disagree are not evidence
  // that the machine moved. Rescaling by them would hide the hand
  // kernel's real 40% slowdown, so the table stays absolute and says why.
  const auto base = table(
      "m", {trial_row("ceiling", "openblas:Haswell", 1.0, kLoud, 3, "a"),
            trial_row("ceiling", "openblas:SkylakeX", 1.0, kLoud, 3, "b"), trial_row("hand", "cpu", 2.0, kQuiet)});
  const auto cur = table(
      "m", {trial_row("ceiling", "openblas:Haswell", 1.3, kLoud, 3, "a"),
            trial_row("ceiling", "openblas:SkylakeX", 1.5, kLoud, 3, "b"), trial_row("hand", "cpu", 2.8, kQuiet)});
  const auto rep = pb::check_tables(base, cur, pb::CheckOptions{});
  EXPECT_EQ(rep.mode, pb::CheckMode::Absolute) << rep.mode_reason;
  EXPECT_NE(rep.mode_reason.find("not beyond their own scatter"), std::string::npos) << rep.mode_reason;
  for (const auto& r : rep.rows) {
    if (r.key.tier == pb::Tier::Hand) {
      EXPECT_EQ(r.change, pb::Change::Regression) << pb::format_check_report(rep);
    }
  }
}

TEST(BenchCheck, OneSidedDelaysOfWholeTrialsDoNotHideOrInventAChange) {
  // The shared machine's delays, as measured on the arrow gate rows: whole
  // processes 1.35x slower (a busy neighbour on the host core), in 2 of 6
  // trials, different ones in each run. Only ever slower, never faster.
  const std::vector<double> base_levels = {1.00, 1.00, 0.98, 1.35, 1.00, 1.38};
  const std::vector<double> clean_levels = {1.36, 1.00, 1.01, 1.00, 1.34, 0.99};
  const auto base = table("m", {trial_row("hand", "cpu", 1.0, base_levels, 2)});
  const auto clean = table("m", {trial_row("hand", "cpu", 1.0, clean_levels, 2)});
  const auto slower = table("m", {trial_row("hand", "cpu", 1.25, clean_levels, 2)});
  pb::CheckOptions opt;
  opt.normalize_on_drift = false;
  const auto same = pb::check_tables(base, clean, opt);
  EXPECT_EQ(same.rows[0].change, pb::Change::Unchanged) << pb::format_check_report(same);
  const auto slow = pb::check_tables(base, slower, opt);
  EXPECT_EQ(slow.rows[0].change, pb::Change::Regression) << pb::format_check_report(slow);
  EXPECT_NE(slow.method.find("0.25-quantiles"), std::string::npos) << slow.method;
  // Judged on medians, the same 25% slowdown cannot be decided: the slow
  // trials the bootstrap draws move the median, so the interval straddles 1.10.
  opt.thresholds.quantile = 0.5;
  const auto by_median = pb::check_tables(base, slower, opt);
  EXPECT_EQ(by_median.rows[0].change, pb::Change::Noisy) << pb::format_check_report(by_median);
}

TEST(BenchCheck, TrialsMuchFasterThanTheRestDoNotMakeARowNoisy) {
  // A 2-thread row on the shared machine: in 1 of 6 trials both cores were
  // free and it ran 1.6x faster. Resamples that draw that trial twice pull the
  // ratio far below 1, never above: the interval is [0.60, 1.01], and the row
  // is unchanged. Judged by one spread for both sides (as before), the long
  // lower tail made "ratio < 1.10" undecidable and the row NOISY.
  const std::vector<double> base_levels = {1.00, 1.01, 0.99, 1.005, 0.995, 1.00};
  const std::vector<double> cur_levels = {1.00, 0.60, 1.01, 0.99, 1.00, 1.00};
  const auto base = table("m", {trial_row("hand", "cpu", 1.0, base_levels, 2)});
  const auto cur = table("m", {trial_row("hand", "cpu", 1.0, cur_levels, 2)});
  pb::CheckOptions opt;
  opt.normalize_on_drift = false;
  const auto rep = pb::check_tables(base, cur, opt);
  EXPECT_LT(rep.rows[0].hi, 1.10) << pb::format_check_report(rep);
  EXPECT_NE(rep.rows[0].change, pb::Change::Noisy) << pb::format_check_report(rep);
  EXPECT_NE(rep.rows[0].change, pb::Change::Regression) << pb::format_check_report(rep);
}

TEST(BenchCheck, VendorRowThatMovedIsTheMachineAndItsWrappedRowIsJudgedRelativeToIt) {
  // small_64's vendor row is 1.25x slower (the machine, for that
  // configuration); small_128's is not, so the table as a whole is not
  // rescaled (two ceiling rows that disagree). The moved row is MOVED, not a
  // regression; the wrapped row over the same library moved with it and is
  // unchanged relative to it; the hand kernels stay absolute, so a slower one
  // is still caught in the moved group as in the other.
  auto rows = [](double ceil64, double wrapped64, double hand64, double hand128) {
    return std::vector<pb::BenchRow>{trial_row("ceiling", "openblas:Haswell", ceil64, kQuiet, 3, "small_64"),
                                     trial_row("wrapped", "openblas:Haswell", wrapped64, kQuiet, 3, "small_64"),
                                     trial_row("hand", "cpu", hand64, kQuiet, 3, "small_64"),
                                     trial_row("ceiling", "openblas:Haswell", 1.0, kQuiet, 3, "small_128"),
                                     trial_row("hand", "cpu", hand128, kQuiet, 3, "small_128")};
  };
  const auto base = table("m", rows(1.0, 2.0, 3.0, 3.0));
  const auto moved = pb::check_tables(base, table("m", rows(1.25, 2.5, 3.0, 3.9)), pb::CheckOptions{});
  ASSERT_EQ(moved.mode, pb::CheckMode::Absolute) << moved.mode_reason;
  auto verdict = [](const pb::CheckReport& rep, const std::string& tier, const std::string& shape) {
    for (const auto& r : rep.rows)
      if (r.key.tier == pb::tier_from(tier, "test") && r.key.shape == shape) return r.change;
    ADD_FAILURE() << "no row " << tier << " " << shape;
    return pb::Change::Missing;
  };
  EXPECT_EQ(verdict(moved, "ceiling", "small_64"), pb::Change::Moved) << pb::format_check_report(moved);
  EXPECT_EQ(verdict(moved, "wrapped", "small_64"), pb::Change::Unchanged) << pb::format_check_report(moved);
  EXPECT_EQ(verdict(moved, "hand", "small_64"), pb::Change::Unchanged) << pb::format_check_report(moved);
  EXPECT_EQ(verdict(moved, "hand", "small_128"), pb::Change::Regression) << pb::format_check_report(moved);
  EXPECT_EQ(moved.exit_code(), 1);
  // The hand kernel of the moved group 30% slower: still a regression.
  const auto hand_slower = pb::check_tables(base, table("m", rows(1.25, 2.5, 3.9, 3.0)), pb::CheckOptions{});
  EXPECT_EQ(verdict(hand_slower, "hand", "small_64"), pb::Change::Regression) << pb::format_check_report(hand_slower);
  // Nothing but the vendor row moved: the check passes, and says why.
  const auto only_machine = pb::check_tables(base, table("m", rows(1.25, 2.5, 3.0, 3.0)), pb::CheckOptions{});
  EXPECT_EQ(only_machine.exit_code(), 0) << pb::format_check_report(only_machine);
  EXPECT_NE(pb::format_check_report(only_machine).find("1 moved"), std::string::npos);
}

// The verdict rules below, one test each: removing a rule fails its test.

// Rule: a count row whose baseline count is not positive has no ratio: SKIPPED, not judged.
TEST(BenchCheck, CountRowWithoutAPositiveBaselineIsSkipped) {
  const auto base = table("m", {row("hand", "cpu", {0}, {}, pb::kUnitInstructions)});
  const auto cur = table("m", {row("hand", "cpu", {1000}, {}, pb::kUnitInstructions)});
  const auto rep = pb::check_tables(base, cur);
  ASSERT_EQ(rep.rows.size(), 1u);
  EXPECT_EQ(rep.rows[0].change, pb::Change::Skipped) << pb::format_check_report(rep);
  EXPECT_EQ(rep.rows[0].note, "baseline count is not positive");
}

// Rules: a timed row shown slower than the warning band (but not shown beyond
// the regression threshold, and shown below it) is WARNING; one shown faster
// than the band is IMPROVEMENT.
TEST(BenchCheck, TimedWarningAndImprovementComeFromTheInterval) {
  const auto base = table("m", {trial_row("hand", "cpu", 1.0, kQuiet)});
  const auto warn = pb::check_tables(base, table("m", {trial_row("hand", "cpu", 1.075, kQuiet)}));
  EXPECT_EQ(warn.rows[0].change, pb::Change::Warning) << pb::format_check_report(warn);
  EXPECT_GT(warn.rows[0].lo, 1.05) << pb::format_check_report(warn);
  EXPECT_LT(warn.rows[0].hi, 1.10) << pb::format_check_report(warn);
  EXPECT_EQ(warn.exit_code(), 0);
  const auto faster = pb::check_tables(base, table("m", {trial_row("hand", "cpu", 0.90, kQuiet)}));
  EXPECT_EQ(faster.rows[0].change, pb::Change::Improvement) << pb::format_check_report(faster);
  EXPECT_LT(faster.rows[0].hi, 0.95) << pb::format_check_report(faster);
}

// Rule: an implausible ceiling row (plausibility.hpp) is no evidence that the
// machine moved: a same-machine check stays absolute however slow it is.
TEST(BenchCheck, InvalidCeilingRowDoesNotRescaleTheTable) {
  const auto base =
      table("m", {trial_row("ceiling", "openblas:Haswell", 1.0, kQuiet), trial_row("hand", "cpu", 2.0, kQuiet)});
  auto cur = table("m", {trial_row("ceiling", "openblas:Haswell", 1.3, kQuiet), trial_row("hand", "cpu", 2.6, kQuiet)});
  const auto valid = pb::check_tables(base, cur, pb::CheckOptions{});
  ASSERT_EQ(valid.mode, pb::CheckMode::Normalized) << valid.mode_reason;  // the premise: valid, it would rescale
  cur.rows[0].invalid_reason = "2 threads at 0.06x its 1-thread throughput (below 0.5x)";
  const auto rep = pb::check_tables(base, cur, pb::CheckOptions{});
  EXPECT_EQ(rep.mode, pb::CheckMode::Absolute) << rep.mode_reason;
  for (const auto& r : rep.rows) {
    if (r.key.tier == pb::Tier::Hand) {
      EXPECT_EQ(r.change, pb::Change::Regression) << pb::format_check_report(rep);
    }
  }
}

// Rule: a vendor row invalid in both tables (a library broken on this machine
// both times: ggml at 2 threads on a 2-vCPU host) is SKIPPED with the reason,
// not NOISY; invalid in one table only it is judged, since the break may be
// this code's (the wrapped tier's threading).
TEST(BenchCheck, VendorRowInvalidInBothTablesIsSkippedAndInOneIsJudged) {
  const char* broken = "2 threads at 0.25x its 1-thread throughput (below 0.5x)";
  auto wrapped2 = [](double center, const std::vector<double>& level) {
    auto r = trial_row("wrapped", "ggml-cpu:zen4", center, level);
    r.key.threads = 2;
    return r;
  };
  auto base = table("m", {trial_row("hand", "cpu", 1.0, kQuiet), wrapped2(4.0, kLoud)});
  auto cur = table("m", {trial_row("hand", "cpu", 1.0, kQuiet), wrapped2(4.0, {0.5, 2.0, 1.0, 3.0, 0.6})});
  const auto as_measured = pb::check_tables(base, cur);
  ASSERT_EQ(as_measured.rows[1].change, pb::Change::Noisy) << pb::format_check_report(as_measured);  // the premise
  base.rows[1].invalid_reason = cur.rows[1].invalid_reason = broken;
  const auto both = pb::check_tables(base, cur);
  EXPECT_EQ(both.rows[1].change, pb::Change::Skipped) << pb::format_check_report(both);
  EXPECT_NE(both.rows[1].note.find(std::string("invalid in both tables: ") + broken), std::string::npos)
      << both.rows[1].note;
  EXPECT_EQ(both.rows[0].change, pb::Change::Unchanged) << pb::format_check_report(both);
  EXPECT_EQ(both.exit_code(), 0);
  // Healthy in the baseline (1 ms), broken now (4 ms): judged, a regression.
  base.rows[1] = wrapped2(1.0, kQuiet);
  cur.rows[1] = wrapped2(4.0, kQuiet);
  cur.rows[1].invalid_reason = broken;
  const auto one = pb::check_tables(base, cur);
  EXPECT_EQ(one.rows[1].change, pb::Change::Regression) << pb::format_check_report(one);
}

// Rule: an implausible ceiling row normalizes nothing: the best *valid*
// ceiling of the group does, however fast the invalid one reads.
TEST(BenchCheck, InvalidCeilingRowNormalizesNothing) {
  const auto base = table(
      "machine-a", {trial_row("ceiling", "openblas:Haswell", 1.0, kQuiet), trial_row("hand", "cpu", 2.0, kQuiet)});
  auto cur =
      table("machine-b", {trial_row("ceiling", "openblas:Zen", 0.5, kQuiet),
                          trial_row("ceiling", "blis:zen", 0.25, kQuiet), trial_row("hand", "cpu", 1.0, kQuiet)});
  cur.rows[1].invalid_reason = "cv 60.0% against a median 1.0% of the 1 other ceiling rows of its shape and threads";
  const auto rep = pb::check_tables(base, cur);
  ASSERT_EQ(rep.mode, pb::CheckMode::Normalized);
  ASSERT_EQ(rep.rows.size(), 1u);
  EXPECT_EQ(rep.rows[0].change, pb::Change::Unchanged) << pb::format_check_report(rep);
  EXPECT_NEAR(rep.rows[0].ratio, 1.0, 0.01) << pb::format_check_report(rep);
}

// Rule: a row whose group has ceilings, all invalid, on one side cannot be
// normalized: SKIPPED with the reason (the vendor broke, not this code); a
// group with no ceiling row at all is MISSING, as before.
TEST(BenchCheck, RowWhoseCeilingsAreAllInvalidIsSkippedNotMissing) {
  const auto base =
      table("machine-a", {trial_row("ceiling", "ggml-cpu:zen4", 1.0, kQuiet), trial_row("hand", "cpu", 2.0, kQuiet),
                          trial_row("ceiling", "ggml-cpu:zen4", 1.0, kQuiet, 3, "small_128"),
                          trial_row("hand", "cpu", 2.0, kQuiet, 3, "small_128")});
  auto cur =
      table("machine-b", {trial_row("ceiling", "ggml-cpu:zen4", 0.5, kQuiet), trial_row("hand", "cpu", 1.0, kQuiet),
                          trial_row("hand", "cpu", 1.0, kQuiet, 3, "small_128")});
  cur.rows[0].invalid_reason = "2 threads at 0.003x its 1-thread throughput (below 0.5x)";
  auto with_valid = cur;
  with_valid.rows.push_back(trial_row("ceiling", "ggml-cpu:zen4", 0.5, kQuiet, 3, "small_128"));
  const auto rep = pb::check_tables(base, with_valid);
  ASSERT_EQ(rep.mode, pb::CheckMode::Normalized) << rep.mode_reason;
  for (const auto& r : rep.rows) {
    if (r.key.shape == "small_64") {
      EXPECT_EQ(r.change, pb::Change::Skipped) << pb::format_check_report(rep);
      EXPECT_NE(r.note.find("every ceiling row of its group is invalid in current (ggml-cpu:zen4: 2 threads at"),
                std::string::npos)
          << r.note;
    } else {
      EXPECT_EQ(r.change, pb::Change::Unchanged) << pb::format_check_report(rep);
    }
  }
  // No ceiling row of the group at all: missing.
  cur.rows.erase(cur.rows.begin());
  cur.rows.push_back(trial_row("ceiling", "ggml-cpu:zen4", 0.5, kQuiet, 3, "small_128"));
  const auto none = pb::check_tables(base, cur);
  for (const auto& r : none.rows) {
    if (r.key.shape == "small_64" && r.key.tier == pb::Tier::Hand) {
      EXPECT_EQ(r.change, pb::Change::Missing) << pb::format_check_report(none);
    }
  }
}

// Rule: in normalized mode each sample is divided by its own trial's best
// ceiling, so a machine whose speed changed between trials (here 2 fast
// trials, 3 at half speed) changes nothing.
TEST(BenchCheck, NormalizedSamplesAreDividedByTheirOwnTrialsCeiling) {
  const std::vector<double> levels = {1.0, 1.0, 2.0, 2.0, 2.0};
  const auto base = table(
      "machine-a", {trial_row("ceiling", "openblas:Haswell", 1.0, kQuiet), trial_row("hand", "cpu", 2.0, kQuiet)});
  const auto cur =
      table("machine-b", {trial_row("ceiling", "openblas:Zen", 0.5, levels), trial_row("hand", "cpu", 1.0, levels)});
  const auto rep = pb::check_tables(base, cur);
  ASSERT_EQ(rep.mode, pb::CheckMode::Normalized);
  ASSERT_EQ(rep.rows.size(), 1u);
  EXPECT_EQ(rep.rows[0].change, pb::Change::Unchanged) << pb::format_check_report(rep);
  EXPECT_NEAR(rep.rows[0].ratio, 1.0, 0.01) << pb::format_check_report(rep);
}

// Rule: a baseline row without samples (it failed verification, or was
// skipped, when the baseline was recorded) is SKIPPED: nothing to compare, and
// no failure of the current code.
TEST(BenchCheck, BaselineRowWithoutSamplesIsSkipped) {
  auto empty = row("hand", "cpu", {});
  empty.verdict = pb::Verdict::parse("incorrect: max err 1 > bound 1e-5");
  const auto rep = pb::check_tables(table("m", {empty}), table("m", {trial_row("hand", "cpu", 1.0, kQuiet)}));
  ASSERT_EQ(rep.rows.size(), 1u);
  EXPECT_EQ(rep.rows[0].change, pb::Change::Skipped) << pb::format_check_report(rep);
  EXPECT_NE(rep.rows[0].note.find("no samples in the baseline (incorrect"), std::string::npos) << rep.rows[0].note;
  EXPECT_EQ(rep.exit_code(), 0);
}

// Rule: a row of the current table that the baseline lacks is NEW, listed and
// never a failure.
TEST(BenchCheck, RowNotInTheBaselineIsNew) {
  const auto base = table("m", {trial_row("hand", "cpu", 1.0, kQuiet)});
  const auto cur =
      table("m", {trial_row("hand", "cpu", 1.0, kQuiet), trial_row("hand", "cpu", 1.0, kQuiet, 3, "small_128")});
  const auto rep = pb::check_tables(base, cur);
  ASSERT_EQ(rep.rows.size(), 2u) << pb::format_check_report(rep);
  EXPECT_EQ(rep.rows[1].change, pb::Change::New) << pb::format_check_report(rep);
  EXPECT_EQ(rep.rows[1].key.shape, "small_128");
  EXPECT_EQ(rep.exit_code(), 0);
}

// Rules: re-measuring stops after max_rounds rounds, and when the time budget
// is spent (a row that stays REGRESSION is reported so, not measured for ever).
TEST(BenchCheck, RemeasuringStopsAtMaxRoundsAndAtTheBudget) {
  const auto base = table("m", {trial_row("hand", "cpu", 1.0, kQuiet)});
  const auto cur = table("m", {trial_row("hand", "cpu", 1.5, kQuiet)});
  int calls = 0;
  pb::CheckOptions opt;
  opt.max_rounds = 2;
  opt.remeasure = [&](const std::vector<pb::BenchKey>& keys) -> std::optional<std::vector<pb::BenchRow>> {
    if (++calls > 10) return std::nullopt;  // a broken limit ends here, not never
    std::vector<pb::BenchRow> more;
    for (const auto& k : keys) {
      auto r =
          trial_row(std::string(pb::to_string(k.tier)), k.backend, 1.5, kQuiet);  // as slow as before: stays REGRESSION
      r.key = k;
      for (auto& t : r.trials) t += 10 * calls;
      more.push_back(r);
    }
    return more;
  };
  auto rep = pb::check_tables(base, cur, opt);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(rep.rows[0].change, pb::Change::Regression) << pb::format_check_report(rep);
  calls = 0;
  opt.max_rounds = 5;
  opt.budget_seconds = 1e-9;  // spent before the first round ends
  rep = pb::check_tables(base, cur, opt);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(rep.rows[0].change, pb::Change::Regression) << pb::format_check_report(rep);
}

// Rule: REGRESSION is decided over all the testable rows of a check at once
// (Benjamini-Hochberg): a 16% slowdown whose p-value (0.016 here) would be a
// regression alone is NOISY among nine unchanged rows, where the first
// rejection needs p <= alpha / 10.
TEST(BenchCheck, RegressionIsDecidedOverAllTheRowsAtOnce) {
  const std::vector<double> levels = {1.00, 1.03, 0.97, 1.02, 0.98};  // 3% between trials
  std::vector<pb::BenchRow> b, c;
  for (int i = 0; i < 10; ++i) {
    const std::string shape = "s" + std::to_string(i);
    b.push_back(trial_row("hand", "cpu", 1.0, levels, 3, shape));
    c.push_back(trial_row("hand", "cpu", i == 0 ? 1.16 : 1.0, levels, 3, shape));
  }
  const auto alone = pb::check_tables(table("m", {b[0]}), table("m", {c[0]}));
  EXPECT_EQ(alone.rows[0].change, pb::Change::Regression) << pb::format_check_report(alone);
  ASSERT_GT(alone.rows[0].p_value, 0.05 / 10);  // the premise: between alpha / 10 and alpha
  ASSERT_LE(alone.rows[0].p_value, 0.05);
  const auto rep = pb::check_tables(table("m", b), table("m", c));
  EXPECT_EQ(rep.rows[0].change, pb::Change::Noisy) << pb::format_check_report(rep);
  EXPECT_EQ(rep.count(pb::Change::Regression), 0) << pb::format_check_report(rep);
}

TEST(BenchInterval, StudentTAndBenjaminiHochbergAndPower) {
  EXPECT_NEAR(pb::student_t_upper(2.0, 10), 0.036694, 1e-5);  // tables: t_0.95,10 = 1.812, P(T > 2) = 0.0367
  EXPECT_NEAR(pb::student_t_upper(0.0, 3), 0.5, 1e-12);
  EXPECT_NEAR(pb::student_t_upper(-1.0, 1), 0.75, 1e-9);  // Cauchy: P(T > -1) = 3/4
  // Step up over ranks 1..4 at k q / m = 0.0125, 0.025, 0.0375, 0.05: rank 3
  // (0.036) passes, so ranks 1-3 are rejected although ranks 1 and 2 fail
  // their own levels (Holm's step-down would stop at rank 1: none rejected).
  EXPECT_EQ(pb::benjamini_hochberg({0.03, 0.036, 0.02, 0.9}, 0.05), (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(pb::benjamini_hochberg({0.01, 0.04, 0.03, 0.5}, 0.05), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(pb::benjamini_hochberg({0.02, 0.5, 0.9}, 0.05), (std::vector<bool>{false, false, false}));  // 0.02 > 0.05/3
  EXPECT_EQ(pb::benjamini_hochberg({0.001, 0.001}, 0.05), (std::vector<bool>{true, true}));
  EXPECT_TRUE(pb::benjamini_hochberg({}, 0.05).empty());
  // Twelve slowed rows among 84 with p = 0.005 each: all rejected (12 x 0.05 /
  // 84 = 0.0071), where a family-wise 0.05 / 84 = 0.0006 would reject none.
  std::vector<double> table(84, 0.6);
  std::fill(table.begin(), table.begin() + 12, 0.005);
  const auto rej = pb::benjamini_hochberg(table, 0.05);
  EXPECT_EQ(std::count(rej.begin(), rej.end(), true), 12);
  // The inverse: the trials that power asks for detect that effect, and one
  // trial fewer does not; more noise, a larger detectable slowdown.
  const int t13 = pb::trials_for_power(0.13, 1.25, 1.10, 0.002, 0.8);
  EXPECT_LE(pb::detectable_ratio(0.13, t13, 1.10, 0.002, 0.8), 1.25 + 1e-9);
  EXPECT_GT(pb::detectable_ratio(0.13, t13 - 1, 1.10, 0.002, 0.8), 1.25);
  EXPECT_LT(pb::detectable_ratio(0.03, 6, 1.10, 0.002, 0.8), pb::detectable_ratio(0.13, 6, 1.10, 0.002, 0.8));
  const int quiet = pb::trials_for_power(0.01, 1.20, 1.10, 0.05, 0.8);
  const int loud = pb::trials_for_power(0.10, 1.20, 1.10, 0.05, 0.8);
  EXPECT_GE(quiet, 2);
  EXPECT_GT(loud, quiet) << "more noise needs more trials";
}

namespace {

// An interleaved re-measure whose trials are centred on `current` (this build)
// and `baseline` (the baseline's side) at 1% scatter; logs the sides it ran
// ('C' or 'B') and the rows it was asked for.
pb::Interleave interleaved(double current, double baseline, std::string& sides, std::vector<pb::BenchKey>& asked) {
  pb::Interleave il;
  il.baseline = "commit 0123456789ab, this build";
  il.measure = [current, baseline, &sides, &asked, n = 0](const std::vector<pb::BenchKey>& keys,
                                                          bool base_side) mutable {
    sides += base_side ? 'B' : 'C';
    asked = keys;
    std::vector<pb::BenchRow> out;
    for (const auto& k : keys) {
      auto r = trial_row(std::string(pb::to_string(k.tier)), k.backend, base_side ? baseline : current,
                         {kQuiet[n % kQuiet.size()]});
      r.key = k;
      for (auto& t : r.trials) t = 100 + n;
      out.push_back(r);
    }
    ++n;
    return std::optional<std::vector<pb::BenchRow>>(out);
  };
  return il;
}

}  // namespace

// Rule: with interleaving, every timed suite row is measured again on both
// sides in ABBA rounds (C B B C, then B C C B) and judged on those trials alone. A 25% slowdown
// that the stored baseline hides (the baseline was itself measured when the
// machine was 25% slower) is found; the ceiling row is not measured that way.
TEST(BenchCheck, InterleavedRoundsFindWhatADriftedBaselineHides) {
  const auto base = table("m", {trial_row("ceiling", "openblas", 1.0, kQuiet), trial_row("hand", "cpu", 1.25, kQuiet)});
  const auto cur = table("m", {trial_row("ceiling", "openblas", 1.0, kQuiet), trial_row("hand", "cpu", 1.25, kQuiet)});
  const auto stored = pb::check_tables(base, cur);
  ASSERT_EQ(stored.rows[1].change, pb::Change::Unchanged) << pb::format_check_report(stored);  // the premise
  pb::CheckOptions opt;
  std::string sides;
  std::vector<pb::BenchKey> asked;
  opt.interleave = interleaved(1.25, 1.0, sides, asked);
  int calls = 0;
  opt.remeasure = fresh_trials(1.0, kQuiet, calls);
  const auto rep = pb::check_tables(base, cur, opt);
  ASSERT_EQ(rep.rows.size(), 2u);
  EXPECT_EQ(rep.rows[1].change, pb::Change::Regression) << pb::format_check_report(rep);
  EXPECT_NE(rep.rows[1].note.find("interleaved"), std::string::npos) << rep.rows[1].note;
  EXPECT_NE(rep.method.find("ABBA"), std::string::npos) << rep.method;
  EXPECT_EQ(rep.rows[1].trials_base, 2);
  EXPECT_EQ(rep.rows[1].trials_current, 2);
  EXPECT_EQ(sides, "CBBC") << "one round, decided: no second";
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].tier, pb::Tier::Hand);
  EXPECT_EQ(rep.rows[0].change, pb::Change::Unchanged);
  EXPECT_EQ(calls, 0) << "no row was NOISY or REGRESSION on this build alone";
}

// Rule: the stored samples are set aside, so a row the stored baseline calls a
// regression (the current run met a slower machine) is cleared when both
// sides, measured alternately now, agree; a row still NOISY is measured in
// another round.
TEST(BenchCheck, InterleavedRoundsClearWhatADriftedMachineFakes) {
  const auto base = table("m", {trial_row("hand", "cpu", 1.0, kQuiet)});
  const auto cur = table("m", {trial_row("hand", "cpu", 1.3, kQuiet)});
  ASSERT_EQ(pb::check_tables(base, cur).rows[0].change, pb::Change::Regression);  // the premise
  pb::CheckOptions opt;
  std::string sides;
  std::vector<pb::BenchKey> asked;
  opt.interleave = interleaved(1.0, 1.0, sides, asked);
  const auto rep = pb::check_tables(base, cur, opt);
  EXPECT_EQ(rep.rows[0].change, pb::Change::Unchanged) << pb::format_check_report(rep);
  EXPECT_EQ(rep.exit_code(), 0);
  EXPECT_EQ(sides, "CBBC");

  // 1.08 at 1% scatter is NOISY after one round (2 trials a side) and decided by more.
  sides.clear();
  opt.interleave = interleaved(1.08, 1.0, sides, asked);
  const auto more = pb::check_tables(base, cur, opt);
  EXPECT_GT(sides.size(), 4u) << pb::format_check_report(more);
  EXPECT_EQ(sides.substr(0, 8), "CBBCBCCB");
  EXPECT_NE(more.rows[0].change, pb::Change::Noisy) << pb::format_check_report(more);
}

// Rule: when the baseline's side cannot be measured, NOISY and REGRESSION rows
// are measured again on this build alone, and the method says interleaving failed.
TEST(BenchCheck, FailedInterleavingFallsBackToThisBuildAlone) {
  const auto base = table("m", {trial_row("hand", "cpu", 1.0, kQuiet)});
  const auto cur = table("m", {trial_row("hand", "cpu", 1.0, {0.8, 1.3})});  // NOISY
  pb::CheckOptions opt;
  opt.interleave.baseline = "commit 0123456789ab, built here";
  int tries = 0;
  opt.interleave.measure = [&](const std::vector<pb::BenchKey>&, bool) {
    ++tries;
    return std::optional<std::vector<pb::BenchRow>>();
  };
  int calls = 0;
  opt.remeasure = fresh_trials(1.0, kQuiet, calls);
  const auto rep = pb::check_tables(base, cur, opt);
  EXPECT_EQ(tries, 1);
  EXPECT_GE(calls, 1);
  EXPECT_EQ(rep.rows[0].change, pb::Change::Unchanged) << pb::format_check_report(rep);
  EXPECT_NE(rep.method.find("interleaving with the baseline's side"), std::string::npos) << rep.method;
}

// Rule: the vendor (ceiling) rows are a Benjamini-Hochberg family of their
// own. A 16% slowdown with p between alpha / 10 and alpha is a REGRESSION
// beside nine unchanged vendor rows, where pooled with them it would need
// p <= alpha / 10 (the pooled case: BenchCheck.RegressionIsDecidedOverAllTheRowsAtOnce).
TEST(BenchCheck, VendorRowsAreAFamilyOfTheirOwn) {
  const std::vector<double> levels = {1.00, 1.03, 0.97, 1.02, 0.98};
  std::vector<pb::BenchRow> b = {trial_row("hand", "cpu", 1.0, levels, 3, "s0")},
                            c = {trial_row("hand", "cpu", 1.16, levels, 3, "s0")};
  for (int i = 1; i < 10; ++i) {
    const std::string shape = "s" + std::to_string(i);
    b.push_back(trial_row("ceiling", "openblas", 1.0, levels, 3, shape));
    c.push_back(trial_row("ceiling", "openblas", 1.0, levels, 3, shape));
  }
  const auto rep = pb::check_tables(table("m", b), table("m", c));
  ASSERT_GT(rep.rows[0].p_value, 0.05 / 10);  // the premise
  EXPECT_EQ(rep.rows[0].change, pb::Change::Regression) << pb::format_check_report(rep);
  EXPECT_NE(rep.method.find("9 vendor rows are a family of their own"), std::string::npos) << rep.method;
}
