// The packed layout of the hand Q4_K GEMV: FALSIFY-Q4K-015 (the repack's
// round trip, ragged last groups included) and FALSIFY-Q4K-016 (the packed
// GEMV gives the scalar plain kernel's bits on every ISA path and thread count).
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "impl/common/parallel.hpp"
#include "popper/binding.hpp"
#include "impl/q4k/cpu_q4k.hpp"
#include "support.hpp"
#include "testbed.hpp"

namespace {

using namespace popper::q4k;
using namespace popper::q4k::testing;
using popper::cpu::Isa;
namespace tb = popper::q4k::testbed;

// Large packed weights are placed for huge pages on Linux only (impl/common/huge_pages.h).
#if defined(__linux__)
constexpr bool kHugePagesHere = true;
#else
constexpr bool kHugePagesHere = false;
#endif

// The "hg" of the VmFlags of the mapping holding p in /proc/self/smaps:
// whether it is advised for transparent huge pages; nullopt where there is
// no THP or no smaps.
std::optional<bool> smaps_says_huge(const void* p) {
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) return std::nullopt;
  std::ifstream smaps("/proc/self/smaps");
  if (!smaps) return std::nullopt;
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return (line + " ").find(" hg ") != std::string::npos;
    }
  }
  return std::nullopt;
}

// Whether advice given here shows in smaps at all: a mapping of the test's
// own, advised directly (not through the code under test). qemu-user drops
// madvise hints, with or without the CPU matrix's environment.
bool advice_shows_here() {
#if defined(__linux__)
  const std::size_t bytes = 2 * popper::memory::kHugePageBytes;
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return false;
  const bool shows = madvise(m, bytes, MADV_HUGEPAGE) == 0 && smaps_says_huge(m).value_or(false);
  munmap(m, bytes);
  return shows;
#else
  return false;
#endif
}

// Whether the mapping holding p is advised for huge pages; nullopt where
// advice does not show here, so there is nothing to check.
std::optional<bool> advised_huge(const void* p) {
  static const bool shows = advice_shows_here();
  if (!shows) return std::nullopt;
  return smaps_says_huge(p);
}

POPPER_FALSIFIER("FALSIFY-Q4K-015", [](const popper::Params& p) {
  std::size_t checked = 0, large = 0, advice_checked = 0;
  for (const auto rows : p.integers("rows"))
    for (const auto cols : p.integers("cols")) {
      // Random bytes in every field, so a misplaced byte anywhere changes the result.
      const auto prob = tb::make_random_problem(rows, cols, p.seed() + static_cast<std::uint64_t>(rows * 7 + cols));
      const cpu::PackedWeights packed(prob.w.blocks, rows, cols);
      EXPECT_EQ(packed.rows(), rows);
      EXPECT_EQ(packed.cols(), cols);
      EXPECT_EQ(packed.bytes(), matrix_bytes(packed.groups() * cpu::PackedWeights::kGroupRows, cols))
          << "the packed layout holds 144 bytes per block of its 16-row groups";
      if (kHugePagesHere && packed.bytes() >= popper::memory::kHugePageBytes) {
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(packed.data()) % popper::memory::kHugePageBytes, 0u)
            << rows << "x" << cols << ": " << packed.bytes() << " packed bytes not on a 2 MiB boundary";
        const auto advised = advised_huge(packed.data());
        if (advised) {
          EXPECT_TRUE(*advised) << rows << "x" << cols << ": packed weights not advised for huge pages";
        }
        ++large, advice_checked += advised.has_value();
      }
      const std::vector<Block> back = packed.unpack();
      ASSERT_EQ(back.size(), prob.w.blocks.size());
      const auto* a = reinterpret_cast<const unsigned char*>(back.data());
      const auto* b = reinterpret_cast<const unsigned char*>(prob.w.blocks.data());
      std::size_t at = 0;
      while (at < back.size() * sizeof(Block) && a[at] == b[at]) ++at;
      EXPECT_EQ(at, back.size() * sizeof(Block))
          << rows << "x" << cols << ": unpack(pack(W)) differs at byte " << at << " (row "
          << at / sizeof(Block) / std::size_t(cols / kBlockWeights) << ")";
      ++checked;
    }
  EXPECT_THROW(cpu::PackedWeights(std::vector<Block>(3), 2, 512), popper::BufferTooSmall);
  EXPECT_THROW(cpu::PackedWeights(std::vector<Block>(4), 2, 300), popper::InvalidArgument);
  popper::record_backend("reference");
  if (kHugePagesHere) {
    EXPECT_GT(large, 0u) << "params hold no W of 2 MiB or more: the huge-page placement is unchecked";
  }
  std::printf(
      "[FALSIFY-Q4K-015] %zu shapes round-tripped byte for byte; %zu of 2 MiB or more on 2 MiB boundaries, "
      "huge-page advice checked on %zu (0: advice does not show here: no THP or smaps, or qemu-user)\n",
      checked, large, advice_checked);
});

POPPER_FALSIFIER("FALSIFY-Q4K-016", [](const popper::Params& p) {
  const auto threads = p.integers("threads");
  const popper::parallel::ScopedExactThreads exact;  // the thread counts asked for, however small the shape
  std::printf("[FALSIFY-Q4K-016] packed == scalar plain, bitwise; worst |y - y_ref| / bound:");
  for (const auto& s : p.list("shapes")) {
    const auto rows = s.integer("rows"), cols = s.integer("cols");
    // Positive x: every sub-block sum of one sign, up to 32 x 8191, the edge of the 16-bit pieces S2 is taken in.
    for (auto kind : {tb::XKind::Uniform, tb::XKind::Positive, tb::XKind::Adversarial}) {
      const char* kind_name = kind == tb::XKind::Uniform ? "uni" : kind == tb::XKind::Positive ? "pos" : "adv";
      const auto prob = tb::make_problem(rows, cols, p.seed() + static_cast<std::uint64_t>(rows * 131 + cols), kind);
      std::vector<float> plain(static_cast<std::size_t>(rows));
      cpu::gemv(prob.w.blocks, rows, cols, prob.x, plain, {1, Isa::Scalar});
      const auto stats = tb::row_stats(prob);
      const auto c = tb::compare(plain, stats, [&](std::size_t k) { return tb::hand_bound(stats, k, cols); });
      EXPECT_TRUE(c.ok) << "the scalar plain kernel itself: " << c.message;
      const cpu::PackedWeights packed(prob.w.blocks, rows, cols);
      for_each_cpu_path([&](Isa isa) {
        for (auto t : threads) {
          std::vector<float> y(static_cast<std::size_t>(rows), std::numeric_limits<float>::quiet_NaN());
          cpu::gemv(packed, prob.x, y, {static_cast<int>(t), isa});
          record_cpu(isa);
          const std::size_t at = first_difference(y, plain);
          EXPECT_EQ(at, y.size()) << rows << "x" << cols << " " << kind_name << " x"
                                  << " isa " << path_name(isa) << " threads " << t << ": row " << at << " = "
                                  << (at < y.size() ? y[at] : 0.0f) << ", the plain kernel gives "
                                  << (at < y.size() ? plain[at] : 0.0f) << " (seed " << p.seed() << ")";
        }
      });
      std::printf(" %lldx%lld/%s %.3f", static_cast<long long>(rows), static_cast<long long>(cols), kind_name,
                  c.worst_ratio);
    }
  }
  std::printf("\n");
  // A non-finite activation is rejected by name on every path (the vector quantizer hands it to the scalar one).
  const auto prob = tb::make_problem(20, 1024, p.seed());
  const cpu::PackedWeights packed(prob.w.blocks, 20, 1024);
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()})
    for_each_cpu_path([&](Isa isa) {
      std::vector<float> x = prob.x, y(20, -7.0f);
      x[700] = bad;
      try {
        cpu::gemv(packed, x, y, {2, isa});
        ADD_FAILURE() << "isa " << path_name(isa) << ": x[700] = " << bad << " was accepted";
      } catch (const popper::InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("x[700]"), std::string::npos) << e.what();
      }
      EXPECT_EQ(y, std::vector<float>(20, -7.0f)) << "y written before the check";
    });
});

}  // namespace
