// Main of every contract test binary (popper::testing; link it instead of
// GTest::gtest_main). Extra flags:
//   --popper-list-bindings     print the registered ids as JSON and exit
//   --popper-results-dir=DIR   write the GoogleTest JSON results to
//                              DIR/<filter>[-shard<K>of<N>].json, one file per
//                              --gtest_filter and GoogleTest shard: ctest runs
//                              each discovered id as its own process, and
//                              popper audit --results DIR reads them all
// A duplicate registration is a programming error: the binary refuses to run.
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "popper/binding.hpp"

namespace {

// A file name for one filter (its characters outside [A-Za-z0-9._-] become
// '_') and, under GoogleTest sharding, one shard: runs never share a file.
std::string results_file_name(std::string_view filter) {
  std::string out;
  for (char ch : filter)
    out += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' || ch == '_') ? ch : '_';
  if (out.empty()) out = "all";
  const char* index = std::getenv("GTEST_SHARD_INDEX");
  const char* total = std::getenv("GTEST_TOTAL_SHARDS");
  if (index && total) out += std::string("-shard") + index + "of" + total;
  return out + ".json";
}

}  // namespace

int main(int argc, char** argv) {
  const auto& reg = popper::Registry::instance();
  std::vector<char*> args;
  std::string results_dir, filter;
  for (int i = 0; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--popper-list-bindings") {
      std::cout << reg.to_json().dump(2) << "\n";
      return reg.duplicates().empty() ? 0 : 1;
    }
    if (a.rfind("--popper-results-dir=", 0) == 0) {
      results_dir = a.substr(std::strlen("--popper-results-dir="));
      continue;
    }
    if (a.rfind("--gtest_filter=", 0) == 0) filter = a.substr(std::strlen("--gtest_filter="));
    args.push_back(argv[i]);
  }
  if (!reg.duplicates().empty()) {
    for (const auto& d : reg.duplicates()) std::cerr << "popper: id bound twice: " << d << "\n";
    return 1;
  }
  // GoogleTest sets up its result writer while it parses its flags, so the
  // output flag goes in with them.
  std::string output_flag;
  if (!results_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(results_dir, ec);
    output_flag = "--gtest_output=json:" + (std::filesystem::path(results_dir) / results_file_name(filter)).string();
    args.push_back(output_flag.data());
  }
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);
  ::testing::InitGoogleTest(&n, args.data());
  return RUN_ALL_TESTS();
}
