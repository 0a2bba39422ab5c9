// Summary statistics and the significance test behind REGRESSION.
//
//   median, quantile q (linear between order statistics: x_(i) + f (x_(i+1) -
//   x_(i)) at i + f = q (n - 1), so quantile 0.5 is the median), mean,
//   stddev (sample, n-1), cv = stddev / mean,
//   MAD = median(|x_i - median(x)|)
//
// Mann–Whitney U (one-sided): H1 "x is stochastically greater than y".
//   U_x = sum over pairs [x_i > y_j] + 0.5 [x_i == y_j]
// p-value exact (enumerated null distribution) when there are no ties and
// n_x * n_y <= 2500, else the normal approximation with tie correction and
// continuity correction.
#pragma once
#include <vector>

namespace popper::bench {

double median(std::vector<double> v);                                    // throws InvalidArgument when empty
double quantile(std::vector<double> v, double q);                        // q in [0, 1]; throws when empty
double quantile_of_sorted(const std::vector<double>& sorted, double q);  // the same, v already ascending
double mean(const std::vector<double>& v);
double stddev(const std::vector<double>& v);  // 0 when n < 2
double coefficient_of_variation(const std::vector<double>& v);
double median_abs_deviation(const std::vector<double>& v);

struct MannWhitney {
  double u = 0;        // U statistic of x
  double p_value = 1;  // one-sided, H1: x > y
  bool exact = false;
};
MannWhitney mann_whitney_greater(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace popper::bench
