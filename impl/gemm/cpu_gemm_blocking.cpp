// Cache sizes and the analytical blocking (cpu_gemm_blocking.hpp).
#include "impl/gemm/cpu_gemm_blocking.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <numeric>

namespace popper::gemm::cpu {

const CacheSizes& reported_cache_sizes() {
  static const CacheSizes c = [] {
    auto get = [](int name, std::size_t fallback) {
      const long v = ::sysconf(name);
      return v > 0 ? static_cast<std::size_t>(v) : fallback;
    };
    CacheSizes s;
    s.l1d = get(_SC_LEVEL1_DCACHE_SIZE, std::size_t{32} << 10);
    s.l2 = get(_SC_LEVEL2_CACHE_SIZE, std::size_t{512} << 10);
    s.l3 = get(_SC_LEVEL3_CACHE_SIZE, std::size_t{8} << 20);
    s.l1d_ways = get(_SC_LEVEL1_DCACHE_ASSOC, 8);
    if (s.l3 > (std::size_t{256} << 20)) s.l3 = std::size_t{32} << 20;
    s.l2 = std::max(s.l2, s.l1d);
    s.l3 = std::max(s.l3, s.l2);
    return s;
  }();
  return c;
}

namespace {
std::atomic<bool> forced{false};
CacheSizes forced_sizes;  // written only while `forced` is false
}  // namespace

CacheSizes blocking_caches() { return forced.load() ? forced_sizes : reported_cache_sizes(); }

void set_blocking_caches(std::optional<CacheSizes> caches) {
  forced.store(false);
  if (!caches) return;
  forced_sizes = *caches;
  forced.store(true);
}

bool rows_conflict_in_l1(std::int64_t rows, std::int64_t stride_bytes, const CacheSizes& c) {
  constexpr std::int64_t kLine = 64;
  const auto ways = static_cast<std::int64_t>(std::max<std::size_t>(c.l1d_ways, 1));
  const std::int64_t period = std::max(static_cast<std::int64_t>(c.l1d) / ways, kLine);
  // The rows fall on period / gcd(stride, period) distinct sets (a line apart at least).
  const std::int64_t sets = period / std::max(std::gcd(stride_bytes, period), kLine);
  return (rows + sets - 1) / sets > ways;
}

Blocking blocking_for(int mr, int nr, std::size_t elem, const CacheSizes& c, std::int64_t k) {
  const auto e = static_cast<std::int64_t>(elem);
  const std::int64_t kc_max =
      std::clamp<std::int64_t>(static_cast<std::int64_t>(c.l2) / 8 / (nr * e) / 16 * 16, 128, 1024);
  k = std::max<std::int64_t>(k, 1);
  const std::int64_t blocks = (k + kc_max - 1) / kc_max;
  const std::int64_t kc = std::min(k, ((k + blocks - 1) / blocks + 15) / 16 * 16);
  std::int64_t mc = static_cast<std::int64_t>(c.l2) / 2 / (kc * e);
  mc = std::max<std::int64_t>(mr, mc / mr * mr);
  std::int64_t nc = static_cast<std::int64_t>(c.l3) / 4 / (kc * e);
  nc = std::clamp<std::int64_t>(nc / nr * nr, nr, 8192 / nr * nr);
  return {mc, kc, nc};
}

}  // namespace popper::gemm::cpu
