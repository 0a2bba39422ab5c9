// Bench CSV: round trip, atomic write, and rejection of corrupt/truncated files.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <unistd.h>

#include "bench/csv.hpp"
#include "bench/report.hpp"

namespace pb = popper::bench;

namespace {

pb::BenchTable sample_table() {
  pb::BenchTable t;
  t.set_meta("commit", "abc123");
  t.set_meta("fingerprint", "amd-epyc-2c-avx2-zen-00000000");
  t.set_meta("peak_fp32_avx2_gflops", "101.5 per core, 203 all cores");
  pb::BenchRow r;
  r.key = {"gemm", pb::Tier::Hand, "cpu:avx2", "square_1k", "f32", 2, "warm"};
  r.samples = {0.0251, 0.0249, 0.0250};
  r.trials = {3, 3, 4};
  r.sample_pace = {7.05e-3, 0, 7.1e-3};  // the second repetition was not probed
  r.pace = {{3, 7.2e-3}, {4, 7.06e-3}};
  r.link = {{3, 5.9e-8}};  // trial 4's processes were not linked
  r.read = {{3, 2.5e10}, {4, 2.4e10}};
  r.work_per_iter = 2.0 * 1024 * 1024 * 1024;
  r.bytes_per_iter = 12582912;
  r.pct_of_peak = 41.25;
  r.verdict = pb::Verdict::parse("verified(sampled 256)");
  t.rows.push_back(r);
  pb::BenchRow bad;
  bad.key = {"gemm", pb::Tier::Wrapped, "openblas:Zen", "small_64", "f64", 1, "warm"};
  bad.verdict = pb::Verdict::parse("incorrect: max err 1e-3 > bound 1e-12, really");  // comma must not break the row
  t.rows.push_back(bad);
  return t;
}

std::string valid_text() { return pb::format_bench_csv(sample_table()); }

// valid_text() with column `col` of the hand row replaced by `value`.
std::string with_hand_field(std::size_t col, const std::string& value) {
  std::string text = valid_text();
  auto at = text.find("gemm,hand");
  for (std::size_t i = 0; i < col; ++i) at = text.find(',', at) + 1;
  const auto end = text.find_first_of(",\n", at);
  return text.replace(at, end - at, value);
}

// valid_text() written as a file of an older schema: without the last `drop` columns.
std::string without_last_columns(std::size_t drop) {
  std::istringstream in(valid_text());
  std::string line, out;
  while (std::getline(in, line)) {
    if (line[0] != '#')
      for (std::size_t i = 0; i < drop; ++i) line.erase(line.rfind(','));
    out += line + "\n";
  }
  return out;
}

void expect_rejected(const std::string& text, const std::string& needle) {
  try {
    pb::parse_bench_csv(text, "f.csv");
    FAIL() << "accepted corrupt input; expected error containing '" << needle << "'";
  } catch (const pb::BenchFileError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("f.csv:", 0), 0u) << "error must name the file: " << e.what();
  }
}

}  // namespace

TEST(BenchCsv, RoundTripKeepsEveryField) {
  const auto t = sample_table();
  const auto back = pb::parse_bench_csv(pb::format_bench_csv(t), "mem");
  ASSERT_EQ(back.metadata, t.metadata);
  ASSERT_EQ(back.rows.size(), 2u);
  const auto& r = back.rows[0];
  EXPECT_EQ(r.key, t.rows[0].key);
  EXPECT_EQ(r.samples, t.rows[0].samples);  // shortest round-trip formatting: exact
  EXPECT_EQ(r.trials, t.rows[0].trials);
  EXPECT_EQ(r.sample_pace, t.rows[0].sample_pace);
  EXPECT_EQ(r.pace, t.rows[0].pace);
  EXPECT_EQ(r.link, t.rows[0].link);
  EXPECT_EQ(r.read, t.rows[0].read);
  EXPECT_EQ(r.work_per_iter, t.rows[0].work_per_iter);
  EXPECT_EQ(r.bytes_per_iter, t.rows[0].bytes_per_iter);
  EXPECT_DOUBLE_EQ(r.pct_of_peak, 41.25);
  EXPECT_EQ(r.verdict.label, "verified(sampled 256)");
  EXPECT_DOUBLE_EQ(r.median(), 0.0250);
  EXPECT_TRUE(back.rows[1].samples.empty());
  EXPECT_TRUE(back.rows[1].sample_pace.empty());
  EXPECT_TRUE(back.rows[1].pace.empty());
  EXPECT_EQ(back.rows[1].verdict.label, "incorrect: max err 1e-3 > bound 1e-12; really");
  EXPECT_LT(back.rows[1].pct_of_peak, 0);
}

TEST(BenchCsv, AtomicWriteThenRead) {
  const auto dir = std::filesystem::temp_directory_path() / ("popper-csv-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / "bench-gemm.csv").string();
  pb::write_bench_csv(path, sample_table());
  const auto back = pb::read_bench_csv(path);
  EXPECT_EQ(back.rows.size(), 2u);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1) << "temporary file left behind";
  std::filesystem::remove_all(dir);
}

TEST(BenchCsv, MissingFileIsAnError) {
  EXPECT_THROW(pb::read_bench_csv("/nonexistent/popper/bench.csv"), pb::BenchFileError);
}

TEST(BenchCsv, TruncatedFileRejected) {
  const std::string text = valid_text();
  const auto end = text.find("# end rows=");
  expect_rejected(text.substr(0, end), "truncated");
  // Cut in the middle of the last row: no trailer either.
  expect_rejected(text.substr(0, end - 7), "f.csv:");
}

TEST(BenchCsv, TrailerCountMustMatch) {
  std::string text = valid_text();
  text.replace(text.find("# end rows=2"), 12, "# end rows=3");
  expect_rejected(text, "rows=3");
}

TEST(BenchCsv, WrongColumnCountRejectedWithLine) {
  std::string text = valid_text();
  const auto row = text.find("gemm,hand");
  text.insert(text.find('\n', row), ",extra");
  expect_rejected(text, "expected 26 columns");
  expect_rejected(text, ":5:");  // 3 metadata lines, header, then this row
}

TEST(BenchCsv, NonNumericFieldRejected) {
  std::string text = valid_text();
  text.replace(text.find(";0.0249;"), 8, ";0.02x9;");
  expect_rejected(text, "'samples'");
}

TEST(BenchCsv, SampleCountMustMatchN) {
  std::string text = valid_text();
  const auto row = text.find("gemm,hand");
  const auto last_sample = text.rfind(";0.025,", text.find('\n', row));
  text.erase(last_sample, 6);  // drop the last sample, keep its trial: n and samples disagree
  expect_rejected(text, "'n' says 3");
}

TEST(BenchCsv, TrialsColumnMustMatchSamples) {
  expect_rejected(with_hand_field(21, "3;4"), "'trials' has 2 entries for 3 samples");
  expect_rejected(with_hand_field(21, "3;4;1e300"), "'1e300', not a trial number");
  expect_rejected(with_hand_field(21, "3;4;-1"), "not a trial number");
}

// The probes travel with their row, so a table read back (a merge of shards)
// is judged on the trials compare judged; each column is checked against the
// row's samples and trials.
TEST(BenchCsv, ProbeColumnsMustMatchTheRowsTrials) {
  expect_rejected(with_hand_field(22, "0.007;0.007"), "'sample_pace' has 2 entries for 3 samples");
  expect_rejected(with_hand_field(22, "0.007;-1;0.007"), "'sample_pace' holds '-1'");
  expect_rejected(with_hand_field(23, "3=0.007;5=0.007"), "'trial_pace' names trial 5, which no sample ran in");
  expect_rejected(with_hand_field(23, "3=0.007;3=0.008"), "names trial 3 twice");
  expect_rejected(with_hand_field(24, "3=0"), "'trial_link' holds '3=0', not a positive value");
  expect_rejected(with_hand_field(25, "3"), "'trial_read' holds '3', not <trial>=<value>");
  expect_rejected(with_hand_field(25, "x=1"), "'x' is not a number");
}

// Files of the two older schemas read: without the probes (judged on every
// trial), and without the trials too (all trial 0).
TEST(BenchCsv, OlderSchemasRead) {
  const auto v2 = pb::parse_bench_csv(without_last_columns(4), "v2.csv");
  ASSERT_EQ(v2.rows.size(), 2u);
  EXPECT_EQ(v2.rows[0].trials, (std::vector<int>{3, 3, 4}));
  EXPECT_TRUE(v2.rows[0].pace.empty() && v2.rows[0].read.empty() && v2.rows[0].sample_pace.empty());
  const auto v1 = pb::parse_bench_csv(without_last_columns(5), "v1.csv");
  ASSERT_EQ(v1.rows.size(), 2u);
  EXPECT_TRUE(v1.rows[0].trials.empty());
  EXPECT_EQ(v1.rows[0].samples.size(), 3u);
  expect_rejected(without_last_columns(2), "header");
}

TEST(BenchCsv, HeaderMustMatchSchema) {
  std::string text = valid_text();
  text.replace(text.find("family,tier"), 11, "family,tear");
  expect_rejected(text, "header");
  expect_rejected("", "no header");
}

TEST(BenchCsv, UnknownUnitRejected) {
  std::string text = valid_text();
  text.replace(text.find(",seconds,"), 9, ",minutes,");
  expect_rejected(text, "unit");
}

// Metadata with several facts is typed: one writer and one reader each, and
// the text the committed baselines hold reads back.
TEST(BenchCsvMeta, EnvironmentRoundTripsAndReadsOldText) {
  pb::BenchTable t;
  t.set_environment({{"OPENBLAS_CORETYPE", "Haswell"}, {"OMP_NUM_THREADS", "1"}});
  EXPECT_EQ(t.meta("environment"), "OPENBLAS_CORETYPE=Haswell OMP_NUM_THREADS=1");
  const auto back = pb::parse_bench_csv(pb::format_bench_csv(t), "f.csv");
  EXPECT_EQ(back.environment(), (pb::Environment{{"OPENBLAS_CORETYPE", "Haswell"}, {"OMP_NUM_THREADS", "1"}}));
  t.set_environment({});
  EXPECT_EQ(t.meta("environment"), "none");
  EXPECT_TRUE(t.environment().empty());
  t.set_environment({{"A", "1"}}, "gate_environment");
  EXPECT_EQ(t.environment("gate_environment"), (pb::Environment{{"A", "1"}}));
  EXPECT_TRUE(pb::BenchTable{}.environment().empty());
}

TEST(BenchCsvMeta, ListsAndCeilingSkipsRoundTrip) {
  pb::BenchTable t;
  t.set_meta_list("vendor_warnings", {});
  EXPECT_EQ(t.meta("vendor_warnings"), "none");
  EXPECT_TRUE(t.meta_list("vendor_warnings").empty());
  t.set_meta_list("ceiling_vendors", {"openblas [cblas_gemm_raw]: Haswell", "blis [blis_gemm_raw]: zen"});
  EXPECT_EQ(t.meta("ceiling_vendors"), "openblas [cblas_gemm_raw]: Haswell | blis [blis_gemm_raw]: zen");
  EXPECT_EQ(t.meta_list("ceiling_vendors").size(), 2u);

  const std::vector<pb::CeilingSkip> skips = {
      {"blis", "knl", "BLIS_ARCH_TYPE=1", "cpu_lacks", "no avx512pf"},
      {"openblas", "", "OPENBLAS_CORETYPE unset", "failed", "exit 1: a reason: with colons"}};
  t.set_ceiling_not_run(skips);
  EXPECT_EQ(t.meta("ceiling_not_run"),
            "blis knl (BLIS_ARCH_TYPE=1): cpu_lacks: no avx512pf | openblas "
            "OPENBLAS_CORETYPE unset: failed: exit 1: a reason: with colons");
  const auto back = pb::parse_bench_csv(pb::format_bench_csv(t), "f.csv").ceiling_not_run();
  ASSERT_EQ(back.size(), 2u);
  for (std::size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(back[i].vendor, skips[i].vendor);
    EXPECT_EQ(back[i].kernels, skips[i].kernels);
    EXPECT_EQ(back[i].setting, skips[i].setting);
    EXPECT_EQ(back[i].status, skips[i].status);
    EXPECT_EQ(back[i].reason, skips[i].reason);
  }
  t.set_meta("ceiling_not_run", "none");
  EXPECT_TRUE(t.ceiling_not_run().empty());
  EXPECT_FALSE(pb::CeilingSkip::parse("no colon here"));
}

// A Q4_K GEMV row has no compute peak of its precision, yet its weights' bytes
// over the measured bandwidth bound it; in the LLC nothing
// measured does.
TEST(BenchReport, Q4kRowsGetTheBandwidthBound) {
  popper::bench::BenchTable t;
  t.set_meta("roofline_peaks", "fp32=100/200 fp64=50/100 bw=20/30 llc_mib=32 cores=2");
  popper::bench::BenchRow r;
  r.key = {"q4k", pb::Tier::Hand, "cpu:avx512", "big_32768x4096", "q4k", 1, "warm"};
  r.work_unit = "flop";
  r.work_per_iter = 2.0 * 32768 * 4096;
  r.bytes_per_iter = 32768.0 * 4096 * 144 / 256;  // Q4_K: 144 bytes a 256-weight block
  const auto b = popper::bench::roofline_bound(t, r);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->limit, "DRAM");
  EXPECT_NEAR(b->flops, 20e9 * r.work_per_iter / r.bytes_per_iter, 1e-3 * b->flops);
  r.key.threads = 2;
  EXPECT_NEAR(popper::bench::roofline_bound(t, r)->flops, 30e9 * r.work_per_iter / r.bytes_per_iter, 1e-3 * b->flops);
  r.bytes_per_iter = 1 << 20;  // fits the 32 MiB LLC: no bound
  EXPECT_FALSE(popper::bench::roofline_bound(t, r).has_value());
}

namespace {
// A table with measured peaks (16 MiB LLC) and a timed FLOP row whose suite read its footprint at `read` B/s.
popper::bench::BenchTable table_with_peaks() {
  popper::bench::BenchTable t;
  t.set_meta("roofline_peaks", "fp32=100/200 fp64=50/100 bw=20/30 llc_mib=16 cores=2");
  return t;
}
popper::bench::BenchRow read_probed_row(popper::bench::BenchKey key, double work, double bytes, double sample,
                                        double read) {
  popper::bench::BenchRow r;
  r.key = std::move(key);
  r.work_unit = "flop";
  r.work_per_iter = work;
  r.bytes_per_iter = bytes;
  r.samples = {sample};
  r.read_bound = read;
  return r;
}
}  // namespace

// Where the suite probed a row's own footprint (read_bound), that probe bounds
// the q4k row instead of the triad, for its shape and thread count only, and
// the figure survives the CSV (footprint_read_gbs metadata).
TEST(BenchReport, Q4kRowsTakeTheReadProbeOfTheirFootprint) {
  namespace pb = popper::bench;
  pb::BenchTable t = table_with_peaks();
  pb::BenchRow r = read_probed_row({"q4k", pb::Tier::Hand, "cpu:avx512", "big_32768x4096", "q4k", 1, "warm"},
                                   2.0 * 32768 * 4096, 32768.0 * 4096 * 144 / 256, 0.002, 40e9);
  pb::BenchRow slower = r;  // another tier's probe of the same footprint: the fastest counts
  slower.key.tier = pb::Tier::Wrapped;
  slower.read_bound = 35e9;
  t.rows = {r, slower};
  t.set_footprint_reads();
  const pb::BenchTable back = pb::parse_bench_csv(pb::format_bench_csv(t), "t.csv");
  EXPECT_NEAR(back.footprint_read("big_32768x4096", "q4k", 1), 40e9, 1e7);
  EXPECT_EQ(back.footprint_read("big_32768x4096", "q4k", 2), 0);
  EXPECT_EQ(back.footprint_read("big_32768x4096", "q4k", 1, "cold"), 0);  // a warm probe bounds no cold row
  EXPECT_EQ(back.footprint_read("big_32768x4096", "f32", 1), 0);          // nor another precision's footprint
  const auto b = pb::roofline_bound(back, r);
  ASSERT_TRUE(b.has_value());
  EXPECT_NEAR(b->flops, 40e9 * r.work_per_iter / r.bytes_per_iter, 1e-3 * b->flops);
  EXPECT_EQ(b->limit.rfind("read of ", 0), 0u) << b->limit;
  // A cold row within the LLC is still bounded by its cold read: its operands were evicted.
  pb::BenchRow cold = r;
  cold.key.cache_mode = "cold";
  cold.key.shape = "llama_attn_4096x4096";
  cold.bytes_per_iter = 4096.0 * 4096 * 144 / 256;  // 9 MiB, within the 16 MiB LLC
  cold.read_bound = 30e9;
  pb::BenchTable ct = table_with_peaks();
  ct.rows = {cold};
  ct.set_footprint_reads();
  const auto cb = pb::roofline_bound(ct, cold);
  ASSERT_TRUE(cb.has_value());
  EXPECT_EQ(cb->limit.rfind("read of ", 0), 0u) << cb->limit;
  cold.key.cache_mode = "warm";  // the same row warm sits in the LLC: nothing measured bounds it
  EXPECT_FALSE(pb::roofline_bound(ct, cold).has_value());
  r.key.threads = 2;  // no probe at 2 threads: the triad of all cores
  EXPECT_NEAR(pb::roofline_bound(back, r)->flops, 30e9 * r.work_per_iter / r.bytes_per_iter, 1e-3 * b->flops);
  EXPECT_EQ(pb::roofline_bound(back, r)->limit, "DRAM");
}

// A row with a compute peak (gemm's GEMV, f32) whose suite read its own
// footprint is bounded by that read, not the triad, also within the LLC (the
// read was of the bytes where they sit); the same shape in another precision
// is not; and an entry written before reads were keyed by precision serves
// every precision.
TEST(BenchReport, GemvRowsTakeTheReadOfTheirOwnFootprint) {
  namespace pb = popper::bench;
  pb::BenchTable t = table_with_peaks();
  // 4 MiB: within the LLC
  pb::BenchRow r = read_probed_row({"gemm", pb::Tier::Hand, "cpu:avx512", "gemv_1k", "f32", 1, "warm"},
                                   2.0 * 1024 * 1024, 4.0 * (1024 * 1024 + 2048), 1e-4, 60e9);
  t.rows = {r};
  t.set_footprint_reads();
  const auto b = pb::roofline_bound(t, r);
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(b->read);
  EXPECT_FALSE(b->in_llc);
  EXPECT_NEAR(b->flops, 60e9 * r.work_per_iter / r.bytes_per_iter, 1e-3 * b->flops);
  EXPECT_EQ(b->limit.rfind("read of ", 0), 0u) << b->limit;
  pb::BenchRow f64 = r;
  f64.key.precision = "f64";
  EXPECT_FALSE(pb::roofline_bound(t, f64)->read);
  EXPECT_EQ(pb::roofline_bound(t, f64)->limit, "compute, in LLC");
  pb::BenchTable old = table_with_peaks();
  old.set_meta_list("footprint_read_gbs", {"gemv_1k/threads:1=50.00"});
  EXPECT_NEAR(old.footprint_read("gemv_1k", "f64", 1), 50e9, 1e7);
  EXPECT_TRUE(pb::roofline_bound(old, f64)->read);
}
