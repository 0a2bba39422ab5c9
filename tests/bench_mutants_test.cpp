// `popper bench mutants` (bench/mutants.hpp): where a family declares its bench
// mutants' rows, and how one mutant's run is judged against the clean run.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/family.hpp"
#include "bench/mutants.hpp"
#include "popper/error.hpp"

namespace {

namespace pb = popper::bench;

pb::BenchRow row(pb::Tier tier, const std::string& shape, const std::string& label, bool timed) {
  pb::BenchRow r;
  r.key.family = "dot";
  r.key.tier = tier;
  r.key.shape = shape;
  r.key.precision = "f32";
  r.verdict = pb::Verdict::parse(label, !timed);
  if (timed) r.samples = {1e-6};
  return r;
}

const pb::BenchMutantSpec& spec(pb::BenchMutant id) {
  for (const auto& m : pb::kBenchMutants)
    if (m.id == id) return m;
  throw std::logic_error("no such bench mutant");
}

TEST(BenchMutants, FamilyDeclaresItsRowsAndRejectsUnknownKeys) {
  const auto f = pb::parse_family_yaml(
      "family: dot\nbench_mutants:\n  rows: 'dot/hand/n_1k/f32/threads:1'\n  cold_rows: "
      "'dot/hand/n_1m/f32/threads:1/cold'\n",
      "f.yaml");
  EXPECT_EQ(f.bench_mutants.rows, "dot/hand/n_1k/f32/threads:1");
  EXPECT_EQ(f.bench_mutants.cold_rows, "dot/hand/n_1m/f32/threads:1/cold");
  EXPECT_THROW(pb::parse_family_yaml("family: dot\nbench_mutants:\n  row: x\n", "f.yaml"), popper::Error);
  EXPECT_THROW(pb::parse_family_yaml("family: dot\nbench_mutants:\n  rows: x\n  hot_rows: y\n", "f.yaml"),
               popper::Error);
  EXPECT_TRUE(pb::parse_family_yaml("family: dot\n", "f.yaml").bench_mutants.rows.empty());
}

TEST(BenchMutants, KilledOnlyWhenEveryHandRowIsReportedByItsGuard) {
  const std::vector<pb::BenchRow> clean = {row(pb::Tier::Hand, "a", "verified", true),
                                           row(pb::Tier::Hand, "b", "verified", true),
                                           row(pb::Tier::Wrapped, "a", "verified", true)};
  const auto& cached = spec(pb::BenchMutant::CachedResult);
  const std::string caught = "incorrect: after timing, on fresh operands: max err 3 > 1e-6";
  // The wrapped row is not the mutant's: timed as before, it does not count.
  auto r = pb::judge_bench_mutant("dot", cached, clean,
                                  {row(pb::Tier::Hand, "a", caught, false), row(pb::Tier::Hand, "b", caught, false),
                                   row(pb::Tier::Wrapped, "a", "verified", true)});
  EXPECT_EQ(r.outcome, "killed");
  EXPECT_EQ(r.rows, 2u);
  EXPECT_EQ(r.caught, 2u);
  // One hand row timed: survived, and the detail names it.
  r = pb::judge_bench_mutant("dot", cached, clean,
                             {row(pb::Tier::Hand, "a", caught, false), row(pb::Tier::Hand, "b", "verified", true)});
  EXPECT_EQ(r.outcome, "survived");
  EXPECT_EQ(r.caught, 1u);
  EXPECT_NE(r.detail.find("b/f32"), std::string::npos) << r.detail;
  // Reported failed, but by another check: not the guard this mutant names.
  r = pb::judge_bench_mutant("dot", cached, clean,
                             {row(pb::Tier::Hand, "a", caught, false),
                              row(pb::Tier::Hand, "b", "invalid: the work outlived its timer", false)});
  EXPECT_EQ(r.outcome, "survived");
  // A row missing from the mutant's run is not caught.
  r = pb::judge_bench_mutant("dot", cached, clean, {row(pb::Tier::Hand, "a", caught, false)});
  EXPECT_EQ(r.outcome, "survived");
}

TEST(BenchMutants, AMutantWithNoRowOfItsCacheModeSurvives) {
  const std::vector<pb::BenchRow> clean = {row(pb::Tier::Hand, "a", "verified", true)};  // warm only
  const auto r = pb::judge_bench_mutant("dot", spec(pb::BenchMutant::WarmUnderCold), clean, clean);
  EXPECT_EQ(r.outcome, "survived");
  EXPECT_EQ(r.rows, 0u);
}

// workers-left-spinning runs on the cold hand rows of 2 threads or more: a
// 1-thread row has no worker to leave spinning, and is not counted.
TEST(BenchMutants, AMutantOfSeveralThreadsIsJudgedOnThoseRowsOnly) {
  auto cold = [](int threads, const std::string& label, bool timed) {
    auto r = row(pb::Tier::Hand, "a", label, timed);
    r.key.cache_mode = "cold";
    r.key.threads = threads;
    return r;
  };
  const auto& spinning = spec(pb::BenchMutant::WorkersLeftSpinning);
  const std::string caught = "invalid: a thread of this process still ran 0.5 s after the timed loop";
  const std::vector<pb::BenchRow> clean = {cold(1, "verified", true), cold(2, "verified", true)};
  auto r = pb::judge_bench_mutant("dot", spinning, clean, {cold(1, "verified", true), cold(2, caught, false)});
  EXPECT_EQ(r.outcome, "killed");
  EXPECT_EQ(r.rows, 1u);
  r = pb::judge_bench_mutant("dot", spinning, clean, clean);
  EXPECT_EQ(r.outcome, "survived");
  r = pb::judge_bench_mutant("dot", spinning, {cold(1, "verified", true)}, {cold(1, "verified", true)});
  EXPECT_EQ(r.outcome, "survived");
  EXPECT_EQ(r.rows, 0u);
}

TEST(BenchMutants, AFamilyWithoutRowsIsAnError) {
  const auto f = pb::parse_family_yaml("family: dot\n", "f.yaml");
  EXPECT_THROW(pb::run_bench_mutants(f, "/nonexistent", [](const std::string&) {}), popper::Error);
}

}  // namespace
