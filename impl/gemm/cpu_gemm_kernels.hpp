// Internal to the CPU GEMM: the micro-kernel interface shared by the
// per-ISA translation units (cpu_gemm_avx2.cpp, cpu_gemm_avx512.cpp) and the
// ISA-neutral driver (cpu_gemm.cpp).
//
// A micro-kernel computes one full MR x NR tile of C from packed panels:
//   C[i*ldc + j] = alpha * sum_p Ap[p*MR + i] * Bp[p*NR + j] + beta * C[i*ldc + j]
// with beta == 0 meaning "C is not read". Ap and Bp are 64-byte aligned.
// Partial tiles are handled by the driver through a scratch tile.
//
// The ISA translation units must not instantiate std:: templates or other
// inline functions: the linker could keep their AVX-512 copy for every caller
// and fault on a CPU without AVX-512.
#pragma once
#include <cstdint>

namespace popper::gemm::cpu::detail {

template <class T>
using MicroKernel = void (*)(std::int64_t kc, const T* ap, const T* bp, T* c, std::int64_t ldc, T alpha, T beta);

template <class T>
struct KernelSpec {
  int mr, nr;        // register tile
  int mc, kc, nc;    // cache blocks: A block mc x kc (L2), B panel kc x nc (L3)
  MicroKernel<T> fn;
};

KernelSpec<float> avx2_f32();
KernelSpec<double> avx2_f64();
KernelSpec<float> avx512_f32();
KernelSpec<double> avx512_f64();

}  // namespace popper::gemm::cpu::detail
