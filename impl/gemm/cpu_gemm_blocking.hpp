// Cache blocking of the CPU GEMM from the cache sizes the machine reports.
//
// Goto/BLIS analytical model (Low et al., "Analytical Modeling Is Enough for
// High-Performance BLIS", 2016), per operand of the loop nest in cpu_gemm.cpp:
//   kc: the B sliver (kc x NR) stays in L2 beside the A block, streamed by
//       every MR-row tile:  kc * NR * sizeof(T) <= L2 / 8, kc in [128, 1024];
//       k is cut into ceil(k / that) equal blocks (rounded up to 16), so no
//       short last block. Measured on Zen 4 (1 MiB L2, 32 KiB L1d), 1 and 2
//       threads, f32 and f64: kc = 1024 against the L1-sized 384 cut the time
//       5-17% on every full bench shape with k >= 1024 (fewer passes over C,
//       which lm_head's 512 MiB makes costly, and fewer micro-kernel calls)
//       and left the small ones unchanged.
//   mc: the A block (mc x kc) stays in L2:      mc * kc * sizeof(T) <= 1/2 L2
//   nc: the B panel (kc x nc) stays in L3:      kc * nc * sizeof(T) <= 1/4 L3
// mc is a multiple of MR, nc of NR (at most 8192). kc alone decides the order
// of the k reduction; it depends on k, the cache sizes and the tile, never on
// m, n or the thread count, so results stay bitwise identical across thread
// counts and row splits.
// A reported L3 above 256 MiB is not a per-socket LLC any CPU has (a
// hypervisor's cpuid can report 508 MiB): 32 MiB is used instead.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>

namespace popper::gemm::cpu {

struct CacheSizes {
  std::size_t l1d = 0, l2 = 0, l3 = 0;  // bytes
  std::size_t l1d_ways = 8;             // the L1d's associativity
};
// sysconf(_SC_LEVEL{1_D,2,3}_CACHE_SIZE, _SC_LEVEL1_DCACHE_ASSOC) with defaults
// (32 KiB, 512 KiB, 8 MiB, 8 ways) where the OS reports nothing, and the L3
// plausibility clamp above. Cached.
const CacheSizes& reported_cache_sizes();

// The sizes the driver blocks for: reported_cache_sizes(), or those of
// set_blocking_caches — a test switch (process-wide, like set_b_sharing), so a
// falsifier runs every blocking loop (several k, MC and NC blocks) on small
// problems whatever the machine's caches; nullopt restores the reported ones.
CacheSizes blocking_caches();
void set_blocking_caches(std::optional<CacheSizes> caches);

struct Blocking {
  std::int64_t mc, kc, nc;
};
// Whether `rows` rows of an operand, `stride_bytes` apart and read together
// line by line, need more lines of one L1d set than it has ways. Rows a
// multiple of the set period (L1d size / ways: 4 KiB on Zen 4 and on Intel
// since Skylake) apart all map to one set, so 12 such rows evict each other
// on every k step.
bool rows_conflict_in_l1(std::int64_t rows, std::int64_t stride_bytes, const CacheSizes& caches);

// The blocking for a product of inner extent k (k >= 1); kc <= k.
Blocking blocking_for(int mr, int nr, std::size_t elem_bytes, const CacheSizes& caches, std::int64_t k);

}  // namespace popper::gemm::cpu
