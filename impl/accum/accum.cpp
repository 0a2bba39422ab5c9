// Accumulation orders (definitions and bounds in accum.hpp). Plain scalar
// code: the order is the specification, so nothing here may reassociate
// (the family is built with -ffp-contract=off, no fast-math).
#include "impl/accum/accum.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "impl/common/parallel.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"
#include "impl/q4k/reference.hpp"

namespace popper::accum {
namespace {

constexpr double kU = 0x1p-24;  // unit roundoff of FP32
constexpr double kU64 = 0x1p-53;

// Mutation points of the falsifiers, decided once per call.
struct Faults {
  bool kahan_no_compensation = false;  // accum-kahan-no-compensation
  bool pairwise_uneven = false;        // accum-pairwise-uneven: split after the first term
  bool warp_lanes16 = false;           // accum-warp32-lanes16: a 16-wide "warp"
  bool fp64_float_acc = false;         // accum-fp64-float-accumulator
  bool warp_tree_skips = false;        // accum-warp32-tree-skips-upper-half
};
Faults faults() {
  Faults f;
  f.kahan_no_compensation = POPPER_MUTANT("accum-kahan-no-compensation");
  f.pairwise_uneven = POPPER_MUTANT("accum-pairwise-uneven");
  f.warp_lanes16 = POPPER_MUTANT("accum-warp32-lanes16");
  f.fp64_float_acc = POPPER_MUTANT("accum-fp64-float-accumulator");
  f.warp_tree_skips = POPPER_MUTANT("accum-warp32-tree-skips-upper-half");
  return f;
}

// The terms as a function of the index: t(i) = x_i (sum) or fl(a_i b_i) (dot).
struct SumTerms {
  const float* x;
  float operator()(std::size_t i) const { return x[i]; }
  double wide(std::size_t i) const { return x[i]; }
};
struct DotTerms {
  const float* a;
  const float* b;
  float operator()(std::size_t i) const { return a[i] * b[i]; }
  double wide(std::size_t i) const { return static_cast<double>(a[i]) * b[i]; }  // exact
};

template <class T>
float sequential(const T& t, std::size_t n) {
  float s = 0.0f;
  for (std::size_t i = 0; i < n; ++i) s = s + t(i);
  return s;
}

template <class T>
float pairwise(const T& t, std::size_t begin, std::size_t n, bool uneven) {
  if (n == 0) return 0.0f;
  if (n == 1) return t(begin);
  const std::size_t h = uneven ? 1 : n / 2;
  return pairwise(t, begin, h, uneven) + pairwise(t, begin + h, n - h, uneven);
}

template <class T>
float kahan(const T& t, std::size_t n, bool no_compensation) {
  float s = 0.0f, c = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const float y = t(i) - c;
    const float u = s + y;
    c = no_compensation ? 0.0f : (u - s) - y;
    s = u;
  }
  return s;
}

template <class T>
float fp64(const T& t, std::size_t n, bool float_acc) {
  if (float_acc) {
    float s = 0.0f;
    for (std::size_t i = 0; i < n; ++i) s = s + static_cast<float>(t.wide(i));
    return s;
  }
  double s = 0.0;
  for (std::size_t i = 0; i < n; ++i) s += t.wide(i);
  return static_cast<float>(s);
}

template <class T>
float warp(const T& t, std::size_t n, bool lanes16, bool tree_skips) {
  const std::size_t lanes = lanes16 ? 16 : 32;
  float lane[32] = {};
  for (std::size_t i = 0; i < n; ++i) lane[i % lanes] = lane[i % lanes] + t(i);
  for (std::size_t off = tree_skips ? 8 : lanes / 2; off > 0; off /= 2)
    for (std::size_t l = 0; l < off; ++l) lane[l] = lane[l] + lane[l + off];
  return lane[0];
}

template <class T>
float reduce(const T& t, std::size_t n, Order order, const Faults& f) {
  switch (order) {
    case Order::Sequential: return sequential(t, n);
    case Order::Pairwise: return pairwise(t, 0, n, f.pairwise_uneven);
    case Order::Kahan: return kahan(t, n, f.kahan_no_compensation);
    case Order::Fp64: return fp64(t, n, f.fp64_float_acc);
    case Order::Warp32: return warp(t, n, f.warp_lanes16, f.warp_tree_skips);
  }
  return 0.0f;
}

double log2_ceil(std::size_t n) {
  double k = 0;
  for (std::size_t p = 1; p < n; p *= 2) ++k;
  return k;
}

}  // namespace

const char* to_string(Order o) {
  switch (o) {
    case Order::Sequential: return "sequential";
    case Order::Pairwise: return "pairwise";
    case Order::Kahan: return "kahan";
    case Order::Fp64: return "fp64";
    case Order::Warp32: return "warp32";
  }
  return "?";
}

Order parse_order(const std::string& name) {
  for (Order o : kAllOrders)
    if (name == to_string(o)) return o;
  throw InvalidArgument("unknown accumulation order '" + name + "' (sequential, pairwise, kahan, fp64, warp32)");
}

float sum(std::span<const float> t, Order order) { return reduce(SumTerms{t.data()}, t.size(), order, faults()); }

float dot(std::span<const float> a, std::span<const float> b, Order order) {
  if (a.size() != b.size())
    throw InvalidArgument("accum::dot: lengths differ (" + std::to_string(a.size()) + " vs " +
                          std::to_string(b.size()) + ")");
  return reduce(DotTerms{a.data(), b.data()}, a.size(), order, faults());
}

double gamma(double k, double u) {
  const double ku = k * u;
  return ku >= 1 ? std::numeric_limits<double>::infinity() : ku / (1 - ku);
}

double sum_bound_factor(Order order, std::size_t n) {
  const double nd = static_cast<double>(n);
  switch (order) {
    case Order::Sequential: return gamma(n > 0 ? nd - 1 : 0, kU);
    case Order::Pairwise: return gamma(log2_ceil(n), kU);
    case Order::Kahan: return 2 * kU + 4 * nd * kU * kU;
    case Order::Fp64: return kU + gamma(n > 0 ? nd - 1 : 0, kU64) * (1 + kU);
    case Order::Warp32: return gamma(n > 32 ? std::ceil(nd / 32) + 4 : 5, kU);
  }
  return 0;
}

double dot_bound_factor(Order order, std::size_t n) {
  const double nd = static_cast<double>(n);
  switch (order) {
    case Order::Sequential: return gamma(nd, kU);
    case Order::Pairwise: return gamma(log2_ceil(n) + 1, kU);
    case Order::Kahan: return 3 * kU + 4 * nd * kU * kU + 2 * kU * kU;
    case Order::Fp64: return sum_bound_factor(Order::Fp64, n);
    case Order::Warp32: return gamma(n > 32 ? std::ceil(nd / 32) + 5 : 6, kU);
  }
  return 0;
}

void gemv_q4k(std::span<const q4k::Block> w, std::int64_t rows, std::int64_t cols, std::span<const float> x,
              std::span<float> y, Order order, int threads) {
  q4k::check_gemv_args(rows, cols, w.size(), x.size(), y.size());
  if (threads < 1) throw InvalidArgument("accum::gemv_q4k: threads must be >= 1");
  const Faults f = faults();
  const std::size_t nb = static_cast<std::size_t>(cols / q4k::kBlockWeights);
  parallel::run(static_cast<std::size_t>(rows), threads, [&](std::size_t r0, std::size_t r1, int) {
    std::vector<float> row(static_cast<std::size_t>(cols));
    for (std::size_t r = r0; r < r1; ++r) {
      q4k::reference::dequantize_row(w.subspan(r * nb, nb), row);
      y[r] = reduce(DotTerms{row.data(), x.data()}, row.size(), order, f);
    }
  });
}

}  // namespace popper::accum
