// The GEMM ceiling programs check their own product before timing, with the
// suites' check (workloads/gemm/product_check.h, FALSIFY-GEMM-018), so
// BENCH-GEMM-001/002 are judged against a verified row: their rows carry the
// verdict.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "common/process.hpp"

namespace {

TEST(CeilingGemm, TheRowsCarryTheProductChecksVerdict) {
  int ran = 0;
  for (const char* prog : {"cblas_gemm_raw", "blis_gemm_raw"}) {
    const std::string bin = std::string(POPPER_BINARY_DIR) + "/bin/ceiling_" + prog;
    if (!std::filesystem::exists(bin)) continue;  // BLIS is optional; the sanitizer build has no benches
    const auto r = popper::run_process({bin, "--shape", "small_64", "--reps", "1", "--min-time", "0.001"}, {}, {}, 60);
    ASSERT_TRUE(r.ok()) << bin << ": " << r.describe() << "\n" << r.err;
    std::istringstream in(r.out);
    std::string line;
    int rows = 0;
    while (std::getline(in, line))
      if (line.rfind("gemm,ceiling,", 0) == 0) {
        // ...,verdict,pace_seconds
        const std::string head = line.substr(0, line.rfind(','));
        EXPECT_EQ(head.substr(head.rfind(',') + 1), "verified") << line;
        ++rows;
      }
    EXPECT_EQ(rows, 2) << bin << " (f32 and f64)\n" << r.out;
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "no GEMM ceiling program is built in " << POPPER_BINARY_DIR;
}

}  // namespace
