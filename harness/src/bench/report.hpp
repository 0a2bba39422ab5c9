// Human-facing views of a bench table: the three-tier Markdown table, the
// grouped-bar SVG chart and the roofline.
//
// Per (shape, precision, threads): ceiling = the best (lowest median time)
// ceiling row over every vendor configuration run (OpenBLAS core types, BLIS
// sub-configurations: vendors.hpp), and the report names the winner; then
//   hand ÷ best ceiling   = median time(best ceiling) / median time(hand)
//   FFI overhead          = median time(wrapped) / median time(ceiling of the same library and configuration)
//   wrapped ÷ best ceiling = median time(best ceiling) / median time(wrapped): what the default library leaves
//   % of peak             = throughput / measured peak (peak.hpp: peak_for)
//
// Roofline (from the "roofline_peaks" metadata that popper peak writes):
//   I = flop / compulsory bytes (the bench's flop and bytes counters)
//   bound = min(P(threads), BW(threads) * I)       when the working set exceeds the measured LLC
//   bound = P(threads), labelled "in LLC"           when it fits (its traffic is not DRAM traffic)
//   % of bound = throughput / bound
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/csv.hpp"
#include "bench/peak.hpp"

namespace popper::bench {

// Picks the row of `tier` for (shape, precision, threads, cache mode) with the
// lowest median among the valid ones with samples (an invalid ceiling,
// plausibility.hpp, is never best); nullptr when none.
const BenchRow* best_row(const BenchTable& t, Tier tier, const std::string& shape, const std::string& precision,
                         int threads, const std::string& cache_mode = "warm");

// The `tier` row with the given backend (so wrapped/ceiling compares the same
// OpenBLAS core: FFI overhead, not core choice); nullptr when that row is
// invalid or was not timed.
const BenchRow* matching_row(const BenchTable& t, Tier tier, const std::string& shape, const std::string& precision,
                             int threads, const std::string& backend, const std::string& cache_mode = "warm");

// The roofline bound of a row; nullopt without measured peaks, flop work or bytes.
struct RooflineBound {
  double flops = 0;      // the bound, FLOP/s
  double intensity = 0;  // flop per compulsory byte
  double peak = 0;       // P(threads)
  double dram = 0;       // BW(threads) * I
  bool in_llc = false;   // working set <= measured LLC: the DRAM term does not apply
  bool read = false;     // the DRAM term is the suite's read of the row's own footprint
  std::string limit;     // "compute" | "DRAM" | "read of N MiB" | "compute, in LLC" | "compute, cache-resident: ..."
};
std::optional<RooflineBound> roofline_bound(const BenchTable& t, const BenchRow& r);

// The figures of one line of the three-tier table, (precision, threads, shape):
// what render_markdown prints and the HTML report (src/report/html.cpp) shows,
// computed here once. A NaN figure is unknown (printed "—").
struct ShapeFigures {
  std::string shape;
  const BenchRow* ceiling = nullptr;  // the best ceiling configuration; nullptr: no ceiling row with samples
  const BenchRow* wrapped = nullptr;  // the best wrapped row
  const BenchRow* hand = nullptr;     // the best hand row
  std::vector<const BenchRow*> invalid_ceilings;  // ceiling rows left out as implausible (plausibility.hpp)
  // Ratios of time per unit of work, so a row timing a batch compares with one timing a single call.
  double hand_vs_ceiling;              // time(best ceiling) / time(hand)
  double ffi;                          // time(wrapped) / time(ceiling of the same configuration)
  double wrapped_vs_ceiling;           // time(best ceiling) / time(wrapped)
  double hand_pct_of_peak;             // the hand row's pct_of_peak (throughput / measured peak, %)
  std::optional<RooflineBound> bound;  // of the hand row (else the ceiling's, else the wrapped's)
  const BenchRow* bound_row = nullptr;
  double hand_pct_of_bound, ceiling_pct_of_bound;  // throughput / bound (without a roofline: / measured peak), %
  // Why the bound does not hold for this shape ("" when it does): a tier measured above it. The
  // percentages of it are then left blank; no figure is judged against a bound a kernel beats.
  std::string bound_invalid;
  double peak = 0;            // without a roofline (device rows): the measured peak the rows' pct_of_peak divides by
  bool peak_is_read = false;  // peak is a read of the row's own footprint (footprint_read), not the triad
  double cv_pct[3];           // ceiling, wrapped, hand: 100 * stddev / mean (0 with one sample)
  Verdict verdict_wrapped, verdict_hand;  // the tier's verdict column, not run without a row
};
struct GroupFigures {
  std::string precision;
  int threads = 1;
  std::string cache_mode = "warm";
  std::vector<ShapeFigures> shapes;  // in the table's shape order
};
// Every (precision, threads) group of timed rows, each shape with any row in it.
std::vector<GroupFigures> table_figures(const BenchTable& t);
// The metadata lines a report shows, in order ("date", "commit", "fingerprint", ...): those the table has.
std::vector<std::pair<std::string, std::string>> report_metadata(const BenchTable& t);
// How throughput is shown: GFLOP/s for flop rows; items/s with the SI prefix
// (G, M, k or none) that keeps the table's fastest row >= 1 (decode: tokens/s).
struct ThroughputScale {
  double factor = 1e-9;
  std::string unit = "GFLOP/s";
};
ThroughputScale throughput_scale(const BenchTable& t);
// "45.2 (DRAM, 0.93 flop/B)" | "220.1 (compute, in LLC 1.2 MiB)" | "—": the bound cell of a line,
// in the table's throughput unit.
std::string bound_cell(const ShapeFigures& f, const ThroughputScale& scale);
// v formatted with printf's fmt, or "—" when NaN or <= 0.
std::string figure(double v, const char* fmt);

std::string render_markdown(const BenchTable& t, const std::string& family);

// The bar chart's value axis for data up to `max`: 0, s, 2s, ... up to the
// first multiple of s at or above max, where s = {1, 2, 2.5, 5} x 10^k is the
// smallest such step giving at most 6 intervals (129.4: 0, 25, ..., 150).
// max <= 0 is taken as 1.
std::vector<double> axis_ticks(double max);
// The table's shapes, smallest first: by the work of one iteration (the
// largest flop or item count among a shape's rows), then its bytes, then name.
std::vector<std::string> shapes_by_size(const BenchTable& t);
std::string render_svg(const BenchTable& t, const std::string& family, const PeakResult* peak,
                       const std::string& peak_kind_f32, const std::string& peak_kind_f64);

}  // namespace popper::bench
