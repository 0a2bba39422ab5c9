// The repository's house rules (CONTRIBUTING.md), checked on the tree itself:
//  1. contracts/<family>/<stem>.yaml: every contract sits in the folder of the
//     family whose falsifiers bind it (falsify/<family>), and every family
//     folder of falsify/ has its contract folder.
//  2. Includes run down the layers
//       harness  <-  impl, tests  <-  workloads  <-  falsify, tools  <-  bench  <-  ceiling
//     a file includes only from its own top-level folder or a lower layer:
//     every #include "..." (resolved as the compiler does, from the file's
//     folder, then the include directories its folder's targets add) and every
//     include directory a CMake file of that folder adds.
// Each check also runs on a small tree with one fault of each kind, so a
// check that could not fail would fail here.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "popper/runtime_paths.hpp"

namespace fs = std::filesystem;

namespace {

// Layer of each top-level folder that holds code; equal layers may not include each other.
const std::map<std::string, int> kLayer = {{"harness", 0}, {"impl", 1},  {"tests", 1}, {"workloads", 2},
                                           {"falsify", 3}, {"tools", 3}, {"bench", 4}, {"ceiling", 5}};

// Where `#include "x"` is looked up after the including file's own folder: the
// include directories the folder's CMake targets add (source root = ".").
const std::map<std::string, std::vector<std::string>> kIncludeRoots = {
    {"harness", {"harness/src", "harness/include"}},         {"impl", {".", "harness/include"}},
    {"tests", {"harness/src", "harness/include"}},           {"workloads", {".", "harness/include"}},
    {"falsify", {"falsify", ".", "harness/include"}},        {"tools", {".", "harness/include"}},
    {"bench", {"bench", "falsify", ".", "harness/include"}}, {"ceiling", {"ceiling", "."}}};

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string top_folder(const fs::path& rel) { return rel.empty() ? "" : rel.begin()->string(); }

bool is_source(const fs::path& p) {
  static const std::vector<std::string> exts = {".c", ".h", ".cpp", ".hpp", ".inl", ".cu", ".cuh"};
  return std::find(exts.begin(), exts.end(), p.extension().string()) != exts.end();
}

bool is_cmake(const fs::path& p) { return p.filename() == "CMakeLists.txt" || p.extension() == ".cmake"; }

// "from includes to": allowed, or the reason it is not.
std::string judge(const std::string& from, const std::string& to) {
  if (from == to) return "";
  const auto t = kLayer.find(to);
  if (t == kLayer.end()) return to + "/ is not a code layer";
  if (t->second < kLayer.at(from)) return "";
  return to + "/ is not below " + from + "/";
}

std::vector<std::string> contract_layout_faults(const fs::path& root) {
  std::vector<std::string> faults;
  const fs::path contracts = root / "contracts", falsify = root / "falsify";
  for (const auto& e : fs::recursive_directory_iterator(contracts)) {
    if (!e.is_regular_file() || (e.path().extension() != ".yaml" && e.path().extension() != ".yml")) continue;
    const fs::path rel = fs::relative(e.path(), contracts);
    if (std::distance(rel.begin(), rel.end()) != 2)
      faults.push_back("contracts/" + rel.generic_string() + ": not in a family folder contracts/<family>/");
    else if (!fs::is_directory(falsify / top_folder(rel)))
      faults.push_back("contracts/" + rel.generic_string() + ": no falsify/" + top_folder(rel) +
                       "/, so its folder names no family");
  }
  for (const auto& e : fs::directory_iterator(falsify)) {
    if (!e.is_directory()) continue;
    const fs::path folder = contracts / e.path().filename();
    bool has_contract = false;
    if (fs::is_directory(folder))
      for (const auto& c : fs::directory_iterator(folder)) has_contract |= c.path().extension() == ".yaml";
    if (!has_contract)
      faults.push_back("falsify/" + e.path().filename().string() + "/: no contract in contracts/" +
                       e.path().filename().string() + "/");
  }
  std::sort(faults.begin(), faults.end());
  return faults;
}

std::vector<std::string> include_layer_faults(const fs::path& root) {
  static const std::regex include_line(R"re(^\s*#\s*include\s*"([^"]+)")re");
  static const std::regex include_dirs(R"(target_include_directories\s*\(([^)]*)\))");
  std::vector<std::string> faults;
  for (const auto& [folder, layer] : kLayer) {
    if (!fs::is_directory(root / folder)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / folder)) {
      if (!e.is_regular_file()) continue;
      const fs::path rel = fs::relative(e.path(), root);
      const std::string text = read_text(e.path());
      if (is_source(e.path())) {
        std::istringstream lines(text);
        std::string line;
        for (int n = 1; std::getline(lines, line); ++n) {
          std::smatch m;
          if (!std::regex_search(line, m, include_line)) continue;
          std::vector<fs::path> candidates = {e.path().parent_path() / m[1].str()};
          for (const auto& r : kIncludeRoots.at(folder)) candidates.push_back(root / r / m[1].str());
          for (const auto& c : candidates) {
            if (!fs::is_regular_file(c)) continue;  // not here: look further (a system or generated header)
            const std::string to = top_folder(fs::relative(fs::weakly_canonical(c), fs::weakly_canonical(root)));
            if (const std::string why = judge(folder, to); !why.empty())
              faults.push_back(rel.generic_string() + ":" + std::to_string(n) + ": includes \"" + m[1].str() +
                               "\": " + why);
            break;
          }
        }
      } else if (is_cmake(e.path())) {
        for (std::sregex_iterator it(text.begin(), text.end(), include_dirs), end; it != end; ++it) {
          std::istringstream words((*it)[1].str());
          for (std::string w; words >> w;) {
            std::string dir = w;
            for (const auto& [var, value] :
                 {std::pair<std::string, std::string>{"${PROJECT_SOURCE_DIR}", root.string()},
                  {"${CMAKE_CURRENT_SOURCE_DIR}", e.path().parent_path().string()},
                  {"${CMAKE_CURRENT_LIST_DIR}", e.path().parent_path().string()}})
              if (dir.rfind(var, 0) == 0) dir = value + dir.substr(var.size());
            if (dir == w) continue;  // a keyword, a generated or third-party directory
            const fs::path d = fs::relative(fs::path(dir).lexically_normal(), root);
            if (d.empty() || d == ".") continue;  // the source root: the #include lines are judged one by one
            if (const std::string why = judge(folder, top_folder(d)); !why.empty())
              faults.push_back(rel.generic_string() + ": include directory " + d.generic_string() + ": " + why);
          }
        }
      }
    }
  }
  std::sort(faults.begin(), faults.end());
  return faults;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "\n  " + x;
  return s;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A tree with one fault of each kind beside correct neighbours.
fs::path faulty_tree() {
  const fs::path t = popper::make_temp_dir("popper-layout");
  if (t.empty()) throw std::runtime_error("cannot create a temporary directory");
  write(t / "contracts/gemm/gemm-v1.yaml", "metadata: {}\n");
  write(t / "contracts/loose-v1.yaml", "metadata: {}\n");        // not in a family folder
  write(t / "contracts/stray/stray-v1.yaml", "metadata: {}\n");  // no falsify/stray
  write(t / "falsify/gemm/testbed.hpp", "#include \"workloads/gemm/shapes.h\"\n#include \"impl/gemm/gemm.hpp\"\n");
  write(t / "falsify/gemm/shape_falsifiers.cpp", "#include \"testbed.hpp\"\n#include \"bench/gemm/suite.hpp\"\n");
  write(t / "falsify/nsa/x_falsifiers.cpp", "#include <vector>\n");  // no contracts/nsa
  write(t / "falsify/CMakeLists.txt", "target_include_directories(t PRIVATE ${PROJECT_SOURCE_DIR}/bench)\n");
  write(t / "workloads/gemm/shapes.h", "#include \"impl/gemm/gemm.hpp\"\n");
  write(t / "impl/gemm/gemm.hpp", "#include \"popper/error.hpp\"\n");
  write(t / "harness/include/popper/error.hpp", "");
  write(t / "bench/gemm/suite.hpp", "#include \"gemm/testbed.hpp\"\n#include \"workloads/gemm/shapes.h\"\n");
  write(t / "ceiling/cblas_gemm_raw.c", "#include \"workloads/gemm/shapes.h\"\n");
  return t;
}

}  // namespace

TEST(Layout, EveryContractSitsInItsFamilysFolder) {
  const auto faults = contract_layout_faults(POPPER_SOURCE_DIR);
  EXPECT_TRUE(faults.empty()) << joined(faults);
}

TEST(Layout, IncludesRunDownTheLayers) {
  const auto faults = include_layer_faults(POPPER_SOURCE_DIR);
  EXPECT_TRUE(faults.empty()) << joined(faults);
}

TEST(Layout, TheChecksFindEachKindOfFault) {
  const fs::path t = faulty_tree();
  EXPECT_EQ(contract_layout_faults(t),
            (std::vector<std::string>{
                "contracts/loose-v1.yaml: not in a family folder contracts/<family>/",
                "contracts/stray/stray-v1.yaml: no falsify/stray/, so its folder names no family",
                "falsify/nsa/: no contract in contracts/nsa/",
            }));
  EXPECT_EQ(include_layer_faults(t),
            (std::vector<std::string>{
                "falsify/CMakeLists.txt: include directory bench: bench/ is not below falsify/",
                "falsify/gemm/shape_falsifiers.cpp:2: includes \"bench/gemm/suite.hpp\": bench/ is not below falsify/",
            }));
  fs::remove_all(t);
}
