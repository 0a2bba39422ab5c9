// FALSIFY-GEMM-018: the product check behind every "verified" GEMM bench row
// (workloads/gemm/product_check.h; the suites' tiers and the ceiling programs).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "popper/binding.hpp"
#include "workloads/gemm/product_check.h"

namespace {

// C = A B computed in T, as a library would, on deterministic data.
template <class T>
struct Product {
  long m, n, k;
  std::vector<T> a, b, c;
  Product(long m_, long n_, long k_)
      : m(m_), n(n_), k(k_), a(std::size_t(m * k)), b(std::size_t(k * n)), c(std::size_t(m * n)) {
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = T(std::sin(double(i) * 0.37));
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = T(std::cos(double(i) * 0.11));
    for (long i = 0; i < m; ++i)
      for (long j = 0; j < n; ++j) {
        T s = 0;
        for (long p = 0; p < k; ++p) s += a[std::size_t(i * k + p)] * b[std::size_t(p * n + j)];
        c[std::size_t(i * n + j)] = s;
      }
  }
  popper_gemm_check check(int samples, double scale = 1.0) const {
    return popper_gemm_check_product(sizeof(T) == 8, m, n, k, a.data(), b.data(), c.data(), samples, scale);
  }
  T& at(long i, long j) { return c[std::size_t(i * n + j)]; }
};

POPPER_FALSIFIER("FALSIFY-GEMM-018", [](const popper::Params&) {
  // Every entry of a correct product passes, in both precisions.
  EXPECT_EQ(Product<float>(17, 13, 40).check(0).ok, 1);
  EXPECT_EQ(Product<double>(17, 13, 40).check(0).ok, 1);

  // One entry off by far more than gamma_42(2^-24) |A||B| (~1e-5 here), or a NaN, fails.
  Product<float> wrong(17, 13, 40);
  wrong.at(5, 7) += 1e-3f;
  const auto w = wrong.check(0);
  EXPECT_EQ(w.ok, 0);
  EXPECT_NEAR(w.worst_err, 1e-3, 1e-5);
  Product<double> nan(17, 13, 40);
  nan.at(16, 12) = std::nan("");
  EXPECT_EQ(nan.check(0).ok, 0);

  // The bound itself: an error of 1.5 x the f = 1 bound fails at roundoff scale 1
  // and passes at scale 2 (the tensor cores' gamma_{k+2}(2u)).
  Product<double> edge(3, 4, 40);
  double exact = 0, mag = 0;
  for (long p = 0; p < edge.k; ++p) {
    const double v = edge.a[std::size_t(p)] * edge.b[std::size_t(p * edge.n)];
    exact += v, mag += std::fabs(v);
  }
  const double u = std::ldexp(1.0, -53);
  const double g1 = 42 * u / (1 - 42 * u) + 40 * u / (1 - 40 * u);
  edge.at(0, 0) = exact + 1.5 * g1 * mag;
  EXPECT_EQ(edge.check(0, 1.0).ok, 0);
  EXPECT_EQ(edge.check(0, 2.0).ok, 1);

  // A large product is sampled, and both corners are always checked, whatever the draw.
  Product<float> big(300, 260, 64);
  EXPECT_EQ(big.check(256).ok, 1);
  big.at(299, 259) += 1.0f;
  EXPECT_EQ(big.check(256).ok, 0) << "the last corner is not checked";
  big.at(299, 259) -= 1.0f;
  big.at(0, 0) += 1.0f;
  EXPECT_EQ(big.check(256).ok, 0) << "the first corner is not checked";
});

}  // namespace
