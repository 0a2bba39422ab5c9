// Reference results shared by a run's processes (popper/bench_reference.hpp).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "popper/bench_reference.hpp"
#include "popper/runtime_paths.hpp"

namespace pb = popper::bench;
namespace fs = std::filesystem;

namespace {

// Sets the run's directory for the test's life, and removes it after.
struct RunDir {
  std::string path = popper::make_temp_dir("popper-reference-test");
  RunDir() { ::setenv(pb::kReferenceDirEnv, path.c_str(), 1); }
  ~RunDir() {
    ::unsetenv(pb::kReferenceDirEnv);
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TEST(BenchReference, OutsideARunEveryCallComputes) {
  ::unsetenv(pb::kReferenceDirEnv);
  int calls = 0;
  const auto compute = [&] { return std::vector<float>{1.5f, float(++calls)}; };
  EXPECT_EQ(pb::shared_reference("k", compute), (std::vector<float>{1.5f, 1.0f}));
  EXPECT_EQ(pb::shared_reference("k", compute), (std::vector<float>{1.5f, 2.0f}));
}

TEST(BenchReference, InARunEachKeyIsComputedOnce) {
  const RunDir run;
  ASSERT_FALSE(run.path.empty());
  int calls = 0;
  const auto compute = [&] {
    ++calls;
    return std::vector<float>{0.25f, -3.0f, 7.0f};
  };
  EXPECT_EQ(pb::shared_reference("decode/a/threads:1", compute), (std::vector<float>{0.25f, -3.0f, 7.0f}));
  EXPECT_EQ(pb::shared_reference("decode/a/threads:1", compute), (std::vector<float>{0.25f, -3.0f, 7.0f}));
  EXPECT_EQ(calls, 1);
  pb::shared_reference("decode/a/threads:2", compute);  // another key: its own result
  EXPECT_EQ(calls, 2);
}

// A torn or corrupted entry is never returned: it is computed again.
TEST(BenchReference, ACorruptEntryIsComputedAgain) {
  const RunDir run;
  int calls = 0;
  const auto compute = [&] {
    ++calls;
    return std::vector<float>(64, 2.0f);
  };
  pb::shared_reference("k", compute);
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(run.path)) entries.push_back(e.path());
  ASSERT_EQ(entries.size(), 1u);  // no temporary left beside it
  {
    std::fstream f(entries[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-12, std::ios::end);
    f.put('\x7f');  // one byte of the values flipped: the checksum no longer matches
  }
  EXPECT_EQ(pb::shared_reference("k", compute), std::vector<float>(64, 2.0f));
  EXPECT_EQ(calls, 2);
  fs::resize_file(entries[0], 20);  // cut short
  EXPECT_EQ(pb::shared_reference("k", compute), std::vector<float>(64, 2.0f));
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(pb::shared_reference("k", compute), std::vector<float>(64, 2.0f));  // rewritten whole
  EXPECT_EQ(calls, 3);
}

// A run stopped by a signal leaves its directory: the next run removes the
// directories of processes that are gone, and nothing else.
TEST(BenchReference, ARunRemovesTheDirectoriesOfRunsThatAreGone) {
  const RunDir tmp;
  const char* was = std::getenv("TMPDIR");
  const std::string saved = was ? was : "";
  ::setenv("TMPDIR", tmp.path.c_str(), 1);
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_GT(gone, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(gone, &status, 0), gone);
  const fs::path root(tmp.path);
  const auto dir = [&](const std::string& name) {
    fs::create_directory(root / name);
    std::ofstream(root / name / "entry") << "x";
    return root / name;
  };
  const auto orphan = dir("popper-run-test-" + std::to_string(gone) + "-abcdef");
  const auto mine = dir("popper-run-test-" + std::to_string(::getpid()) + "-ghijkl");
  const auto first = dir("popper-run-test-1-mnopqr");  // pid 1 is always there
  const auto other = dir("popper-run-test-notapid-stuvwx");
  const auto other_stem = dir("popper-other-" + std::to_string(gone) + "-abcdef");
  const std::string made = popper::make_run_dir("popper-run-test");
  if (was) ::setenv("TMPDIR", saved.c_str(), 1);
  else ::unsetenv("TMPDIR");
  EXPECT_FALSE(fs::exists(orphan)) << "the directory of a process that is gone stays";
  for (const auto& kept : {mine, first, other, other_stem}) EXPECT_TRUE(fs::exists(kept / "entry")) << kept;
  ASSERT_FALSE(made.empty());
  EXPECT_EQ(fs::path(made).parent_path(), root);
  EXPECT_EQ(fs::path(made).filename().string().rfind("popper-run-test-" + std::to_string(::getpid()) + "-", 0), 0u)
      << made;
}
