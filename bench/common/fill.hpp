// The deterministic operand fill, for popper's own suites and testbeds under
// the name they use (popper/bench_protocol.hpp defines it).
#pragma once
#include "popper/bench_protocol.hpp"

namespace popper::suite {

using popper::bench::fill_uniform;

}  // namespace popper::suite
