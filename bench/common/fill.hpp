// Deterministic operand fill shared by the suites (header-only: a .cpp in a
// bench/ subfolder would become an executable).
#pragma once
#include <cstdint>
#include <vector>

namespace popper::suite {

// Uniform in [-1, 1): the same LCG as the ceiling programs.
template <class T>
void fill_uniform(std::vector<T>& v, std::uint64_t seed) {
  std::uint64_t x = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (auto& e : v) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    e = static_cast<T>(static_cast<double>(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
}

}  // namespace popper::suite
