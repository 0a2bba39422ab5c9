// bench_train: one training step (forward, backward, AdamW) of each preset of
// workloads/train/shapes.h whose set is not "none", on the hand tier (popper's
// hand GEMM and fused kernels) and the wrapped tier (OpenBLAS and the separate
// operations), 1 and 2 threads. The timed call is Trainer::train_step under
// popper::trace, as popper train runs it; the batch is fixed (its generation
// is not timed).
//
// Verification before timing, once per (shape, tier, threads): the tier's step
// on the tiny preset against the FP64 oracle within the contract's derived
// bound (falsify/train/testbed.hpp), and on the timed shape a finite loss and
// finite gradients. The FP64 oracle of a bench-sized model would take minutes
// per process; the label says what was checked.
//
// Also train_trace/span (not a protocol row, run it with --benchmark_filter):
// the cost of one span in a warm tracer, the per-span figure behind
// popper train's tracer line.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "common/suite.hpp"
#include "impl/train/train.hpp"
#include "workloads/train/shapes.h"
#include "train/testbed.hpp"

namespace {

using namespace popper::train;
namespace suite = popper::suite;
namespace trace = popper::trace;

const char* tier_name(Backend b) { return b == Backend::Hand ? "hand" : "wrapped"; }

// "" when the tier's step is right on tiny (FP64 oracle) and finite on the timed shape.
std::string verify(const popper_train_shape& sh, const StepOptions& o) {
  const Config c = popper_train_config(*popper_train_find_shape("tiny"));
  return suite::run_suite(argc, argv,
                          {{"hand", Step(c, {Backend::Hand, 1}).backend_tag()},
                           {"wrapped", Step(c, {Backend::Wrapped, 1}).backend_tag()}});
}
