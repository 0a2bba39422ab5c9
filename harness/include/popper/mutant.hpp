// Mutants: named, deliberately broken variants of a kernel or of its input,
// declared by a falsification test (`mutants:` in the contract) and run by
// `popper audit --mutants`, which expects the test to fail under each one.
//
// A mutation point asks whether its mutant is the one this process runs:
//
//   if (POPPER_MUTANT("gemm-avx2-tail-mask")) mask = shorter_mask;   // impl code
//   if (popper::mutant::active("gemm-drop-k-term")) a[last] = 0;     // test code
//
// The process runs at most one mutant, named by the environment variable
// POPPER_MUTANT (set by the audit, never by users). In impl code the macro is
// `false` unless the translation unit is compiled with POPPER_MUTANTS=1,
// which only popper_impl_mutants (linked into the contract test binary) is:
// the shipped library holds no mutant code. Every hit is counted, so a
// mutant whose point is never reached is reported as such, not as survived
// by chance. Hoist the check out of hot loops: it compares strings.
#pragma once
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace popper::mutant {

// The mutant this process runs ("" for none), read once from POPPER_MUTANT.
inline const std::string& active_name() {
  static const std::string name = [] {
    const char* v = std::getenv("POPPER_MUTANT");
    return std::string(v ? v : "");
  }();
  return name;
}

inline std::atomic<long>& hit_count() {
  static std::atomic<long> hits{0};
  return hits;
}

// True when `name` is the mutant this process runs; counts the hit.
inline bool active(const char* name) {
  const std::string& a = active_name();
  if (a.empty() || std::strcmp(a.c_str(), name) != 0) return false;
  hit_count().fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace popper::mutant

#if defined(POPPER_SHARED_BY_ENGINE_VARIANTS)
// popper's own build compiles the engine's sources without a mutation point
// once, for both its variants, and sorts them when CMake configures: a point
// added since then would be compiled out of the mutant variant unseen.
#define POPPER_MUTANT(name) POPPER_MUTANT_added_to_an_engine_source_shared_by_both_variants_rerun_cmake
#elif defined(POPPER_MUTANTS) && POPPER_MUTANTS
#define POPPER_MUTANT(name) (::popper::mutant::active(name))
#else
#define POPPER_MUTANT(name) (false)
#endif
