// bench_q4k: the wrapped (ggml's CPU backend through popper::q4k::ggml::CpuMatVec,
// repacked weights as llama.cpp serves them), hand (popper::q4k::cpu::gemv over
// popper's own packed layout, cpu::PackedWeights, repacked once before timing as
// a server repacks at load) and reference tiers over workloads/q4k/shapes.h.
//
//   y = W x,  W rows x cols in Q4_K,  FLOP = 2 rows cols,  bytes = W + x + y
//
// Before its first timed loop (once per process: Fixture), every tier's y is
// checked against the FP64 reference on up to 256 rows: the hand tier within
// its derived bound (falsify/q4k/testbed.hpp), every tier's error
// max_r |y - y_ref| / sum|w x| written into the row's label ("verified(err
// 3.9e-06)"), so a faster but less accurate tier shows as such.
// After timing, the hand and wrapped tiers are checked again on a fresh x
// (popper::bench::Recheck), then the physical bound (q4k/bandwidth_bound.hpp):
// a repetition faster than this machine can read the same bytes on the same
// threads is reported "invalid: ..." (the row then counts as incorrect).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/fill.hpp"
#include "common/cold_row_pool.hpp"
#include "common/read_bandwidth.hpp"
#include "impl/q4k/bandwidth_bound.hpp"
#include "impl/q4k/cpu_q4k.hpp"
#include "impl/q4k/lib_ggml.hpp"
#include "impl/q4k/reference.hpp"
#include "popper/bench.hpp"
#include "popper/error.hpp"
#include "q4k/testbed.hpp"
#include "workloads/q4k/shapes.h"

namespace {

namespace suite = popper::suite;
namespace pb = popper::bench;
namespace q4k = popper::q4k;
namespace tb = popper::q4k::testbed;
using Clock = std::chrono::steady_clock;

using Tier = pb::Tier;

bool is_gate(const popper_q4k_shape& s) { return std::strcmp(s.set, "gate") == 0; }

using Inputs = tb::Problem;  // W and x
Inputs make_inputs(const popper_q4k_shape& sh) {
  Inputs in{q4k::Matrix{sh.rows, sh.cols, std::vector<q4k::Block>(std::size_t(sh.rows) * std::size_t(sh.cols / 256))},
            std::vector<float>(std::size_t(sh.cols))};
  popper_q4k_fill_blocks(reinterpret_cast<unsigned char*>(in.w.blocks.data()), in.w.blocks.size(), POPPER_Q4K_SEED);
  suite::fill_uniform(in.x, POPPER_Q4K_SEED + 1);
  return in;
}

// One benchmark's operands, kernel and verification, built on its first call
// and kept for the rest of the process. Google Benchmark calls the function
// again for every sizing run and repetition; rebuilt each time, a tier began
// every repetition by writing 75 MB of fresh operands, which the ceiling
// programs (built once, timed many times) never do, and the hand tier's
// repetitions of big_32768x4096 spread over 2.9-4.4 ms against the ceiling's
// 2.9-3.3. `bench compare` runs one benchmark per process, so one fixture is
// kept at a time.
struct Fixture {
  std::string name;  // the benchmark it serves
  Inputs in;
  std::unique_ptr<q4k::ggml::CpuMatVec> mv;
  q4k::cpu::PackedWeights packed;
  std::unique_ptr<q4k::cpu::PackedWeights> half;  // the first half of W's rows (the skipped-work bench mutant's)
  std::vector<float> y;                           // the tier's output (the reference's in yd)
  std::vector<double> yd;
  std::vector<double> read;  // the bound's probe, taken before the kernel existed
  pb::Verdict verdict;
};

// The tier's y against the FP64 reference on up to 256 rows: the hand tier within its derived bound, every tier's
// scaled error in the label. `gross`: also fail a scaled error above 1e-2, far above any tier's rounding (ggml's Q8_K
// activations: ~7e-4) and far below the O(1) error of a y computed for other inputs.
pb::Verdict check_rows(const Fixture& f, Tier tier, bool gross) {
  const std::int64_t rows = f.in.rows(), cols = f.in.cols();
  std::vector<std::int64_t> sample;
  for (std::int64_t r = 0; r < rows; r += std::max<std::int64_t>(1, rows / 256)) sample.push_back(r);
  const auto stats = tb::row_stats(f.in, sample);
  std::vector<float> ys;
  for (auto r : sample) ys.push_back(f.y[std::size_t(r)]);
  if (tier == Tier::Hand) {
    const auto cmp = tb::compare(ys, stats, [&](std::size_t k) { return tb::hand_bound(stats, k, cols); });
    if (!cmp.ok) return pb::Verdict::incorrect(cmp.message);
  }
  const double err = tb::scaled_error(ys, stats);
  if (gross && !(err <= 1e-2)) return pb::Verdict::incorrect("scaled error", err, 1e-2);
  return pb::Verdict::verified(
      fmt::format("err {:.2e}{}", err, sample.size() < std::size_t(rows) ? " sampled 256 rows" : ""));
}

std::unique_ptr<Fixture> build_fixture(const std::string& name, const pb::Case& c) {
  const Tier tier = c.tier;
  const int threads = c.threads;
  const popper_q4k_shape& sh = POPPER_Q4K_SHAPES[c.shape];
  auto f = std::make_unique<Fixture>();
  f->name = name;
  const auto rows = std::int64_t(sh.rows), cols = std::int64_t(sh.cols);
  // The bound first, before any kernel's worker threads exist: they must not
  // share the cores with the probe, and a ggml backend must not idle through
  // one (ProbeAfterTiming).
  if (tier != Tier::Reference)
    f->read = suite::read_bandwidth(std::size_t(q4k::gemv_bytes(rows, cols)), threads, 5, c.cache);
  f->in = make_inputs(sh);
  f->y.assign(std::size_t(rows), 0.0f);
  if (tier == Tier::Reference) f->yd.assign(std::size_t(rows), 0.0);
  try {
    if (tier == Tier::Wrapped)
      f->mv = std::make_unique<q4k::ggml::CpuMatVec>(f->in.w.blocks, rows, cols, threads, true);
    if (tier == Tier::Hand) f->packed = q4k::cpu::PackedWeights(f->in.w.blocks, rows, cols);
  } catch (const popper::Unsupported& e) {
    f->verdict = pb::Verdict::not_run(e.what());
    return f;
  }
  if (tier == Tier::Reference) {
    f->verdict = pb::Verdict::not_verified("the reference is the oracle");
    return f;
  }
  try {
    if (tier == Tier::Wrapped) f->mv->run(f->in.x, f->y);
    else q4k::cpu::gemv(f->packed, f->in.x, f->y, {threads, q4k::cpu::Isa::Auto});
    f->verdict = check_rows(*f, tier, false);
  } catch (const std::exception& e) {
    f->verdict = pb::Verdict::incorrect(std::string("threw ") + e.what());
  }
  return f;
}

void bench_q4k(benchmark::State& state, const pb::Case& c) {
  static std::unique_ptr<Fixture> kept;
  const popper_q4k_shape& sh = POPPER_Q4K_SHAPES[c.shape];
  const Tier tier = c.tier;
  const int threads = c.threads;
  const std::string name = format_bench_name(c.name());
  if (!kept || kept->name != name) {
    kept.reset();  // the previous benchmark's operands go before this one's are built
    kept = build_fixture(name, c);
  }
  Fixture& f = *kept;
  if (!pb::timeable(f.verdict)) return pb::skip(state, f.verdict);
  const auto rows = std::int64_t(sh.rows), cols = std::int64_t(sh.cols);
  const q4k::cpu::CpuOptions opts{threads, q4k::cpu::Isa::Auto};
  auto timed = [&] {  // the injected slowdown is popper_bench_call_hand's
    switch (tier) {
      case Tier::Wrapped: f.mv->run(f.in.x, f.y); break;
      case Tier::Hand:
        if (pb::skips_work(c)) {  // the first half of the rows; the rest of y left as it was
          const std::int64_t half = rows / 2;
          if (!f.half)
            f.half = std::make_unique<q4k::cpu::PackedWeights>(
                std::span(f.in.w.blocks).first(std::size_t(half * (cols / 256))), half, cols);
          q4k::cpu::gemv(*f.half, f.in.x, std::span(f.y).first(std::size_t(half)), opts);
          break;
        }
        q4k::cpu::gemv(f.packed, f.in.x, f.y, opts);
        break;
      default: q4k::reference::gemv(f.in.w.blocks, rows, cols, f.in.x, f.yd); break;
    }
  };
  // After timing: a fresh x (W is packed once, as a server repacks at load),
  // one more call, the check again. The timed loop ends where the refill begins.
  std::optional<Clock::time_point> loop_end;
  pb::Recheck recheck;
  if (tier != Tier::Reference) {
    recheck.refill = [&](std::uint64_t seed) {
      loop_end = Clock::now();
      suite::fill_uniform(f.in.x, POPPER_Q4K_SEED ^ seed);
    };
    recheck.verify = [&] { return check_rows(f, tier, true); };
  }
  const double bytes = q4k::gemv_bytes(rows, cols);
  suite::ColdRowPool pool(c);
  const auto t0 = Clock::now();
  pb::measure(state, c, f.verdict, timed,
              {.work = 2.0 * double(rows) * double(cols), .bytes = bytes, .wake = pool.wake(), .rest = pool.rest()},
              recheck);
  const auto t1 = loop_end.value_or(Clock::now());
  if (state.error_occurred()) return;
  // A cold row's wall time includes its evictions, so the check against the
  // read could not fail there: the report holds its time against the cold read.
  if (c.cache == pb::CacheMode::Warm) {
    const double per_iter = std::chrono::duration<double>(t1 - t0).count() / double(state.iterations());
    const double sample[1] = {per_iter};
    const auto verdict = suite::judge_read_bound(bytes, sample, f.read, std::size_t(bytes), threads,
                                                 suite::ProbeAfterTiming::only_above_bound);
    if (!verdict.valid) return pb::skip(state, pb::Verdict::parse(verdict.text, true));
  }
  // The fastest this footprint was read on these threads (from memory, for a
  // cold row): the report's bound for the row (a stream of a few LLCs is
  // partly served from cache).
  if (!f.read.empty()) state.counters["read_bytes_per_second"] = *std::max_element(f.read.begin(), f.read.end());
}

void register_all() {
  pb::Family("q4k")
      .shapes(POPPER_Q4K_SHAPES, POPPER_Q4K_SHAPE_COUNT)
      .tiers({Tier::Wrapped, Tier::Hand, Tier::Reference})
      .precisions({"q4k"})
      .threads({1, 2})
      .cache_modes({pb::CacheMode::Warm, pb::CacheMode::Cold})
      // The reference is FP64 scalar: gate shapes, one thread, warm. Cold rows: the full
      // shapes, whose weights a decode step streams from memory once per token.
      .where([](const pb::Case& c) {
        const bool gate = is_gate(POPPER_Q4K_SHAPES[c.shape]);
        if (c.cache == pb::CacheMode::Cold) return !gate && c.tier != Tier::Reference;
        return c.tier != Tier::Reference || (gate && c.threads == 1);
      })
      .add(bench_q4k);
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  return pb::run_suite(
      argc, argv,
      {{Tier::Wrapped, q4k::ggml::status().usable() ? q4k::ggml::cpu_backend_tag() + "+repack" : "ggml-cpu"},
       {Tier::Hand, q4k::cpu::backend_tag(q4k::cpu::Isa::Auto)},
       {Tier::Reference, "reference"}});
}
