// Accumulation orders (contracts/accum/accumulation-order-v1.yaml): FALSIFY-ACC-001
// (each order is its definition), 002/003 (Higham bounds on random and
// adversarial inputs), 004 (the ordered Q4_K GEMV), KANI-ACC-001 (every term
// counted once).
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <bit>
#include <cmath>
#include <random>

#include "impl/accum/accum.hpp"
#include "popper/binding.hpp"
#include "impl/q4k/reference.hpp"
#include "q4k/testbed.hpp"

namespace {

using namespace popper::accum;

// ---- the definitions, restated literally (the specification the code must equal)

float spec_sequential(const std::vector<float>& t) {
  float s = 0;
  for (float v : t) s = s + v;
  return s;
}
float spec_pairwise(const float* t, std::size_t n) {
  if (n == 0) return 0;
  if (n == 1) return t[0];
  const std::size_t h = n / 2;
  return spec_pairwise(t, h) + spec_pairwise(t + h, n - h);
}
float spec_kahan(const std::vector<float>& t) {
  volatile float s = 0, c = 0;  // volatile: the compensation must not be simplified away
  for (float v : t) {
    const float y = v - c;
    const float u = s + y;
    c = (u - s) - y;
    s = u;
  }
  return s;
}
float spec_fp64(const std::vector<double>& t) {
  double s = 0;
  for (double v : t) s += v;
  return static_cast<float>(s);
}
float spec_warp32(const std::vector<float>& t) {
  float a[32] = {};
  for (std::size_t i = 0; i < t.size(); ++i) a[i % 32] = a[i % 32] + t[i];
  for (int off = 16; off >= 1; off /= 2)
    for (int l = 0; l < off; ++l) a[l] = a[l] + a[l + off];
  return a[0];
}
float spec(Order o, const std::vector<float>& t, const std::vector<double>& wide) {
  switch (o) {
    case Order::Sequential: return spec_sequential(t);
    case Order::Pairwise: return spec_pairwise(t.data(), t.size());
    case Order::Kahan: return spec_kahan(t);
    case Order::Fp64: return spec_fp64(wide);
    case Order::Warp32: return spec_warp32(t);
  }
  return 0;
}

bool same(float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }

// ---- exact sums: double-double accumulation (TwoSum), error ~ 2^-104 relative

struct DoubleDouble {
  double hi = 0, lo = 0;
  void add(double x) {
    const double s = hi + x, bp = s - hi, e = (hi - (s - bp)) + (x - bp);
    hi = s;
    lo += e;
  }
  double value() const { return hi + lo; }
};
double exact_sum(const std::vector<float>& t) {
  DoubleDouble d;
  for (float v : t) d.add(v);
  return d.value();
}
double abs_sum(const std::vector<float>& t) {
  DoubleDouble d;
  for (float v : t) d.add(std::fabs(double(v)));
  return d.value();
}

POPPER_FALSIFIER("FALSIFY-ACC-001", [](const popper::Params&) {
  const bool ok = rc::check("every order equals its definition", [] {
    const auto n = *rc::gen::inRange<std::size_t>(0, 5001);
    const auto seed = *rc::gen::arbitrary<std::uint32_t>();
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1, 1);
    std::uniform_int_distribution<int> ex(-20, 20);
    std::vector<float> a(n), b(n), prod(n);
    std::vector<double> wide_a(n), wide_prod(n);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = std::ldexp(u(rng), ex(rng));
      b[i] = u(rng);
      prod[i] = a[i] * b[i];
      wide_a[i] = a[i];
      wide_prod[i] = double(a[i]) * b[i];
    }
    for (Order o : kAllOrders) {
      const float s = sum(a, o), d = dot(a, b, o);
      RC_ASSERT(same(s, spec(o, a, wide_a)));
      RC_ASSERT(same(d, spec(o, prod, wide_prod)));
    }
  });
  EXPECT_TRUE(ok);
  popper::record_backend("reference");
});

void check_bounds(const char* what, const std::vector<float>& t, double& worst_ratio_out) {
  const double s = exact_sum(t), S = abs_sum(t);
  for (Order o : kAllOrders) {
    const double err = std::fabs(double(sum(t, o)) - s);
    const double bound = sum_bound_factor(o, t.size()) * S;
    EXPECT_LE(err, bound) << what << " n=" << t.size() << " order " << to_string(o) << ": error " << err << " > bound "
                          << bound << " (observed/u = " << err / S / 0x1p-24 << " S)";
    if (bound > 0) worst_ratio_out = std::max(worst_ratio_out, err / bound);
  }
}

POPPER_FALSIFIER("FALSIFY-ACC-002", [](const popper::Params& p) {
  std::mt19937_64 rng(p.seed());
  std::uniform_real_distribution<float> u(-1, 1);
  double worst = 0;
  std::printf("[FALSIFY-ACC-002] observed error / S in units of u, uniform(0,1) terms:\n");
  for (auto n : p.integers("lengths"))
    for (int trial = 0; trial < p.integer("trials"); ++trial)
      for (bool positive : {false, true}) {
        std::vector<float> t(static_cast<std::size_t>(n));
        for (auto& v : t) v = positive ? 0.5f * (u(rng) + 1) : u(rng);
        check_bounds(positive ? "uniform(0,1)" : "uniform(-1,1)", t, worst);
        if (positive && trial == 0 && n >= 4096) {
          const double s = exact_sum(t), S = abs_sum(t);
          std::printf("  n=%-7lld", static_cast<long long>(n));
          for (Order o : kAllOrders)
            std::printf(" %s %.2f (bound %.1f)", to_string(o), std::fabs(double(sum(t, o)) - s) / S / 0x1p-24,
                        sum_bound_factor(o, t.size()) / 0x1p-24);
          std::printf("\n");
        }
      }
  std::printf("  worst observed/bound over all orders and inputs: %.3f\n", worst);
  popper::record_backend("reference");
});

POPPER_FALSIFIER("FALSIFY-ACC-003", [](const popper::Params& p) {
  const auto n = static_cast<std::size_t>(p.integer("n"));
  std::mt19937_64 rng(p.seed());
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<std::pair<std::string, std::vector<float>>> cases;
  {  // cancellation: +-x pairs with small residues; |sum| << sum |t|
    std::vector<float> t(n);
    for (std::size_t i = 0; i + 1 < n; i += 2) {
      t[i] = std::ldexp(u(rng), 10);
      t[i + 1] = -t[i] + std::ldexp(u(rng), -10);
    }
    cases.emplace_back("cancellation", t);
  }
  {  // growing magnitudes, geometric
    std::vector<float> t(n);
    for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<float>(std::pow(1.0002, double(i)) * (0.5 + 0.5 * u(rng)));
    cases.emplace_back("geometric growth", t);
  }
  {  // linear ramp ascending, then the same descending
    std::vector<float> t(n);
    for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<float>(i) + 0.25f * u(rng);
    cases.emplace_back("ascending ramp", t);
    std::reverse(t.begin(), t.end());
    cases.emplace_back("descending ramp", t);
  }
  {  // alternating huge and tiny
    std::vector<float> t(n);
    for (std::size_t i = 0; i < n; ++i) t[i] = i % 2 ? std::ldexp(u(rng), 20) : std::ldexp(u(rng), -20);
    cases.emplace_back("huge/tiny alternating", t);
  }
  {  // one huge term first, many small ones after (the sum stalls in sequential order)
    std::vector<float> t(n, 1.0f);
    t[0] = 16777216.0f;
    cases.emplace_back("stalling sum", t);
  }
  double worst = 0;
  std::printf("[FALSIFY-ACC-003] n=%zu, observed error / S in units of u:\n", n);
  for (const auto& [name, t] : cases) {
    check_bounds(name.c_str(), t, worst);
    const double s = exact_sum(t), S = abs_sum(t);
    std::printf("  %-22s", name.c_str());
    for (Order o : kAllOrders) std::printf(" %s %.3g", to_string(o), std::fabs(double(sum(t, o)) - s) / S / 0x1p-24);
    std::printf("\n");
  }
  std::printf("  worst observed/bound: %.3f\n", worst);
  popper::record_backend("reference");
});

POPPER_FALSIFIER("FALSIFY-ACC-004", [](const popper::Params& p) {
  namespace tb = popper::q4k::testbed;
  std::printf("[FALSIFY-ACC-004] worst |y - y_ref| / bound per order; largest relative difference between orders:\n");
  for (const auto& s : p.list("shapes")) {
    const auto rows = s.integer("rows"), cols = s.integer("cols");
    // Positive weights and activations: every product has the same sign, so rounding errors do not cancel.
    const auto prob = tb::make_problem(rows, cols, p.seed(), tb::XKind::Positive, true);
    const auto stats = tb::row_stats(prob);
    std::vector<std::vector<float>> per_order;
    std::printf("  %lldx%lld:", static_cast<long long>(rows), static_cast<long long>(cols));
    for (Order o : kAllOrders) {
      std::vector<float> y(static_cast<std::size_t>(rows));
      gemv_q4k(prob.w.blocks, rows, cols, prob.x, y, o, 1);
      for (auto t : p.integers("threads")) {
        std::vector<float> yt(y.size());
        gemv_q4k(prob.w.blocks, rows, cols, prob.x, yt, o, static_cast<int>(t));
        EXPECT_EQ(std::memcmp(yt.data(), y.data(), y.size() * sizeof(float)), 0)
            << to_string(o) << " depends on the thread count (" << t << ")";
      }
      const auto c = tb::compare(y, stats, [&](std::size_t k) {
        return (dot_bound_factor(o, static_cast<std::size_t>(cols)) + tb::gamma(double(cols), tb::kU64)) *
               stats.abs_wx[k];
      });
      EXPECT_TRUE(c.ok) << to_string(o) << " " << rows << "x" << cols << ": " << c.message;
      std::printf(" %s %.3f", to_string(o), c.worst_ratio);
      per_order.push_back(std::move(y));
    }
    double spread = 0;
    for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r)
      for (const auto& a : per_order)
        for (const auto& b : per_order) spread = std::max(spread, std::fabs(double(a[r]) - b[r]) / stats.abs_wx[r]);
    std::printf(" | max_r |y_a - y_b| / sum|w x| between orders %.3g\n", spread);
  }
  popper::record_backend("reference");
});

POPPER_HARNESS("KANI-ACC-001", [](const popper::Params& p) {
  const auto bound = static_cast<int>(p.bound());
  for (int n = 0; n <= bound; ++n) {
    std::vector<float> t(static_cast<std::size_t>(n)), ones(static_cast<std::size_t>(n), 1.0f);
    for (int i = 0; i < n; ++i) t[static_cast<std::size_t>(i)] = std::ldexp(1.0f, i);
    const float want = static_cast<float>((std::uint64_t{1} << n) - 1);
    for (Order o : kAllOrders) {
      EXPECT_EQ(sum(t, o), want) << to_string(o) << " n=" << n;
      EXPECT_EQ(dot(t, ones, o), want) << "dot " << to_string(o) << " n=" << n;
    }
  }
  popper::record_backend("reference");
});

}  // namespace
