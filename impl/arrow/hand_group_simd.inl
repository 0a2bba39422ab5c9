// One lane group of the Hand kernel (hand_group.hpp) written once over the
// ISA's lane type, included by cpu_hand_avx2.cpp and cpu_hand_avx512.cpp
// inside their anonymous namespace (each ISA its own copy, compiled with its
// flags), as impl/gemm/cpu_gemm_ukernel.inl is: arrow_atom_solve<Lane, d>
// (atom_body.hpp) for d = 1..4, 0 for d known only at run time, then the
// status, W doubles each: det_mant, det_exp, fail_row, schur_failed.
// Requires, beside atom_body.hpp's lane operations: static constexpr int
// width (W), loadu(p), storeu(p, v).

template <class Lane, int DF>
ArrowAtomStatus<typename Lane::V> simd_solve_group(const HandGroupArgs& a) {
  using V = typename Lane::V;
  auto cv = [](const double* p) { return reinterpret_cast<const V*>(p); };
  auto mv = [](double* p) { return reinterpret_cast<V*>(p); };
  ArrowAtomArgs<V> args{
      a.rows,  a.d,     a.k,     cv(a.D),  cv(a.B),    cv(a.g), cv(a.C), cv(a.gb), Lane::loadu(a.lane_rows),
      mv(a.L), mv(a.S), mv(a.r), mv(a.dt), mv(a.dbeta)};
  return arrow_atom_solve<Lane, DF>(args, a.rho_t, a.rho_beta);
}

template <class Lane>
[[gnu::always_inline]] inline void simd_hand_group(const HandGroupArgs& a) {
  constexpr int W = Lane::width;
  ArrowAtomStatus<typename Lane::V> st;
  switch (a.d) {
    case 1: st = simd_solve_group<Lane, 1>(a); break;
    case 2: st = simd_solve_group<Lane, 2>(a); break;
    case 3: st = simd_solve_group<Lane, 3>(a); break;
    case 4: st = simd_solve_group<Lane, 4>(a); break;
    default: st = simd_solve_group<Lane, 0>(a); break;
  }
  Lane::storeu(a.status + 0 * W, st.det_mant);
  Lane::storeu(a.status + 1 * W, st.det_exp);
  Lane::storeu(a.status + 2 * W, st.fail_row);
  Lane::storeu(a.status + 3 * W, st.schur_failed);
}
