#include "bench/duet.hpp"

#include <filesystem>

#include "bench/compare.hpp"
#include "bench/family.hpp"
#include "bench/gate.hpp"
#include "bench/ingest.hpp"
#include "bench/machine.hpp"
#include "bench/plausibility.hpp"
#include "popper/error.hpp"

namespace popper::bench {

bool current_first(int trial) { return trial % 4 == 0 || trial % 4 == 3; }

Duet alternate(int trials, const std::function<BenchTable(bool current, int trial)>& measure) {
  Duet d;
  for (int t = 0; t < trials; ++t) {
    for (int side = 0; side < 2; ++side) {
      const bool is_current = (side == 0) == current_first(t);
      auto one = measure(is_current, t);
      auto& into = is_current ? d.current : d.base;
      if (into.metadata.empty()) into.metadata = one.metadata;
      merge_rows(into.rows, one.rows);
    }
  }
  mark_invalid_vendor_rows(d.current);
  mark_invalid_vendor_rows(d.base);
  return d;
}

Duet run_duet(const DuetOptions& opt) {
  if (opt.trials < 2) throw Error("--trials must be >= 2 for a testable comparison");
  const auto fam = load_family(opt.source_dir, opt.family, opt.build_dir);
  RefBuildOptions rb;
  rb.source_dir = opt.source_dir;
  rb.build_dir = opt.build_dir;
  rb.ref = opt.against == "auto" ? default_reference(opt.source_dir) : opt.against;
  rb.families = {opt.family};
  rb.jobs = opt.jobs;
  rb.progress = opt.progress;
  rb.same_options = true;  // timed against this build: linked as it is
  std::string sha;
  const std::string ref_build = build_reference(rb, &sha);
  if (!std::filesystem::exists(ref_build + "/bin/" + fam.executable))
    throw Error(opt.family + " does not exist at " + sha);
  const auto machine = probe_machine();
  CompareOptions co;
  co.source_dir = opt.source_dir;
  co.shapes = opt.shapes;
  co.tiers = {Tier::Wrapped, Tier::Hand};
  co.precisions = opt.precisions;
  co.threads = opt.threads;
  co.trials = 1;
  co.reps_per_trial = 2;
  co.blas_core_types = false;
  co.progress = opt.progress;
  auto d = alternate(opt.trials, [&](bool current, int trial) {
    co.build_dir = current ? opt.build_dir : ref_build;
    co.first_trial = trial;
    if (opt.progress)
      opt.progress("duet trial " + std::to_string(trial + 1) + "/" + std::to_string(opt.trials) + ": " +
                   (current ? "current" : "base " + sha.substr(0, 12)));
    return run_compare(co, fam, machine, nullptr);
  });
  d.base.set_meta("commit", sha);
  d.base.set_meta("fingerprint", d.current.meta("fingerprint").value_or(""));
  return d;
}

}  // namespace popper::bench
