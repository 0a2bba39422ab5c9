// rows_conflict_in_l1: which row strides make the A-in-place micro-kernel's
// rows evict each other in the L1d (cpu_gemm.cpp packs A for those).
#include "impl/gemm/cpu_gemm_blocking.hpp"

#include <gtest/gtest.h>

namespace popper::gemm::cpu {
namespace {

constexpr CacheSizes kZen4{32 << 10, 1 << 20, 32 << 20, 8};         // set period 4 KiB
constexpr CacheSizes kGoldenCove{48 << 10, 2 << 20, 32 << 20, 12};  // set period 4 KiB

TEST(RowsConflictInL1, PowerOfTwoStridesOfAPeriodPutEveryRowInOneSet) {
  EXPECT_TRUE(rows_conflict_in_l1(12, 8192, kZen4));  // attn_kv f64: k = 1024
  EXPECT_TRUE(rows_conflict_in_l1(12, 4096, kZen4));  // attn_kv f32
  EXPECT_TRUE(rows_conflict_in_l1(13, 4096, kGoldenCove));
  EXPECT_FALSE(rows_conflict_in_l1(12, 4096, kGoldenCove));  // 12 ways hold 12 rows
  EXPECT_FALSE(rows_conflict_in_l1(8, 8192, kZen4));         // the 8-row short tile fits
}

TEST(RowsConflictInL1, StridesThatSpreadOverSetsDoNot) {
  EXPECT_FALSE(rows_conflict_in_l1(12, 2048, kZen4));       // small_256 f64: 2 sets, 6 rows each
  EXPECT_TRUE(rows_conflict_in_l1(24, 2048, kZen4));        // 12 rows each
  EXPECT_FALSE(rows_conflict_in_l1(12, 4096 + 64, kZen4));  // a padded leading dimension
  EXPECT_FALSE(rows_conflict_in_l1(12, 512, kZen4));        // small_64 f64
  EXPECT_FALSE(rows_conflict_in_l1(12, 40, kZen4));         // rows within a line or two
}

TEST(RowsConflictInL1, ADegenerateCacheReportStillAnswers) {
  EXPECT_TRUE(rows_conflict_in_l1(12, 8192, CacheSizes{32 << 10, 1 << 20, 8 << 20, 0}));
  EXPECT_TRUE(rows_conflict_in_l1(12, 0, kZen4));  // one address: one set
}

}  // namespace
}  // namespace popper::gemm::cpu
