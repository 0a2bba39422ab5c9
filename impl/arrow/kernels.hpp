// Pack-level entry points behind solve_batched_k1_border, exposed for the
// falsifiers and the benchmark (one tier each): the dense oracle, the LAPACK
// tier, the Structured per-atom path, the Hand SIMD-across-atoms kernel and the
// CUDA entry that declines to the CPU.
#pragma once
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "impl/arrow/arrow.hpp"
#include "impl/arrow/pack.hpp"
#include "impl/common/cpu_features.hpp"

namespace popper::arrow {

namespace reference {
// Dense (n d + k)^2 Hessian H and right-hand side -g, column-major, unknowns
// ordered [t_0 .. t_{n-1}, beta]. Symmetric: both triangles are filled.
void assemble_dense(const AtomView& a, double rho_t, double rho_beta, std::vector<double>& H, std::vector<double>& rhs);
// Eigen LLT of the dense Hessian: the oracle.
ArrowResult solve_dense(const AtomView& a, double rho_t, double rho_beta);
}  // namespace reference

namespace lapack {
// The same dense solve through LAPACKE_dpotrf / LAPACKE_dpotrs (the wrapped tier).
ArrowResult solve_dense(const AtomView& a, double rho_t, double rho_beta);
}  // namespace lapack

// Per-atom raw outputs of a pack kernel, before failures are classified.
struct RawOutputs {
  // Per atom: delta_t (n_a d_a) and delta_beta (k_a), written by the kernel
  // straight into the vectors the results hand back, and sized by it too
  // (solution()), in the thread that writes them.
  std::vector<ArrowSolution> sol;
  std::vector<double> det_mant;      // [B]  log det = log(det_mant) + det_exp ln 2
  std::vector<double> det_exp;       // [B]
  std::vector<double> fail_row;      // [B]  first failing row, -1 if none
  std::vector<double> schur_failed;  // [B] 1 or 0
  // [B] first non-finite input field as an ArrowField index, -1 none, -2 not
  // scanned by the kernel (finalize scans then). Kernels scan while the atom
  // is in cache, saving a separate pass over the whole pack.
  std::vector<int> nonfinite;
  // [B] 1 when the kernel found delta_t and delta_beta finite, 0 when not, -1
  // not checked by the kernel (finalize checks then).
  std::vector<signed char> result_finite;
  void resize_for(std::span<const AtomSlice> slices);          // B atoms, empty solutions
  ArrowSolution& solution(std::size_t a, const AtomSlice& s);  // atom a's, sized for s
};

// Structured: the atom body (ScalarLane), one atom at a time, threads across atoms.
void run_structured(const BatchedK1Pack& pack, std::span<const AtomSlice> slices, double rho_t, double rho_beta,
                    unsigned threads, RawOutputs& out);
// Hand: atoms grouped by (d, k), 8 per AVX-512 register or 4 per AVX2
// register in a compact interleaved workspace; run_structured when the ISA is
// Scalar. `isa` = Auto takes the widest the CPU runs (capped by POPPER_ISA_MAX);
// an explicit ISA the CPU lacks throws Unsupported.
void run_hand(const BatchedK1Pack& pack, std::span<const AtomSlice> slices, double rho_t, double rho_beta,
              unsigned threads, RawOutputs& out, popper::cpu::Isa isa = popper::cpu::Isa::Auto);
// The ISA run_hand uses for `requested` (Scalar: the Structured body).
popper::cpu::Isa hand_isa(popper::cpu::Isa requested = popper::cpu::Isa::Auto);
bool hand_uses_avx2();  // hand_isa() is wider than Scalar
// Load-balance weight of one atom's work (any positive proxy keeps results identical).
double atom_cost(std::size_t rows, std::size_t d, std::size_t k);
// Device: fills `out` and returns true, or returns false (declined: no CUDA
// build, no device, or a device error) without touching the results.
bool run_cuda(const BatchedK1Pack& pack, std::span<const AtomSlice> slices, double rho_t, double rho_beta,
              RawOutputs& out);

// Classifies each atom (non-finite input, row failure, Schur failure,
// non-finite result, Ok) and builds the positional results, moving out's
// solutions into them.
std::vector<ArrowResult> finalize(const BatchedK1Pack& pack, std::span<const AtomSlice> slices, RawOutputs& out,
                                  double rho_t, double rho_beta, unsigned threads);

// Pack-level solve with one kernel (Structured, Hand, Reference or Lapack);
// Auto tries the device first. `declined` reports whether a device attempt
// declined (false when none was made).
std::vector<ArrowResult> solve_pack(const BatchedK1Pack& pack, double rho_t, double rho_beta,
                                    const ArrowSolveOptions& options, bool* declined = nullptr);
// The CUDA entry: device when usable, else declines to the CPU Hand kernel
// with identical results. `declined` tells which happened.
std::vector<ArrowResult> solve_pack_cuda(const BatchedK1Pack& pack, double rho_t, double rho_beta, unsigned cpu_threads,
                                         bool* declined = nullptr);

// Failure helpers shared by every path (so a failing atom's report does not
// depend on the path or the class it ran in).
std::optional<ArrowField> first_nonfinite_field(const AtomView& a);
RidgeBumpRequired row_failure(const AtomView& a, std::size_t row, double rho_t);
SchurFactorFailed schur_failure(const AtomView& a, double rho_t, double rho_beta);

// Static contiguous partition of [0, units) over the parallel runtime's
// workers, balanced by `cost` (one entry per unit); fn(begin, end) per part.
// Uses at most `threads` workers (0: every hardware thread) and at most one
// per kMinCostPerThread of total cost, so a class too small to amortize a
// team wake-up runs on the caller alone.
inline constexpr double kMinCostPerThread = 3.0e5;  // atom_cost units, ~0.1 ms of Hand work
template <class Fn>
void run_partitioned(std::span<const double> cost, unsigned threads, Fn&& fn);
// The same workers, but units are claimed one at a time, in order, by
// whichever worker is free (fn(i) per unit): a core that runs slower (shared,
// descheduled) takes fewer. For units whose numbers are their own.
template <class Fn>
void run_claimed(std::span<const double> cost, unsigned threads, Fn&& fn);

}  // namespace popper::arrow

#include "impl/arrow/partition.inl"
