// Steal time around a run's processes (steal.hpp): /proc/stat's per-CPU
// field, and the run's summary by thread count and tier.
#include "bench/steal.hpp"

#include <gtest/gtest.h>

namespace pb = popper::bench;

TEST(BenchSteal, TicksAreTheEighthFieldOfEachCpuLine) {
  const std::string stat =
      "cpu  2075387 1898 188442 639553 7457 0 1240 5496 0 0\n"
      "cpu0 1055474 875 94608 303957 1963 0 89 2620 0 0\n"
      "cpu1 1019913 1023 93834 335596 5493 0 1151 2876 0 0\n"
      "cpu2 1 2 3 4 5 6 7\n"  // an old kernel's line, without steal
      "intr 1 2 3\n";
  const auto ticks = pb::parse_steal_ticks(stat);
  ASSERT_TRUE(ticks.has_value());
  EXPECT_EQ(*ticks, (std::map<int, long long>{{0, 2620}, {1, 2876}}));
  EXPECT_FALSE(pb::parse_steal_ticks("intr 1 2 3\ncpu  1 2 3 4 5 6 7 8\n").has_value());
}

TEST(BenchSteal, AMeterOnThisMachineIsAFractionOrUnknown) {
  const pb::StealMeter m({0});
  const double f = m.fraction();
  EXPECT_TRUE(f == -1 || (f >= 0 && f <= 1)) << f;
  EXPECT_EQ(pb::StealMeter({}).fraction(), -1);  // no CPUs: nothing to say
}

TEST(BenchSteal, TheSummaryGoesByThreadsThenTier) {
  pb::StealLog log;
  EXPECT_EQ(log.summary(), "");
  log.add(pb::Tier::Wrapped, 2, 0.20);
  log.add(pb::Tier::Wrapped, 2, 0.0);
  log.add(pb::Tier::Ceiling, 2, 0.004);
  log.add(pb::Tier::Hand, 1, 0.0);
  log.add(pb::Tier::Hand, 1, -1);  // unknown: left out
  EXPECT_EQ(log.summary(),
            "1 thread: hand 0.0% (max 0.0%); "
            "2 threads: ceiling 0.4% (max 0.4%), wrapped 10.0% (max 20.0%, 1 of 2 processes over 1%)");
}
