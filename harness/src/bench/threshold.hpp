// `popper bench threshold`: the routing threshold as a measured product of a
// bench CSV, never a guess.
//
// Shapes carry their parameters in their names as <letters><digits> tokens
// (nsa: few_n256_h4_d64_l1024 -> n 256, h 4, d 64, l 1024). For each value of
// the `by` parameters (nsa: h, d) and each row pair of the same shape,
// precision and thread count:
//
//   ratio = median time(slow tier) / median time(fast tier)       (nsa: wrapped / hand)
//   wins  = ratio >= margin
//   min_axis = the smallest axis value v (nsa: l) such that every row pair
//              with axis >= v wins;  "never" when the largest axis value fails
//
// A pair with a missing or unmeasured side (incorrect, not run) never wins.
// The spread of each ratio, q25(slow)/q75(fast) .. q75(slow)/q25(fast) over
// the repetitions, is reported with it; a pair whose spread straddles the
// margin is flagged "noisy" (the decision still uses the medians).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/csv.hpp"

namespace popper::bench {

// {"n": 256, "h": 4, ...} from a shape name; tokens that are not <letters><digits> are skipped.
std::map<std::string, long> shape_parameters(const std::string& shape);

struct ThresholdOptions {
  std::string family;
  double margin = 1.2;
  std::string axis = "l";
  std::vector<std::string> by{"h", "d"};
  Tier fast_tier = Tier::Hand;
  Tier slow_tier = Tier::Wrapped;
  std::vector<int> threads;                 // empty: every thread count in the table
  std::vector<std::string> exclude_shapes;  // e.g. the family's gate shapes
};

struct ThresholdEvidence {
  std::string shape, precision;
  int threads = 1;
  long axis_value = 0;
  double fast_median = 0, slow_median = 0;  // seconds; 0 when unmeasured
  double ratio = 0, ratio_low = 0, ratio_high = 0;
  bool measured = false;
  bool wins = false;
  std::string note;  // why unmeasured, or "noisy"
};

struct ThresholdGroup {
  std::map<std::string, long> key;      // the `by` parameters
  std::optional<long> min_axis;         // nullopt: never
  std::vector<ThresholdEvidence> rows;  // ascending axis, then shape, then threads
  std::string reason;                   // one sentence: what decided it
};

struct ThresholdResult {
  ThresholdOptions options;
  std::vector<ThresholdGroup> groups;  // ascending by key
};

// Throws popper::Error when the table holds no usable row pair.
ThresholdResult derive_thresholds(const BenchTable& table, const ThresholdOptions& options);

// The report: one line per group, then its evidence rows.
std::string render_threshold_report(const ThresholdResult& result);

// The router config (YAML) with the source table's provenance:
//   thresholds: [{<by>: ..., min_<axis>: <value> | never, rows: <pairs>}, ...]
std::string render_router_config(const ThresholdResult& result, const BenchTable& source, const std::string& csv_path);

}  // namespace popper::bench
