// Pinning the bench's processes (bench/placement.hpp): the CPU list syntax,
// the CPUs a row gets, and a child process really running on them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "bench/placement.hpp"
#include "common/process.hpp"
#include "popper/error.hpp"

namespace pb = popper::bench;

TEST(BenchPlacement, CpuListsParseAndPrintBack) {
  EXPECT_EQ(pb::parse_cpu_list("0"), (std::vector<int>{0}));
  EXPECT_EQ(pb::parse_cpu_list("3,1"), (std::vector<int>{1, 3}));
  EXPECT_EQ(pb::parse_cpu_list("0-3,6,2"), (std::vector<int>{0, 1, 2, 3, 6}));
  EXPECT_EQ(pb::cpu_list_text({0, 1, 2, 3, 6}), "0-3,6");
  EXPECT_EQ(pb::cpu_list_text({5}), "5");
  for (const char* bad : {"", ",", "1,", "a", "-1", "3-1", "1-", "0x1", "99999"})
    EXPECT_THROW(pb::parse_cpu_list(bad), popper::Error) << "'" << bad << "'";
}

TEST(BenchPlacement, ARowTakesTheFirstCpusOfTheSet) {
  const std::vector<int> set{2, 5, 7};
  EXPECT_EQ(pb::cpus_for(set, 1), (std::vector<int>{2}));
  EXPECT_EQ(pb::cpus_for(set, 2), (std::vector<int>{2, 5}));
  EXPECT_EQ(pb::cpus_for(set, 3), set);
  EXPECT_EQ(pb::cpus_for(set, 8), set);  // more threads than CPUs: they share the set
}

TEST(BenchPlacement, TheChildRunsOnlyOnItsCpus) {
  const auto allowed = pb::allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  const int last = allowed.back();
  const auto r =
      popper::run_process({"/bin/sh", "-c", "grep '^Cpus_allowed_list' /proc/self/status"}, {}, {}, 0, {last});
  ASSERT_TRUE(r.ok()) << r.describe() << r.err;
  EXPECT_NE(r.out.find(":\t" + std::to_string(last) + "\n"), std::string::npos) << r.out;
  const auto unpinned = popper::run_process({"/bin/sh", "-c", "grep '^Cpus_allowed_list' /proc/self/status"});
  EXPECT_NE(unpinned.out.find(":\t" + pb::cpu_list_text(allowed) + "\n"), std::string::npos) << unpinned.out;
}

TEST(BenchPlacement, TheEnvironmentPicksTheSetAndACpuNotAllowedIsAnError) {
  const auto allowed = pb::allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  ::setenv("POPPER_BENCH_CPUS", std::to_string(allowed.back()).c_str(), 1);
  EXPECT_EQ(pb::bench_cpus(), (std::vector<int>{allowed.back()}));
  ::setenv("POPPER_BENCH_CPUS", std::to_string(allowed.back() + 1).c_str(), 1);
  try {
    pb::bench_cpus();
    ADD_FAILURE() << "a CPU outside the affinity mask was accepted";
  } catch (const popper::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not available to this process"), std::string::npos) << e.what();
  }
  ::unsetenv("POPPER_BENCH_CPUS");
  EXPECT_EQ(pb::bench_cpus(), allowed);
}
