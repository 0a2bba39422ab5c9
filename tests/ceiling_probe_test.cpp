// Every ceiling program a family names answers --probe with the configuration
// it loads ("# config: <name>") or why it cannot run ("# skipped: ..."),
// without timing anything: bench compare refuses a family whose ceiling
// ignores the flag (it did for q4k, fused and nsa). Every one also refuses a
// count it cannot hold before it allocates or times anything.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "bench/family.hpp"
#include "common/process.hpp"

namespace {

using namespace popper::bench;
using popper::ProcessResult;
using popper::run_process;

TEST(CeilingProbe, EveryFamilyCeilingAnswersProbe) {
  int probed = 0;
  for (const auto& name : list_families(POPPER_SOURCE_DIR)) {
    const FamilyDescriptor fam = load_family(POPPER_SOURCE_DIR, name);
    for (const auto& prog : fam.ceilings) {
      const std::string bin = std::string(POPPER_BINARY_DIR) + "/bin/ceiling_" + prog;
      if (!std::filesystem::exists(bin)) continue;  // an optional vendor (BLIS), or a build without benches
      const ProcessResult r = run_process({bin, "--probe"}, {}, {}, 60);
      const std::string first = r.out.substr(0, r.out.find('\n'));
      EXPECT_TRUE(r.ok()) << name << ": " << bin << " --probe: " << r.describe() << "\n" << r.err;
      EXPECT_TRUE(first.rfind("# config: ", 0) == 0 || first.rfind("# skipped: ", 0) == 0)
          << name << ": " << bin << " --probe printed '" << first << "' (it ran the benchmark?)";
      EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << name << ": " << bin << " --probe printed more than one line";
      ++probed;
    }
  }
  // The sanitizer configuration builds no bench programs: reported, never passed.
  if (probed == 0) GTEST_SKIP() << "no ceiling program is built in " << POPPER_BINARY_DIR;
}

TEST(CeilingProbe, EveryFamilyCeilingRefusesACountItCannotHold) {
  // 400000000000 wrapped to 568041472 repetitions under atoi: a ceiling then
  // allocated gigabytes and timed for hours.
  const std::vector<std::vector<std::string>> bad = {
      {"--reps", "400000000000"}, {"--reps", "5x"}, {"--reps", "0"}, {"--threads", "-2"}, {"--threads", ""}};
  int checked = 0;
  for (const auto& name : list_families(POPPER_SOURCE_DIR)) {
    const FamilyDescriptor fam = load_family(POPPER_SOURCE_DIR, name);
    for (const auto& prog : fam.ceilings) {
      const std::string bin = std::string(POPPER_BINARY_DIR) + "/bin/ceiling_" + prog;
      if (!std::filesystem::exists(bin)) continue;
      for (const auto& args : bad) {
        const ProcessResult r = run_process({bin, args[0], args[1]}, {}, {}, 60);
        EXPECT_EQ(r.exit_code, 2) << bin << " " << args[0] << " '" << args[1] << "': " << r.describe();
        EXPECT_NE(r.err.find("--reps must be a whole number"), std::string::npos)
            << bin << " " << args[0] << " '" << args[1] << "' said: " << r.err;
        EXPECT_EQ(r.out.find("ceiling,"), std::string::npos) << bin << " timed a row: " << r.out;
        ++checked;
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no ceiling program is built in " << POPPER_BINARY_DIR;
}

}  // namespace
