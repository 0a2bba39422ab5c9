// Human-facing views of a bench table: the three-tier Markdown table and the
// grouped-bar SVG chart.
//
// Per (shape, precision, threads): ceiling = the best (lowest median time)
// ceiling row over the OpenBLAS core types run; then
//   FFI overhead = median time(wrapped) / median time(ceiling on the same core)
//   speedup      = median time(wrapped) / median time(hand)
//   % of peak    = throughput / measured peak (peak.hpp: peak_for)
#pragma once
#include <string>

#include "popper/bench/csv.hpp"
#include "popper/bench/peak.hpp"

namespace popper::bench {

// Picks the row of `tier` for (shape, precision, threads) with the lowest
// median among those with samples; nullptr when none.
const BenchRow* best_row(const BenchTable& t, const std::string& tier, const std::string& shape,
                         const std::string& precision, int threads);

// The `tier` row with the given backend when there is one (so wrapped/ceiling
// compares the same OpenBLAS core: FFI overhead, not core choice), else best_row.
const BenchRow* matching_row(const BenchTable& t, const std::string& tier, const std::string& shape,
                             const std::string& precision, int threads, const std::string& backend);

std::string render_markdown(const BenchTable& t, const std::string& family);
std::string render_svg(const BenchTable& t, const std::string& family, const PeakResult* peak,
                       const std::string& peak_kind_f32, const std::string& peak_kind_f64);

}  // namespace popper::bench
