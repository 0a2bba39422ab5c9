// Packed Q4_K GEMV, AVX-512 with VNNI (vpdpbusd); body in cpu_gemv_packed_avx512.inl.
// Compiled with -mavx512vnni (impl/q4k/impl.cmake); called only when
// popper::cpu::has_avx512_vnni() says the CPU has it.
#define POPPER_Q4K_VNNI 1
#define POPPER_Q4K_PACKED_FN gemv_packed_avx512_vnni
#include "impl/q4k/cpu_gemv_packed_avx512.inl"
