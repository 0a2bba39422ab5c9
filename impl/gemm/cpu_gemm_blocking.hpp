// Cache blocking of the CPU GEMM from the cache sizes the machine reports.
//
// Goto/BLIS analytical model (Low et al., "Analytical Modeling Is Enough for
// High-Performance BLIS", 2016), per operand of the loop nest in cpu_gemm.cpp:
//   kc: the B sliver (kc x NR) fills L1d, reused by every MR-row tile while
//       the A sliver streams past it:  kc * NR * sizeof(T) <= L1d (kc in [128, 512];
//       measured on Zen 5: kc = 384 beats the 3/4-L1 split of both slivers, 208)
//   mc: the A block (mc x kc) stays in L2:      mc * kc * sizeof(T) <= 1/2 L2
//   nc: the B panel (kc x nc) stays in L3:      kc * nc * sizeof(T) <= 1/4 L3
// kc is a multiple of 16, mc of MR, nc of NR (at most 8192). kc alone decides the order of
// the k reduction; it depends on the cache sizes and the tile, never on the
// thread count, so results stay bitwise identical across thread counts.
// A reported L3 above 256 MiB is not a per-socket LLC any CPU has (a
// hypervisor's cpuid can report 508 MiB): 32 MiB is used instead.
#pragma once
#include <cstddef>
#include <cstdint>

namespace popper::gemm::cpu {

struct CacheSizes {
  std::size_t l1d = 0, l2 = 0, l3 = 0;  // bytes
};
// sysconf(_SC_LEVEL{1_D,2,3}_CACHE_SIZE) with defaults (32 KiB, 512 KiB, 8 MiB)
// where the OS reports nothing, and the L3 plausibility clamp above. Cached.
const CacheSizes& reported_cache_sizes();

struct Blocking {
  std::int64_t mc, kc, nc;
};
Blocking blocking_for(int mr, int nr, std::size_t elem_bytes, const CacheSizes& caches);

}  // namespace popper::gemm::cpu
