// The ceiling's screening (vendors.hpp, plan_ceiling step 4) is timed once and
// reused while nothing it depends on changes: the machine, the check shape,
// the configurations, the ceiling programs and their libraries. A fake BLIS
// ceiling program (a shell script answering --probe and a timing run, and
// logging each call) stands in for the real one.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "bench/vendors.hpp"
#include "popper/runtime_paths.hpp"

namespace pb = popper::bench;
namespace fs = std::filesystem;

namespace {

// BLIS_ARCH_TYPE ids as vendors.cpp's table numbers them; skx is 3x faster.
// It answers --list-shapes, --probe and a timing run over its --shape
// arguments at --threads, and logs each timing run.
const char* kFakeBlis = R"(#!/bin/sh
case "${BLIS_ARCH_TYPE-}" in
  "") name=generic ;; 0) name=skx ;; 3) name=haswell ;; 4) name=sandybridge ;; 5) name=penryn ;;
  6) name=zen3 ;; 7) name=zen2 ;; 8) name=zen ;; *) name=unknown ;;
esac
if [ "$1" = --probe ]; then echo "# config: $name"; exit 0; fi
if [ "$1" = --list-shapes ]; then echo "small_128,128,128,128,gate"; echo "wide_640,640,640,640,gate"; exit 0; fi
shapes=""; threads=1
while [ $# -gt 0 ]; do
  case "$1" in --shape) shapes="$shapes $2"; shift ;; --threads) threads=$2; shift ;; --reps|--min-time) shift ;; esac
  shift
done
echo "timed $name" >> "$(dirname "$0")/calls"
s=3.0e-04; [ "$name" = skx ] && s=1.0e-04
echo "family,tier,backend,shape,precision,threads,rep,iterations,seconds_per_iter,flop_per_iter,bytes_per_iter,verdict"
for sh in $shapes; do for p in f32 f64; do
  echo "gemm,ceiling,blis:$name,$sh,$p,$threads,0,100,$s,1e6,1e5,not_verified"
done; done
)";

struct Fixture {
  fs::path dir;
  pb::FamilyDescriptor fam;
  pb::MachineInfo m;
  pb::PlanOptions po;

  Fixture() {
    dir = popper::make_temp_dir("popper-screening");
    if (dir.empty()) throw std::runtime_error("cannot create a temporary directory");
    fs::create_directories(dir / "bin");
    write_program(kFakeBlis);
    fam.family = "gemm";
    fam.ceilings = {"blis_gemm_raw"};
    fam.blas_core_types = true;
    fam.gate.shapes = {"no_such_shape", "small_128", "wide_640"};
    m.cpu_model = "Test CPU";
    m.cores = 2;
    m.isa = {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl"};
    m.cpu_flags = {"avx", "avx2", "avx512bw", "avx512cd", "avx512dq", "avx512f", "avx512vl",
                   "fma", "sse2", "sse3",     "sse4_1",   "sse4_2",   "ssse3"};
    po.screening_cache = (dir / "screening.json").string();
  }
  ~Fixture() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  void write_program(const std::string& text) {
    const fs::path p = dir / "bin" / "ceiling_blis_gemm_raw";
    std::ofstream(p) << text;
    fs::permissions(p, fs::perms::owner_all);
  }
  int timed_runs() const {
    std::ifstream in(dir / "bin" / "calls");
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.rfind("timed ", 0) == 0;
    return n;
  }
  pb::CeilingPlan plan() const { return pb::plan_ceiling(fam, m, dir.string(), po); }
};

const pb::VendorConfig* find(const pb::CeilingPlan& p, const std::string& backend) {
  for (const auto& c : p.configs)
    if (c.backend() == backend && c.status != pb::ConfigStatus::Duplicate) return &c;
  return nullptr;
}

}  // namespace

TEST(BenchScreeningCache, ASecondPlanReusesTheTimingsAndScreensAlike) {
  Fixture f;
  const auto first = f.plan();
  const int timed = f.timed_runs();
  ASSERT_GE(timed, 2) << "the first plan times every configuration with a rival";
  EXPECT_TRUE(first.check_reused_from.empty());
  ASSERT_TRUE(find(first, "blis:zen"));
  EXPECT_EQ(find(first, "blis:zen")->status, pb::ConfigStatus::ScreenedOut) << "3x slower than skx";
  // Every gate shape the program lists, at every thread count screened; not one it lacks.
  const auto& skx = find(first, "blis:skx")->screen_seconds;
  EXPECT_EQ(skx.size(), 4u);
  EXPECT_TRUE(skx.count("small_128 f64 1t"));
  EXPECT_TRUE(skx.count("wide_640 f32 1t"));
  EXPECT_EQ(find(first, "blis:skx")->check_seconds[0], 1.0e-4) << "the check shape is the last gate shape";

  const auto second = f.plan();
  EXPECT_EQ(f.timed_runs(), timed) << "nothing changed: no configuration is timed again";
  EXPECT_EQ(second.check_reused_from, f.po.screening_cache);
  ASSERT_EQ(second.configs.size(), first.configs.size());
  for (std::size_t i = 0; i < first.configs.size(); ++i) {
    EXPECT_EQ(second.configs[i].status, first.configs[i].status) << first.configs[i].backend();
    EXPECT_EQ(second.configs[i].check_seconds[0], first.configs[i].check_seconds[0]);
    EXPECT_EQ(second.configs[i].screen_seconds, first.configs[i].screen_seconds);
  }
  EXPECT_EQ(second.warnings.size(), first.warnings.size()) << "the generic fallback is still reported";
}

TEST(BenchScreeningCache, AChangedProgramOrMachineIsTimedAgain) {
  Fixture f;
  (void)f.plan();
  const int timed = f.timed_runs();

  // The same build named by another path (--build-dir build against the
  // absolute default) keeps the timings.
  const fs::path cwd = fs::current_path();
  fs::current_path(f.dir.parent_path());
  const std::string absolute_dir = f.dir.string();
  const pb::CeilingPlan relative = pb::plan_ceiling(f.fam, f.m, f.dir.filename().string(), f.po);
  fs::current_path(cwd);
  EXPECT_EQ(relative.check_reused_from, f.po.screening_cache) << "another spelling of " << absolute_dir;
  EXPECT_EQ(f.timed_runs(), timed);

  // A program rebuilt to the same bytes keeps the timings; a changed one is timed again.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  f.write_program(kFakeBlis);
  EXPECT_EQ(f.plan().check_reused_from, f.po.screening_cache) << "same contents, newer time";
  EXPECT_EQ(f.timed_runs(), timed);
  f.write_program(std::string(kFakeBlis) + "# rebuilt\n");
  const auto rebuilt = f.plan();
  EXPECT_GT(f.timed_runs(), timed);
  EXPECT_TRUE(rebuilt.check_reused_from.empty());

  // Another set of thread counts is another screening, kept beside the first:
  // going back to one thread (bench gate's setup) reuses its timings.
  const int threads_before = f.timed_runs();
  f.po.screen_threads = {1, 2};
  (void)f.plan();
  EXPECT_GT(f.timed_runs(), threads_before);
  const int both = f.timed_runs();
  f.po.screen_threads = {1};
  EXPECT_EQ(f.plan().check_reused_from, f.po.screening_cache) << "one setup does not evict another";
  f.po.screen_threads = {1, 2};
  EXPECT_EQ(f.plan().check_reused_from, f.po.screening_cache);
  EXPECT_EQ(f.timed_runs(), both);

  // Another machine's timings are not this machine's.
  const int before = f.timed_runs();
  f.m.cpu_model = "Another CPU";
  (void)f.plan();
  EXPECT_GT(f.timed_runs(), before);

  // No cache path: always timed.
  const int again = f.timed_runs();
  f.po.screening_cache.clear();
  (void)f.plan();
  EXPECT_GT(f.timed_runs(), again);
}

TEST(BenchScreeningCache, AnUnreadableCacheIsTimedAgainAndRewritten) {
  Fixture f;
  std::ofstream(f.po.screening_cache) << "{ not json";
  const auto p = f.plan();
  EXPECT_GE(f.timed_runs(), 2);
  EXPECT_TRUE(p.check_reused_from.empty());
  (void)f.plan();
  EXPECT_EQ(f.plan().check_reused_from, f.po.screening_cache) << "the rewritten cache is used";
}

// Screening an inherited configuration: kept when the family does not name
// the library its wrapped tier calls (or names this one), screened out like
// any other when the wrapped tier calls another library.
TEST(BenchScreeningCache, AnInheritedConfigurationIsScreenedOnlyWhenTheWrappedTierCallsAnotherLibrary) {
  Fixture f;
  auto generic = [&] {
    const auto p = f.plan();
    const auto* c = find(p, "blis:generic");
    return c ? c->status : pb::ConfigStatus::Missing;
  };
  EXPECT_EQ(generic(), pb::ConfigStatus::Run) << "no wrapped_vendor: the inherited configuration is kept";
  f.fam.wrapped_vendor = "blis";
  EXPECT_EQ(generic(), pb::ConfigStatus::Run) << "the wrapped tier calls BLIS as inherited";
  f.fam.wrapped_vendor = "openblas";
  EXPECT_EQ(generic(), pb::ConfigStatus::ScreenedOut) << "3x slower than skx, and nothing measures FFI against it";
}
