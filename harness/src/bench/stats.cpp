// Summary statistics and the one-sided Mann–Whitney U test (formulas in stats.hpp).
#include "bench/stats.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "popper/error.hpp"

namespace popper::bench {

double median(std::vector<double> v) {
  if (v.empty()) throw InvalidArgument("median of an empty sample");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return quantile_of_sorted(v, q);
}

double quantile_of_sorted(const std::vector<double>& v, double q) {
  if (v.empty()) throw InvalidArgument("quantile of an empty sample");
  if (!(q >= 0 && q <= 1)) throw InvalidArgument("quantile: q must be in [0, 1]");
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto i = static_cast<std::size_t>(pos);
  const double f = pos - static_cast<double>(i);
  return i + 1 < v.size() ? v[i] + f * (v[i + 1] - v[i]) : v[i];
}

double mean(const std::vector<double>& v) {
  if (v.empty()) throw InvalidArgument("mean of an empty sample");
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

double coefficient_of_variation(const std::vector<double>& v) {
  const double m = mean(v);
  return m != 0 ? stddev(v) / m : 0;
}

double median_abs_deviation(const std::vector<double>& v) {
  const double m = median(v);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - m));
  return median(dev);
}

namespace {

// Null distribution of U for sample sizes (m, n) without ties: counts[u] =
// number of orderings giving U = u, via N(m,n,u) = N(m-1,n,u-n) + N(m,n-1,u).
std::vector<double> u_counts(int m, int n) {
  // table[i][j] is the count vector for sizes (i, j); built row by row.
  std::vector<std::vector<std::vector<double>>> t(static_cast<std::size_t>(m + 1),
                                                  std::vector<std::vector<double>>(static_cast<std::size_t>(n + 1)));
  for (int i = 0; i <= m; ++i)
    for (int j = 0; j <= n; ++j) {
      auto& cur = t[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
      cur.assign(static_cast<std::size_t>(i) * static_cast<std::size_t>(j) + 1, 0.0);
      if (i == 0 || j == 0) {
        cur[0] = 1;
        continue;
      }
      const auto& a = t[static_cast<std::size_t>(i - 1)][static_cast<std::size_t>(j)];  // largest value is an x: adds j
      const auto& b = t[static_cast<std::size_t>(i)][static_cast<std::size_t>(j - 1)];  // largest value is a y
      for (std::size_t u = 0; u < a.size(); ++u) cur[u + static_cast<std::size_t>(j)] += a[u];
      for (std::size_t u = 0; u < b.size(); ++u) cur[u] += b[u];
    }
  return t[static_cast<std::size_t>(m)][static_cast<std::size_t>(n)];
}

}  // namespace

MannWhitney mann_whitney_greater(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.empty() || y.empty()) throw InvalidArgument("Mann-Whitney needs two non-empty samples");
  MannWhitney r;
  bool ties = false;
  for (double a : x)
    for (double b : y) {
      if (a > b) r.u += 1;
      else if (a == b) {
        r.u += 0.5;
        ties = true;
      }
    }
  // Ties within the pooled sample also affect the variance.
  std::map<double, int> groups;
  for (double a : x) ++groups[a];
  for (double b : y) ++groups[b];
  for (const auto& [v, c] : groups)
    if (c > 1) ties = true;

  const int m = static_cast<int>(x.size()), n = static_cast<int>(y.size());
  if (!ties && m <= 20 && n <= 20) {
    const auto counts = u_counts(m, n);
    double total = 0, tail = 0;
    for (std::size_t u = 0; u < counts.size(); ++u) {
      total += counts[u];
      if (static_cast<double>(u) >= r.u) tail += counts[u];
    }
    r.p_value = tail / total;
    r.exact = true;
    return r;
  }
  const double big_n = m + n;
  double tie_term = 0;
  for (const auto& [v, c] : groups) tie_term += static_cast<double>(c) * c * c - c;
  const double mu = static_cast<double>(m) * n / 2.0;
  const double var = static_cast<double>(m) * n / 12.0 * ((big_n + 1) - tie_term / (big_n * (big_n - 1)));
  if (var <= 0) {
    r.p_value = r.u > mu ? 0.0 : 1.0;
    return r;
  }
  const double z = (r.u - mu - 0.5) / std::sqrt(var);
  r.p_value = 0.5 * std::erfc(z / std::sqrt(2.0));
  return r;
}

}  // namespace popper::bench
