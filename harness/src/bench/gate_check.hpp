// `popper bench gate`: per family, the gate rows measured (gate.hpp), written
// to reports/bench-<family>-gate.csv with its callgrind sidecar, and judged
// against a baseline: the one given, the one committed for this gate key
// (baselines/<gate key>/<family>-gate.csv), or, with `against`, the base
// commit built and measured in the same run. Counts are exact: a row beyond
// the threshold is a regression by itself, no re-run needed.
#pragma once
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "popper/bench_protocol.hpp"

namespace popper::bench {

struct GateCheckOptions {
  std::string source_dir = ".", build_dir;
  std::vector<std::string> families;
  std::string out;        // the CSV to write (one family); "" = reports/bench-<family>-gate.csv
  std::string baseline;   // the baseline CSV (one family); "" = the committed one
  std::string against;    // without a committed baseline, build REF (auto: default_reference) and measure it
  bool no_check = false;  // only measure and write the CSV
  int jobs = 2;           // build jobs for `against`, and callgrind runs at once
  // Non-empty: only these gate shapes, tiers, precisions (baseline rows filtered alike).
  std::vector<std::string> only_shapes, only_precisions;
  std::vector<Tier> only_tiers;
  std::function<void(const std::string&)> progress;
};

// Writes each family's check (and the functions that moved most on a row that
// changed) to `report`; returns the exit code: the worst of 0, 1 (REGRESSION
// or MISSING) and 2 (no baseline to compare with). Throws Error on a bad
// restriction, --out or --baseline with several families, or a baseline that
// says another gate key.
int run_gate_check(const GateCheckOptions& opt, std::ostream& report);

}  // namespace popper::bench
