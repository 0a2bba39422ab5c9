// bench compare's trials (compare.hpp) on a fake suite: a step whose rows were
// noisier than the plan assumed gets top-up trials, up to the cap, numbered
// after the planned ones, and so do the steps it pairs with; a quiet step
// gets none; no top-up when the trial count was given; a budget stops the
// first trial once spent and a later one before a step that would overrun it;
// a step that hangs is killed at the step limit, said, and its rows left out;
// the suites share the reference directory the run's environment names.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench/compare.hpp"
#include "bench/interval.hpp"
#include "bench/trials.hpp"
#include "popper/bench_protocol.hpp"
#include "popper/runtime_paths.hpp"

namespace {

namespace fs = std::filesystem;
namespace pb = popper::bench;

// Writes build/bin/<exe>, a fake suite: it lists `rows`, sleeps $FAKE_SLEEP,
// runs `body` (which sets name and t, the row and its milliseconds, from
// $filter) and writes that one repetition.
void write_fake_suite(const fs::path& build, const std::string& exe, const std::vector<std::string>& rows,
                      const std::string& body) {
  fs::create_directories(build / "bin");
  const fs::path path = build / "bin" / exe;
  std::ofstream out(path);
  out << "#!/bin/sh\ncase \"$*\" in *--benchmark_list_tests*)";
  for (const auto& r : rows) out << " echo " << r << ";";
  out << R"( exit 0;; esac
for a in "$@"; do case $a in --benchmark_out=*) out=${a#--benchmark_out=};; --benchmark_filter=*) filter=$a;; esac; done
[ -n "$FAKE_SLEEP" ] && sleep "$FAKE_SLEEP"
)" << body
      << R"(
printf '{"context": {}, "benchmarks": [{"name": "%s", "run_name": "%s", "run_type": "iteration", "repetition_index": 0, "iterations": 1, "real_time": %s, "time_unit": "ms", "flop": 1000, "label": "verified"}]}\n' $name $name $t > "$out"
)";
  out.close();
  fs::permissions(path, fs::perms::owner_all);
}

fs::path fake_dir() {
  const fs::path dir = popper::make_temp_dir("popper-compare");
  if (dir.empty()) throw std::runtime_error("cannot create a temporary directory");
  return dir;
}

// bin/bench_fake: two hand rows; "quiet" always takes 1 ms, "loud" alternates 1 and 1.5 ms.
fs::path fake_build() {
  const fs::path dir = fake_dir();
  write_fake_suite(dir, "bench_fake", {"fake/hand/quiet/f32/threads:1", "fake/hand/loud/f32/threads:1"},
                   R"(shape=quiet; case $filter in *loud*) shape=loud;; esac
[ -n "$FAKE_REF_LOG" ] && echo "$POPPER_BENCH_REFERENCE_DIR" >> "$FAKE_REF_LOG"
[ "$FAKE_HANG" = $shape ] && exec sleep 20  # past any step limit a test sets, yet finite
n=$(cat "$0.$shape" 2>/dev/null || echo 0); echo $((n + 1)) > "$0.$shape"
t=1.0; [ $shape = loud ] && [ $((n % 2)) = 1 ] && t=1.5
name=fake/hand/$shape/f32/threads:1)");
  return dir;
}

// The family descriptor of bin/bench_fake.
pb::FamilyDescriptor fake_family() {
  return pb::parse_family_yaml("family: fake\nexecutable: bench_fake\nceilings: []\nwork_unit: flop\n", "f.yaml");
}

pb::CompareOptions options(const fs::path& build) {
  pb::CompareOptions co;
  co.build_dir = build.string();
  co.shapes = {"quiet", "loud"};
  co.tiers = {pb::Tier::Hand};
  co.precisions = {"f32"};
  co.threads = {1};
  co.trials = 2;
  co.reps_per_trial = 1;
  co.first_trial = 10;
  return co;
}

std::set<int> trials_of(const pb::BenchTable& t, const std::string& shape) {
  for (const auto& r : t.rows)
    if (r.key.shape == shape) return {r.trials.begin(), r.trials.end()};
  return {};
}

TEST(BenchCompare, StepsNoisierThanPlannedGetTopUpTrials) {
  const fs::path build = fake_build();
  const auto fam = fake_family();
  auto co = options(build);
  co.top_up_trials = 3;
  co.top_up_alpha = 0.001;
  const auto t = pb::run_compare(co, fam, pb::MachineInfo{}, nullptr);
  EXPECT_EQ(trials_of(t, "quiet"), (std::set<int>{10, 11}));             // no noise: power needs no more
  EXPECT_EQ(trials_of(t, "loud"), (std::set<int>{10, 11, 12, 13, 14}));  // needs many more: the cap
  EXPECT_NE(t.meta("top_up").value_or("").find("3 process(es)"), std::string::npos) << t.meta("top_up").value_or("");

  co.top_up_trials = 0;  // a given trial count: exactly that
  const auto fixed = pb::run_compare(co, fam, pb::MachineInfo{}, nullptr);
  EXPECT_EQ(trials_of(fixed, "loud"), (std::set<int>{10, 11}));
  EXPECT_FALSE(fixed.meta("top_up"));
  fs::remove_all(build);
}

// A ratio pairs its sides by trial: a top-up of its noisy side alone would
// pair with nothing, so every step of the shape, thread count and precision
// tops up with it; a step of another precision does not.
TEST(BenchCompare, AStepsTopUpTrialsAreTheStepsItPairsWithToo) {
  const fs::path build = fake_dir();
  write_fake_suite(build, "bench_fake",
                   {"fake/hand/loud/f32/threads:1", "fake/wrapped/loud/f32/threads:1", "fake/hand/loud/f64/threads:1",
                    "fake/hand/quiet/f32/threads:1"},
                   R"(tier=hand; case $filter in *wrapped*) tier=wrapped;; esac
shape=quiet; case $filter in *loud*) shape=loud;; esac
prec=f32; case $filter in *f64*) prec=f64;; esac
n=$(cat "$0.$tier.$shape.$prec" 2>/dev/null || echo 0); echo $((n + 1)) > "$0.$tier.$shape.$prec"
t=1.0; [ $tier/$shape/$prec = hand/loud/f32 ] && [ $((n % 2)) = 1 ] && t=1.5
name=fake/$tier/$shape/$prec/threads:1)");
  auto co = options(build);
  co.tiers = {pb::Tier::Hand, pb::Tier::Wrapped};
  co.precisions = {"f32", "f64"};
  co.top_up_trials = 3;
  co.top_up_alpha = 0.001;
  const auto t = pb::run_compare(co, fake_family(), pb::MachineInfo{}, nullptr);
  std::map<std::string, std::set<int>> trials;
  for (const auto& r : t.rows)
    trials[pb::tier_text(r.key.tier) + "/" + r.key.shape + "/" + r.key.precision] = {r.trials.begin(), r.trials.end()};
  const std::set<int> planned{10, 11}, topped_up{10, 11, 12, 13, 14};
  EXPECT_EQ(trials["hand/loud/f32"], topped_up);     // noisy: the cap
  EXPECT_EQ(trials["wrapped/loud/f32"], topped_up);  // steady, but it pairs with the noisy one
  EXPECT_EQ(trials["hand/loud/f64"], planned);       // another precision pairs with neither
  EXPECT_EQ(trials["hand/quiet/f32"], planned);
  EXPECT_NE(t.meta("top_up").value_or("").find("6 process(es)"), std::string::npos) << t.meta("top_up").value_or("");
  fs::remove_all(build);
}

TEST(BenchCompare, ABudgetStopsATrialBeforeAStepThatWouldOverrunItAndKeepsTheRowsMeasured) {
  // Each step takes about 1.5 s (more in a sanitizer build). The first trial
  // runs on past the forecast (3 s > 2.5 s) to time every step once; the
  // second stops before its first step.
  const fs::path build = fake_build();
  const auto fam = fake_family();
  auto co = options(build);
  co.env = {{"FAKE_SLEEP", "1.5"}};
  co.budget_seconds = 2.5;
  const auto first = pb::run_compare(co, fam, pb::MachineInfo{}, nullptr);
  ASSERT_EQ(first.rows.size(), 2u);
  for (const auto& r : first.rows)
    EXPECT_EQ((std::set<int>{r.trials.begin(), r.trials.end()}), (std::set<int>{10})) << r.key.shape;

  co.budget_seconds = 0.3;  // spent by the first step: the first trial stops there
  const auto t = pb::run_compare(co, fam, pb::MachineInfo{}, nullptr);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ((std::set<int>{t.rows[0].trials.begin(), t.rows[0].trials.end()}), (std::set<int>{10}));

  co.env.clear();
  co.budget_seconds = 0;  // no budget: every step of both trials
  const auto all = pb::run_compare(co, fam, pb::MachineInfo{}, nullptr);
  EXPECT_EQ(all.rows.size(), 2u);
  fs::remove_all(build);
}

// Every suite process of a run reads the reference directory its environment
// names (bench compare's re-measures share the command's), or one of the
// run's own that is gone once the run ends.
TEST(BenchCompare, SuitesShareTheReferenceDirectoryTheRunNamesOrOneOfTheRunsOwn) {
  const fs::path build = fake_build();
  const auto fam = fake_family();
  const auto dirs_seen = [&]() {
    std::set<std::string> seen;
    std::ifstream in(build / "refs.log");
    for (std::string line; std::getline(in, line);) seen.insert(line);
    fs::remove(build / "refs.log");
    return seen;
  };
  auto co = options(build);
  co.env = {{"FAKE_REF_LOG", (build / "refs.log").string()}};
  {
    const pb::SharedReferences references;
    references.add_to(co.env);
    ASSERT_EQ(co.env.back().first, popper::bench::kReferenceDirEnv);
    const std::string named = co.env.back().second;
    pb::run_compare(co, fam, pb::MachineInfo{}, nullptr);
    pb::run_compare(co, fam, pb::MachineInfo{}, nullptr);
    EXPECT_EQ(dirs_seen(), (std::set<std::string>{named}));
    EXPECT_TRUE(fs::is_directory(named)) << "a run removed the directory its caller holds";
  }
  co.env.pop_back();
  pb::run_compare(co, fam, pb::MachineInfo{}, nullptr);
  const auto own = dirs_seen();
  ASSERT_EQ(own.size(), 1u);
  EXPECT_FALSE(own.begin()->empty());
  EXPECT_FALSE(fs::exists(*own.begin())) << "the run's own directory outlived it";
  fs::remove_all(build);
}

// A vendor row implausible after the planned trials (here a wrapped row whose
// 2 threads run at a tenth of its 1-thread throughput) is measured again in
// what is left of the budget; with none left it is not, the run says so and
// the row is left out as implausible.
TEST(BenchCompare, AnImplausibleVendorRowIsMeasuredAgainOnlyWithinTheBudget) {
  const fs::path build = fake_dir();
  // With $FAKE_SLOW_SECOND (a marker file's path), whichever step runs second
  // sleeps: the first trial's two steps both run within the budget however
  // slowly a loaded host starts the first, and the second spends it.
  write_fake_suite(build, "bench_slow2", {"fake/wrapped/w/f32/threads:1", "fake/wrapped/w/f32/threads:2"},
                   R"(t=1.0; th=1; case $filter in *threads:2*) t=10.0; th=2;; esac
if [ -n "$FAKE_SLOW_SECOND" ]; then if [ -e "$FAKE_SLOW_SECOND" ]; then sleep 3; else : > "$FAKE_SLOW_SECOND"; fi; fi
name=fake/wrapped/w/f32/threads:$th)");
  const auto fam = pb::parse_family_yaml(
      "family: fake\nexecutable: bench_slow2\nceilings: []\nwork_unit: flop\nwrapped_vendor: fake\n", "f.yaml");
  pb::CompareOptions co;
  co.build_dir = build.string();
  co.shapes = {"w"};
  co.tiers = {pb::Tier::Wrapped};
  co.precisions = {"f32"};
  co.threads = {1, 2};
  co.trials = 2;
  co.reps_per_trial = 1;
  std::vector<std::string> said;
  co.progress = [&said](const std::string& s) { said.push_back(s); };
  const auto saying = [&said](const std::string& what) {
    return std::any_of(said.begin(), said.end(),
                       [&](const std::string& s) { return s.find(what) != std::string::npos; });
  };
  const auto trials_of_slow_row = [](const pb::BenchTable& t) {
    for (const auto& r : t.rows)
      if (r.key.threads == 2) return std::set<int>{r.trials.begin(), r.trials.end()};
    return std::set<int>{};
  };

  co.env = {{"FAKE_SLOW_SECOND", (build / "first_step_ran").string()}};
  co.budget_seconds = 2.5;  // spent by the first trial's second step
  const auto spent = pb::run_compare(co, fam, pb::MachineInfo{}, nullptr);
  EXPECT_TRUE(saying("the budget is spent, so it is not measured again"));
  EXPECT_FALSE(saying("measuring it again"));
  EXPECT_EQ(trials_of_slow_row(spent), (std::set<int>{0}));

  said.clear();
  co.env.clear();
  co.budget_seconds = 0;  // no budget: measured again, its samples those of new trials
  const auto again = pb::run_compare(co, fam, pb::MachineInfo{}, nullptr);
  EXPECT_TRUE(saying("measuring it again"));
  EXPECT_EQ(trials_of_slow_row(again), (std::set<int>{2, 3}));
  fs::remove_all(build);
}

TEST(BenchCompare, AHungStepIsKilledAtTheStepLimitWithAWarningAndTheOtherRowsKept) {
  const fs::path build = fake_build();
  const auto fam = fake_family();
  auto co = options(build);
  co.env = {{"FAKE_HANG", "loud"}};
  co.step_timeout_seconds = 0.5;
  std::vector<std::string> said;
  co.progress = [&said](const std::string& s) { said.push_back(s); };
  const auto start = std::chrono::steady_clock::now();
  const auto t = pb::run_compare(co, fam, pb::MachineInfo{}, nullptr);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 60.0);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].key.shape, "quiet");
  int killed = 0;
  for (const auto& s : said)
    if (s.find("fake/hand/loud/f32/threads:1 failed: timed out (killed) after 0.5 s, the step limit") !=
        std::string::npos)
      ++killed;
  EXPECT_EQ(killed, 2) << "one warning per trial";
  fs::remove_all(build);
}

}  // namespace
