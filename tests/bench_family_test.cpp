// Where `popper bench --family F` finds F (bench/family.hpp load_family): a
// descriptor path, then a project's build tree (popper_add_bench_family),
// then popper's bench/ folder; a family found nowhere is an error that names
// every place looked and the families there.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "bench/family.hpp"
#include "popper/error.hpp"
#include "popper/runtime_paths.hpp"

namespace {

namespace fs = std::filesystem;
namespace pb = popper::bench;

fs::path temp_dir() {
  const std::string dir = popper::make_temp_dir("popper-family");
  if (dir.empty()) throw std::runtime_error("cannot create a temporary directory");
  return dir;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(BenchFamily, AProjectsBuildTreeComesBeforeBenchAndBringsItsTree) {
  const fs::path root = temp_dir(), src = root / "src", build = root / "build";
  write(src / "bench" / "dot" / "family.yaml", "family: dot\nexecutable: bench_in_source\n");
  write(build / "popper-bench" / "dot" / "family.yaml",
        "family: dot\nexecutable: bench_dot\nsource_dir: /p/src\nbuild_dir: /p/build\ncontracts: /p/contracts\n");
  const auto f = pb::load_family(src.string(), "dot", build.string());
  EXPECT_EQ(f.executable, "bench_dot");
  EXPECT_EQ(f.source_dir, "/p/src");
  EXPECT_EQ(f.build_dir, "/p/build");
  EXPECT_EQ(f.contracts, "/p/contracts");
  EXPECT_EQ(pb::load_family(src.string(), "dot").executable, "bench_in_source");  // no build tree given
  const auto by_path = pb::load_family(src.string(), (src / "bench" / "dot" / "family.yaml").string(), build.string());
  EXPECT_EQ(by_path.executable, "bench_in_source");
  EXPECT_EQ(pb::list_families(src.string(), build.string()), (std::vector<std::string>{"dot"}));
  fs::remove_all(root);
}

TEST(BenchFamily, AMisspelledFamilyNamesWhereItLookedAndWhatIsThere) {
  const fs::path root = temp_dir(), src = root / "src", build = root / "build";
  write(src / "bench" / "gemm" / "family.yaml", "family: gemm\n");
  write(build / "popper-bench" / "dot" / "family.yaml", "family: dot\n");
  try {
    pb::load_family(src.string(), "dto", build.string());
    FAIL() << "a missing family loaded";
  } catch (const popper::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("unknown bench family 'dto'"), std::string::npos) << m;
    EXPECT_NE(m.find((build / "popper-bench" / "dto" / "family.yaml").string()), std::string::npos) << m;
    EXPECT_NE(m.find((src / "bench" / "dto" / "family.yaml").string()), std::string::npos) << m;
    EXPECT_NE(m.find("families there: dot, gemm"), std::string::npos) << m;
  }
  EXPECT_THROW(pb::load_family(src.string(), (root / "nothing.yaml").string()), popper::Error);
  fs::remove_all(root);
}

}  // namespace
