// `popper bench mutants`: a family's bench mutants (popper/bench_protocol.hpp
// kBenchMutants) run over the rows its descriptor declares (bench_mutants:
// rows, cold_rows), each judged caught or not, as `popper audit --mutants`
// does for the tests.
//
//   clean run          the suite on the rows, no mutant: every hand row must be
//                      timed and not failed, else nothing can be judged (Error)
//   one run a mutant   POPPER_BENCH_MUTANT=<name> on the rows of its cache mode
//   killed             every hand row of the clean run is reported with the
//                      verdict of the check that guards it (caught_by)
//   survived           any hand row timed, or reported by another check
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "bench/csv.hpp"
#include "bench/family.hpp"
#include "popper/bench_protocol.hpp"

namespace popper::bench {

// The hand rows of `clean` (of the mutant's cache mode) against the same rows
// of the mutant's run.
BenchMutantResult judge_bench_mutant(const std::string& family, const BenchMutantSpec& mutant,
                                     const std::vector<BenchRow>& clean, const std::vector<BenchRow>& mutated);

// Runs <bin_dir>/<executable> once clean and once per mutant on the declared
// rows. Throws Error when the family declares no rows, or when the clean run
// fails or has no hand row to guard.
std::vector<BenchMutantResult> run_bench_mutants(const FamilyDescriptor& family, const std::string& bin_dir,
                                                 const std::function<void(const std::string&)>& say);

}  // namespace popper::bench
