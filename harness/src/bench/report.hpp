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

#include "bench/csv.hpp"
#include "bench/peak.hpp"

namespace popper::bench {

// Picks the row of `tier` for (shape, precision, threads) with the lowest
// median among those with samples; nullptr when none.
const BenchRow* best_row(const BenchTable& t, const std::string& tier, const std::string& shape,
                         const std::string& precision, int threads);

// The `tier` row with the given backend when there is one (so wrapped/ceiling
// compares the same OpenBLAS core: FFI overhead, not core choice), else best_row.
const BenchRow* matching_row(const BenchTable& t, const std::string& tier, const std::string& shape,
                             const std::string& precision, int threads, const std::string& backend);

// The roofline bound of a row; nullopt without measured peaks, flop work or bytes.
struct RooflineBound {
  double flops = 0;      // the bound, FLOP/s
  double intensity = 0;  // flop per compulsory byte
  double peak = 0;       // P(threads)
  double dram = 0;       // BW(threads) * I
  bool in_llc = false;   // working set <= measured LLC: the DRAM term does not apply
  std::string limit;     // "compute" | "DRAM" | "compute, in LLC"
};
std::optional<RooflineBound> roofline_bound(const BenchTable& t, const BenchRow& r);

std::string render_markdown(const BenchTable& t, const std::string& family);
std::string render_svg(const BenchTable& t, const std::string& family, const PeakResult* peak,
                       const std::string& peak_kind_f32, const std::string& peak_kind_f64);

}  // namespace popper::bench
