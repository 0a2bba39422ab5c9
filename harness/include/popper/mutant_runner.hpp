// Running each falsification test (and harness) under each mutant it
// declares: `popper audit --mutants`.
//
//   for every (test T, mutant M) of the contract set:
//     <exec prefix> <test binary> --gtest_filter=<suite>.<T> with POPPER_MUTANT=M
//   killed       T failed (or crashed, or hit the timeout)
//   survived     T passed and M's mutation point was reached
//   not_reached  T passed and M's mutation point was never reached
//   not_run      T was skipped (an unmet requires), so its power is unknown here
// The exec prefix (e.g. qemu-x86_64 -cpu Haswell) and the site name let a
// CPU-matrix leg run the same mutants as another CPU would.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "popper/audit.hpp"
#include "popper/loader.hpp"

namespace popper {

struct MutantRunOptions {
  std::string test_binary;
  std::vector<std::string> exec_prefix;
  std::vector<std::pair<std::string, std::string>> env;  // extra environment for every run
  std::string site = "native";
  int jobs = 2;
  double timeout_seconds = 600;
  // Only mutants whose `path` is one of these (a CPU-matrix leg runs the
  // mutants of the path its CPU takes); empty = every mutant.
  std::vector<std::string> paths;
  std::function<void(const std::string&)> progress;
};

std::vector<MutantResult> run_mutants(const ContractSet& set, const MutantRunOptions& opt);

// Judges one run from its GoogleTest JSON text (empty when the binary wrote
// none) and the process outcome. A mutant of one `path` (cpu:avx512) whose
// point was not reached is not_run when the test recorded no evidence of that
// path (this CPU cannot take it), not_reached when it did.
MutantResult judge_mutant_run(const std::string& test_id, const std::string& json_text, bool process_ok,
                              const std::string& process_description, const std::string& path = {});

}  // namespace popper
