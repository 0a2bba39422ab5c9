// bench compare --shard K/N and bench merge: shards partition the shapes, and
// merging the shards' tables gives back exactly the unsharded row set.
#include <gtest/gtest.h>

#include <set>

#include "bench/csv.hpp"
#include "bench/merge.hpp"
#include "popper/error.hpp"

namespace pb = popper::bench;

namespace {

pb::BenchTable table_of(const std::vector<std::string>& shapes, const std::string& fingerprint) {
  pb::BenchTable t;
  t.set_meta("commit", "abc123");
  t.set_meta("fingerprint", fingerprint);
  for (const auto& s : shapes)
    for (const char* tier : {"ceiling", "hand"}) {
      pb::BenchRow r;
      r.key = {"gemm", pb::tier_from(tier, "test"), tier[0] == 'c' ? "openblas:Haswell" : "cpu:avx2", s, "f32", 1,
               "warm"};
      r.samples = {1.0};
      t.rows.push_back(r);
    }
  return t;
}

std::set<pb::BenchKey> keys(const pb::BenchTable& t) {
  std::set<pb::BenchKey> k;
  for (const auto& r : t.rows) k.insert(r.key);
  return k;
}

}  // namespace

TEST(BenchShard, ShardsPartitionTheShapes) {
  const std::vector<std::string> shapes{"a", "b", "c", "d", "e"};
  for (int n = 1; n <= 6; ++n) {
    std::multiset<std::string> seen;
    for (int k = 1; k <= n; ++k)
      for (const auto& s : pb::shard_shapes(shapes, {k, n})) seen.insert(s);
    EXPECT_EQ(seen, std::multiset<std::string>(shapes.begin(), shapes.end())) << "N = " << n;
  }
  EXPECT_EQ(pb::shard_shapes(shapes, {2, 2}), (std::vector<std::string>{"b", "d"}));
}

TEST(BenchShard, ParseRejectsWhatIsNotKOfN) {
  EXPECT_EQ(pb::parse_shard("2/3").index, 2);
  EXPECT_EQ(pb::parse_shard("2/3").count, 3);
  for (const char* bad : {"", "3", "0/2", "3/2", "1/0", "a/b", "1/2x", "-1/2"})
    EXPECT_THROW(pb::parse_shard(bad), popper::Error) << bad;
}

TEST(BenchMerge, TwoShardsGiveTheUnshardedRowSet) {
  const std::vector<std::string> shapes{"small_64", "small_128", "small_256"};
  const auto whole = table_of(shapes, "fp-1");
  auto one = table_of(pb::shard_shapes(shapes, {1, 2}), "fp-1");
  auto two = table_of(pb::shard_shapes(shapes, {2, 2}), "fp-1");
  one.set_meta("shard", "1/2");
  two.set_meta("shard", "2/2");
  const auto merged = pb::merge_tables({{"s1.csv", one}, {"s2.csv", two}}, false);
  EXPECT_EQ(keys(merged), keys(whole));
  EXPECT_EQ(merged.rows.size(), whole.rows.size());
  EXPECT_FALSE(merged.meta("shard"));
  ASSERT_TRUE(merged.meta("merged_from.2"));
  EXPECT_NE(merged.meta("merged_from.2")->find("shard 2/2"), std::string::npos);
  ASSERT_TRUE(merged.meta("rows_from.2"));
  EXPECT_NE(merged.meta("rows_from.2")->find("gemm/hand/cpu:avx2/small_128/f32/threads:1/warm"), std::string::npos);
  EXPECT_EQ(merged.meta("rows_from.1")->find("small_128"), std::string::npos);
  // The merged table is a valid bench CSV (metadata keys and all).
  EXPECT_EQ(pb::parse_bench_csv(pb::format_bench_csv(merged), "merged.csv").rows.size(), merged.rows.size());
  EXPECT_EQ(*merged.meta("fingerprint"), "fp-1");
}

TEST(BenchMerge, RefusesOverlapAndMixedMachines) {
  const auto a = table_of({"x"}, "fp-1"), b = table_of({"x"}, "fp-1"), c = table_of({"y"}, "fp-2");
  EXPECT_THROW(pb::merge_tables({{"a.csv", a}, {"b.csv", b}}, false), popper::Error);
  EXPECT_THROW(pb::merge_tables({{"a.csv", a}, {"c.csv", c}}, false), popper::Error);
  const auto mixed = pb::merge_tables({{"a.csv", a}, {"c.csv", c}}, true);
  EXPECT_EQ(*mixed.meta("fingerprint"), "mixed");
  EXPECT_EQ(mixed.rows.size(), 4u);
}
