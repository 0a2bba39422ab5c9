// Hand Q4_K GEMV, AVX-512 with VNNI (vpdpwssd); body in cpu_gemv_avx512.inl.
// Compiled with -mavx512vnni (impl/q4k/impl.cmake); called only when the CPU has it.
#define POPPER_Q4K_VNNI 1
#define POPPER_Q4K_ROWS_FN gemv_rows_avx512_vnni
#include "impl/q4k/cpu_gemv_avx512.inl"

namespace popper::q4k::cpu::detail {

bool cpu_has_avx512_vnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni");
}

}  // namespace popper::q4k::cpu::detail
