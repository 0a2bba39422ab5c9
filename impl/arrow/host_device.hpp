// POPPER_HD marks a function compiled for both host and device: under nvcc it
// expands to __host__ __device__, elsewhere to nothing, so one source of the
// per-atom arrow body serves the CPU paths, the CUDA kernel and the host test.
#pragma once
#if defined(__CUDACC__)
#define POPPER_HD __host__ __device__
#else
#define POPPER_HD
#endif
