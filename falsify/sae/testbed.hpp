// SAE testbed: seeded random problems for the falsifiers (ragged rows with
// repeated block indices, planted zero weights and heterogeneous q_i, including 0).
// The bench draws its inputs with workloads/sae/generate.h, shared with the C ceiling.
#pragma once
#include <cstddef>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "impl/common/cpu_features.hpp"
#include "popper/binding.hpp"
#include "impl/sae/row_kernels.hpp"
#include "impl/sae/sae.hpp"

namespace popper::sae::testbed {

struct Shape {
  std::size_t rows = 4, K = 3, p = 4, max_m = 3, max_q = 3;
  double zero_weight_prob = 0.2;
};

struct Problem {
  std::shared_ptr<const SparsePhiRows> phi;
  std::shared_ptr<const LocalJacRows> jac;
  std::vector<std::size_t> m, q;
  std::size_t p = 0, K = 0;
  SaeKroneckerRows make_rows() const { return SaeKroneckerRows(p, K, phi, jac); }
};

inline Problem random_problem(const Shape& s, std::mt19937_64& rng) {
  std::normal_distribution<double> nd(0.0, 1.0);
  std::uniform_real_distribution<double> ud(0.0, 1.0);
  std::vector<std::vector<std::pair<std::size_t, double>>> phi_rows(s.rows);
  std::vector<std::vector<double>> jac_rows(s.rows);
  Problem pr;
  pr.p = s.p;
  pr.K = s.K;
  for (std::size_t i = 0; i < s.rows; ++i) {
    const std::size_t m = s.K == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, s.max_m)(rng);
    const std::size_t q = std::uniform_int_distribution<std::size_t>(0, s.max_q)(rng);
    for (std::size_t e = 0; e < m; ++e) {
      const std::size_t k = std::uniform_int_distribution<std::size_t>(0, s.K - 1)(rng);
      const double w = ud(rng) < s.zero_weight_prob ? 0.0 : nd(rng);
      phi_rows[i].emplace_back(k, w);
    }
    jac_rows[i].resize(q * s.p);
    for (auto& v : jac_rows[i]) v = nd(rng);
    pr.m.push_back(m);
    pr.q.push_back(q);
  }
  pr.phi = std::make_shared<const SparsePhiRows>(SparsePhiRows::from_rows(phi_rows));
  pr.jac = std::make_shared<const LocalJacRows>(LocalJacRows::from_rows(jac_rows));
  return pr;
}

inline std::vector<double> random_vector(std::size_t n, std::mt19937_64& rng) {
  std::normal_distribution<double> nd(0.0, 1.0);
  std::vector<double> v(n);
  for (auto& e : v) e = nd(rng);
  return v;
}

inline double phi_l1(const SaeKroneckerRows& rows, std::size_t row) {
  const auto& ph = *rows.a_phi();
  double s = 0.0;
  for (std::size_t e = ph.row_ptr[row]; e < ph.row_ptr[row + 1]; ++e)
    s += ph.weight[e] < 0 ? -ph.weight[e] : ph.weight[e];
  return s;
}

// Evidence: the row-kernel path every SAE apply ran on (forced only when the
// ISA cap lowered the automatic choice).
inline void record_cpu_path() {
  popper::record_backend(std::string("cpu:") + popper::sae::row_kernels().name,
                         popper::cpu::auto_isa_overridden() ? popper::Dispatch::Forced : popper::Dispatch::Auto);
}

}  // namespace popper::sae::testbed
