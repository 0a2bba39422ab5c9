// Hand tier on the CPU: Goto/BLIS-style blocked GEMM.
//
//   C = alpha * op(A) * op(B) + beta * C
//
// Loop order jc (NC) -> pc (KC) -> ic (MC) -> jr (NR) -> ir (MR). op(B) is
// packed into KC x NC panels of NR-wide slivers, op(A) into MC x KC panels of
// MR-tall slivers; layout and transposition are absorbed by packing from the
// right strides, so one micro-kernel (MR x NR register block, FMA) serves
// every combination. Threads split C's rows (its columns when m is short):
// each C element is owned by exactly one thread and reduced over k in a fixed
// order, so results are identical for every thread count. When rows are split
// and a B panel exceeds a core's L2, the workers pack one shared copy of it
// (each a part), else each packs its own.
//
// ISA: Auto picks the widest the CPU runs (AVX-512 > AVX2+FMA > scalar),
// capped by POPPER_ISA_MAX (common/cpu_features.hpp). Requesting an ISA the
// CPU lacks throws popper::Unsupported.
#pragma once
#include <span>

#include "impl/common/cpu_features.hpp"
#include "impl/gemm/gemm.hpp"

namespace popper::gemm::cpu {

using popper::cpu::Isa;
using popper::cpu::to_string;
inline Isa detected_isa() { return popper::cpu::auto_isa(); }  // the ISA Auto resolves to
inline bool cpu_supports(Isa isa) { return popper::cpu::supports(isa); }

struct CpuGemmOptions {
  int threads = 1;  // >= 1
  Isa isa = Isa::Auto;
  // A hint that C is not read again soon (a training step's weight gradients,
  // read only by the optimizer after the whole backward): full tiles are
  // stored past the caches, which saves reading each line of C before it is
  // written and leaves the caches to the operands. Taken when beta = 0, k fits
  // one k block and C and its row stride are 64-byte aligned; same bits.
  bool stream_c = false;
  // Probe C as it is stored: the call returns whether every element it stored
  // is finite, folded in registers (no second pass over C). Only the blocked
  // path probes: m = 1 with n-contiguous op(B) (the row kernel), k = 0 and
  // alpha = 0 return false, as does any non-finite element.
  bool probe_finite = false;
};

// Who packs op(B) when threads split C's rows: Auto (the rule above), or
// either way forced, so the falsifiers run both paths on every machine.
// Process-wide; results are the same bits either way.
enum class BSharing { Auto, Shared, PerWorker };
void set_b_sharing(BSharing);

// Returns true when options.probe_finite is set and every element of C the
// call stored is finite; false otherwise.
bool gemm(const GemmShape&, float alpha, std::span<const float> a, std::span<const float> b, float beta,
          std::span<float> c, const CpuGemmOptions& = {});
bool gemm(const GemmShape&, double alpha, std::span<const double> a, std::span<const double> b, double beta,
          std::span<double> c, const CpuGemmOptions& = {});

}  // namespace popper::gemm::cpu
