// Internal: launcher of the resident decode's CUDA kernels (resident_kernels.cu),
// one warp per work item; the kernels and their arguments are resident.hpp's.
#pragma once
#include <cstdint>

#include "impl/decode/resident_args.hpp"

namespace popper::decode::cuda::detail {

// The buffers every launch binds (resident::Layout), device pointers.
struct Buffers {
  float* act;
  const std::uint32_t* step;
  const float* vectors;
  float* kv;
  const float* rope;
  const unsigned char* w[3];  // the launch's Q4_K matrices, 144-byte blocks
};

// Queues `kernel` over `items` warps on `stream`; returns the launch's
// cudaError_t as an int (0 = success).
int launch_resident(resident::Kernel kernel, const Buffers& b, const resident::Args& a, std::uint32_t items,
                    void* stream);

}  // namespace popper::decode::cuda::detail
