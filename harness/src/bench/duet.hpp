// `popper bench check --against REF`: the base commit, built in the build
// tree, and this build run side by side in alternating trials, ABBA order
// (current, base; base, current; base, current; current, base; ...) and each
// trial's steps shuffled, so that noise the two share (load, clock) cancels.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "bench/csv.hpp"

namespace popper::bench {

struct DuetOptions {
  std::string source_dir = ".", build_dir;
  std::string against;  // a commit; auto = the last commit that changed baselines/
  std::string family;
  std::vector<std::string> shapes{"gate"}, precisions{"f32", "f64"};
  std::vector<int> threads{1, 2};
  int trials = 6;  // per side
  int jobs = 2;    // build jobs
  std::function<void(const std::string&)> progress;
};

struct Duet {
  BenchTable base, current;
};

// Whether trial t runs the current build first (ABBA).
bool current_first(int trial);

// The alternation alone: measure(current, trial) is one trial of one side;
// each side's trials are merged into its table (metadata of its first trial).
Duet alternate(int trials, const std::function<BenchTable(bool current, int trial)>& measure);

// Builds the base commit and runs both (wrapped and hand tiers, 2 repetitions
// a trial). The base table's commit is the base's sha and its fingerprint the
// current's. Throws Error below 2 trials or when the family does not exist at
// the base commit.
Duet run_duet(const DuetOptions& opt);

}  // namespace popper::bench
