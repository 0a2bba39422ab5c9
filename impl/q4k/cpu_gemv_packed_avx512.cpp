// Packed Q4_K GEMV, AVX-512 F/BW without VNNI (body in cpu_gemv_packed_avx512.inl).
// Called only after the CPU check.
#define POPPER_Q4K_VNNI 0
#define POPPER_Q4K_PACKED_FN gemv_packed_avx512
#include "impl/q4k/cpu_gemv_packed_avx512.inl"
