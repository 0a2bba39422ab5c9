// The dot family's suite: dotkit::dot (hand) and dotkit::blas_dot (wrapped)
// on every shape of workloads/dot_shapes.h, FP32, one thread. Each row is
// checked before it is timed against the FP64 product with the contract's
// bound (dot-v1.yaml, FALSIFY-DOT-001): |dot - x.y| <= (gamma_{ceil(log2 n)+1}
// + gamma64_n) S for the hand kernel; BLAS sums in an order of its own, so
// its row is held to the recursive-summation bound gamma_n S. After the timed
// loop each row is checked again on fresh operands (popper::bench::Recheck).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dotkit/blas_dot.hpp"
#include "dotkit/dot.hpp"
#include "popper/bench.hpp"
#include "workloads/dot_shapes.h"

extern "C" char* openblas_get_corename(void);

namespace {

namespace pb = popper::bench;

double gamma(double k, double u) { return k * u / (1 - k * u); }

pb::Verdict check(float got, const std::vector<float>& x, const std::vector<float>& y, bool pairwise) {
  double exact = 0, s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double p = double(x[i]) * double(y[i]);
    exact += p;
    s += std::fabs(p);
  }
  const double n = double(x.size()), u = std::ldexp(1.0, -24);
  const double k = pairwise ? std::ceil(std::log2(n)) + 1 : n;
  const double bound = (gamma(k, u) + gamma(n, std::ldexp(1.0, -53))) * s, err = std::fabs(double(got) - exact);
  if (!(err <= bound))
    return pb::Verdict::incorrect("error " + std::to_string(err) + " > bound " + std::to_string(bound));
  return pb::Verdict::verified();
}

void bench_dot(benchmark::State& state, const pb::Case& c) {
  const auto n = static_cast<std::size_t>(DOTKIT_DOT_SHAPES[c.shape].n);
  std::vector<float> x(n), y(n);
  pb::fill_uniform(x, 1);
  pb::fill_uniform(y, 2);
  const bool hand = c.tier == pb::Tier::Hand;
  float result = 0;
  auto call = [&] {
    if (!hand) result = dotkit::blas_dot(x, y);
    // Under the skipped-work bench mutant: the dot of the first half only.
    else if (pb::skips_work(c)) result = dotkit::dot(std::span(x).first(n / 2), std::span(y).first(n / 2));
    else result = dotkit::dot(x, y);
    benchmark::DoNotOptimize(result);
  };
  call();
  // Verification after timing: fresh operands, one more call through the timed path.
  const pb::Recheck recheck{[&](std::uint64_t seed) {
                              pb::fill_uniform(x, seed);
                              pb::fill_uniform(y, seed + 1);
                            },
                            [&] { return check(result, x, y, hand); }};
  pb::measure(state, c, check(result, x, y, hand), call, {.work = 2.0 * double(n), .bytes = 2.0 * double(n) * 4},
              recheck);
}

}  // namespace

int main(int argc, char** argv) {
  pb::Family("dot")
      .shapes(DOTKIT_DOT_SHAPES, DOTKIT_DOT_SHAPE_COUNT)
      .tiers({pb::Tier::Wrapped, pb::Tier::Hand})
      .precisions({"f32"})
      .threads({1})
      .add(bench_dot);
  return pb::run_suite(
      argc, argv,
      {{pb::Tier::Wrapped, std::string("openblas:") + openblas_get_corename()}, {pb::Tier::Hand, "dotkit"}});
}
