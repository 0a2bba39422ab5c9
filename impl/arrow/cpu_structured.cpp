// Structured path: the per-atom arrow-Schur body (atom_body.hpp, ScalarLane)
// run over each atom's slice of the pack, threads across atoms with a static
// partition. The device kernel runs the same pieces, so this is also the host
// image of the CUDA body.
#include <algorithm>

#include "impl/arrow/atom_body.hpp"
#include "impl/arrow/kernels.hpp"
#include "popper/mutant.hpp"

namespace popper::arrow {

namespace {
template <int DF>
ArrowAtomStatus<double> solve_one(const ArrowAtomArgs<double>& args, double rho_t, double rho_beta) {
  return arrow_atom_solve<ScalarLane, DF>(args, rho_t, rho_beta);
}
}  // namespace

// Row work weights for load balance (any positive proxy keeps results identical).
double atom_cost(std::size_t rows, std::size_t d, std::size_t k) {
  const auto dd = static_cast<double>(d), kk = static_cast<double>(k);
  return static_cast<double>(rows) * dd * (dd + kk * (kk + 3.0)) + kk * kk * kk + 1.0;
}

void run_structured(const BatchedK1Pack& pack, std::span<const AtomSlice> slices, double rho_t, double rho_beta,
                    unsigned threads, RawOutputs& out) {
  std::vector<double> cost(slices.size());
  for (std::size_t a = 0; a < slices.size(); ++a) cost[a] = atom_cost(slices[a].rows, slices[a].d, slices[a].k);
  // The mutant: every atom's last row is left out of the solve.
  static const bool skip_last_row = POPPER_MUTANT("arrow-scalar-skip-last-row");
  run_partitioned(cost, threads, [&](std::size_t begin, std::size_t end) {
    std::vector<double> L, S, r;
    for (std::size_t a = begin; a < end; ++a) {
      const AtomSlice& s = slices[a];
      const auto bad = first_nonfinite_field(view_of(pack, s));
      out.nonfinite[a] = bad ? static_cast<int>(*bad) : -1;
      L.resize(std::max<std::size_t>(1, s.rows * s.d * s.d));
      S.resize(s.k * s.k);
      r.resize(s.k);
      const std::size_t rows = skip_last_row && s.rows > 0 ? s.rows - 1 : s.rows;
      ArrowSolution& sol = out.solution(a, s);
      ArrowAtomArgs<double> args{rows,
                                 s.d,
                                 s.k,
                                 pack.D.data() + s.D,
                                 pack.B.data() + s.B,
                                 pack.g_t.data() + s.g_t,
                                 pack.hbb.data() + s.hbb,
                                 pack.g_b.data() + s.g_b,
                                 static_cast<double>(rows),
                                 L.data(),
                                 S.data(),
                                 r.data(),
                                 sol.delta_t.data(),
                                 sol.delta_beta.data()};
      ArrowAtomStatus<double> st{};
      switch (s.d) {
        case 1: st = solve_one<1>(args, rho_t, rho_beta); break;
        case 2: st = solve_one<2>(args, rho_t, rho_beta); break;
        case 3: st = solve_one<3>(args, rho_t, rho_beta); break;
        case 4: st = solve_one<4>(args, rho_t, rho_beta); break;
        default: st = solve_one<0>(args, rho_t, rho_beta); break;
      }
      out.det_mant[a] = st.det_mant;
      out.det_exp[a] = st.det_exp;
      out.fail_row[a] = st.fail_row;
      out.schur_failed[a] = st.schur_failed;
    }
  });
}

}  // namespace popper::arrow
