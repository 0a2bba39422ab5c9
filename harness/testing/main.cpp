// Main of every contract test binary. Extra flag:
//   --popper-list-bindings   print the registered ids as JSON and exit
// A duplicate registration is a programming error: the binary refuses to run.
#include <cstring>
#include <iostream>

#include <gtest/gtest.h>

#include "popper/binding.hpp"

int main(int argc, char** argv) {
  const auto& reg = popper::Registry::instance();
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--popper-list-bindings") == 0) {
      std::cout << reg.to_json().dump(2) << "\n";
      return reg.duplicates().empty() ? 0 : 1;
    }
  if (!reg.duplicates().empty()) {
    for (const auto& d : reg.duplicates()) std::cerr << "popper: id bound twice: " << d << "\n";
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
