// Batched independent K=1 arrow/border solves (contracts/arrow/batched-k1-border-v1.yaml).
//
// One atom a: rows i = 0..n_a-1, each with D_i (d x d SPD), B_i (d x k), g_i (d);
// the border C (k x k) and g_b (k). Ridges rho_t, rho_beta are class-uniform.
// The Newton step solves H * delta = -g with
//
//   H = [[blockdiag(D_i + rho_t I), B], [B^T, C + rho_beta I]],  g = [g_t; g_b]
//
// through the arrow-Schur sequence
//   D_i + rho_t I = L_i L_i^T,  u_i = L_i^-1 g_i,  Y_i = L_i^-1 B_i
//   S = C + rho_beta I - sum_i Y_i^T Y_i,   r = -g_b + sum_i Y_i^T u_i
//   S delta_beta = r,   delta_t_i = -L_i^-T (u_i + Y_i delta_beta)
//   log det H = sum_i log det(D_i + rho_t I) + log det S
// (derivation: eliminate delta_t_i = -(D_i+rho_t I)^-1 (g_i + B_i delta_beta)
// from the border row B^T delta_t + (C+rho_beta I) delta_beta = -g_b).
//
// Storage: every matrix is column-major; D is the n_a blocks d x d stacked,
// B the n_a blocks d x k stacked, g_t the n_a vectors d stacked. Only the lower
// triangles of D_i and C are read (they are symmetric by contract).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "impl/common/cpu_features.hpp"
#include "popper/result.hpp"

namespace popper::arrow {

inline constexpr std::size_t kMaxRowDim = 8;      // d  in 1..8
inline constexpr std::size_t kMaxBorderDim = 32;  // k  in 1..32 (MAX_FUSED_P)

// One atom's K=1 system (the seam type the backfitting sweep builds).
struct ArrowSystem {
  std::size_t rows = 0;        // n_a (may be 0)
  std::size_t row_dim = 0;     // d
  std::size_t border_dim = 0;  // k
  std::vector<double> D;       // rows * d * d
  std::vector<double> B;       // rows * d * k
  std::vector<double> g_t;     // rows * d
  std::vector<double> hbb;     // k * k   (C)
  std::vector<double> g_b;     // k
};

struct ArrowSolution {
  std::vector<double> delta_t;     // rows * d
  std::vector<double> delta_beta;  // k
  double log_det = 0.0;            // log det H (the whole bordered Hessian)
};

// D_row + rho_t I is not PD. `bump` is sized (Gershgorin, over every row of the
// atom) so that D_i + (rho_t + bump) I is PD with margin for all rows.
struct RidgeBumpRequired {
  std::size_t row;
  double bump;
};
// The Schur complement S is not PD at rho_beta; S + bump I is (Gershgorin).
struct SchurFactorFailed {
  double bump;
};
// A NaN/Inf in an input field, or a non-finite result (overflow).
enum class ArrowField { D, B, g_t, hbb, g_b, result };
struct NonFiniteValue {
  ArrowField field;
};
using ArrowFailure = std::variant<RidgeBumpRequired, SchurFactorFailed, NonFiniteValue>;
using ArrowResult = popper::Result<ArrowSolution, ArrowFailure>;

const char* to_string(ArrowField f);

enum class ArrowKernel {
  Auto,        // device when usable, else Hand
  Hand,        // SIMD across atoms (8 per AVX-512, 4 per AVX2 register), threads across atoms
  Structured,  // the per-atom arrow-Schur body, one atom at a time (the device body on the host)
  Reference,   // dense (n d + k)^2 Hessian, Eigen LLT (the oracle)
  Lapack,      // dense (n d + k)^2 Hessian, LAPACKE dpotrf/dpotrs
};

struct ArrowSolveOptions {
  ArrowKernel kernel = ArrowKernel::Auto;
  unsigned threads = 1;  // CPU threads across atoms (static partition); 0 = hardware concurrency.
                         // At most this many: a class too small to pay for a team wake-up runs on one.
  popper::cpu::Isa isa = popper::cpu::Isa::Auto;  // Hand's lane width: Avx512 (8), Avx2 (4), Scalar
                                                  // (the Structured body); Unsupported if the CPU lacks it
};

// Solves every atom of a color class; results are positional. Dimensions are
// checked first (InvalidArgument naming atom index and field, before any work);
// numerical failures are per atom and never throw. A device decline is served
// by the CPU Hand kernel, whose numbers are bit-identical to the device body.
std::vector<ArrowResult> solve_batched_k1_border(std::span<const ArrowSystem> systems, double rho_t, double rho_beta,
                                                 const ArrowSolveOptions& options = {});

// The evidence tag of the path a kernel runs on this machine: Hand ->
// "cpu:avx2" (SIMD across atoms) or "cpu:scalar" (the Structured body when the
// CPU has no AVX2), Structured -> "cpu:scalar", Lapack -> "lapacke",
// Reference -> "reference", Auto -> the device tag when one is usable, else Hand's.
std::string backend_of(ArrowKernel kernel);

// Throws InvalidArgument("atom <a>: field '<f>' ...") for the first bad atom.
void check_systems(std::span<const ArrowSystem> systems);

}  // namespace popper::arrow
