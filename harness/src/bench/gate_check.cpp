#include "bench/gate_check.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include "bench/check.hpp"
#include "bench/compare.hpp"
#include "bench/family.hpp"
#include "bench/gate.hpp"
#include "bench/machine.hpp"
#include "bench/peak.hpp"
#include "popper/error.hpp"

namespace popper::bench {

namespace fs = std::filesystem;

namespace {

template <class T>
bool kept(const std::vector<T>& only, const T& v) {
  return only.empty() || std::find(only.begin(), only.end(), v) != only.end();
}

std::string text(const std::string& s) { return s; }
std::string text(Tier t) { return tier_text(t); }

template <class T>
void restrict_to(std::vector<T>& list, const std::vector<T>& only, const char* what, const FamilyDescriptor& fam) {
  for (const auto& f : only)
    if (std::find(list.begin(), list.end(), f) == list.end())
      throw Error(std::string("--") + what + " " + text(f) + " is not in " + fam.path + " gate");
  std::erase_if(list, [&](const T& v) { return !kept(only, v); });
}

// The base commit, built once for every family that needs it.
struct RefBuild {
  std::string dir, sha;
};

struct Baseline {
  BenchTable table;
  std::map<std::string, FunctionCounts> functions;
  std::string name;
};

// The baseline of `fam` (see gate_check.hpp), or nullopt when there is none to compare with.
std::optional<Baseline> find_baseline(const GateCheckOptions& opt, const GateOptions& g, const GateKey& key,
                                      const FamilyDescriptor& fam, const GateRun& run, RefBuild& ref) {
  Baseline base;
  const std::string committed = opt.source_dir + "/baselines/" + key.id() + "/" + fam.family + "-gate.csv";
  const std::string path = !opt.baseline.empty() ? opt.baseline : committed;
  if (fs::exists(path)) {
    base.table = read_bench_csv(path);
    base.functions = read_functions(functions_path(path));
    base.name = path;
    if (const auto k = base.table.meta("gate_key"); opt.baseline.empty() && k && *k != key.id())
      throw Error(path + " says gate_key " + *k + ", not " + key.id() + ": it was copied, not recorded");
    return base;
  }
  if (!opt.baseline.empty()) throw Error("no baseline at " + opt.baseline);
  if (opt.against.empty()) {
    opt.progress("popper bench gate: no gate baseline for key " + key.id() + " (" + committed + ")\n" +
                 "  record one:  popper bench gate --family " + fam.family +
                 " --no-check && popper bench baseline save --from " + opt.out + "\n" +
                 "  or compare with the base commit measured now:  popper bench gate --family " + fam.family +
                 " --against auto");
    return std::nullopt;
  }
  if (ref.dir.empty()) {
    RefBuildOptions rb;
    rb.source_dir = opt.source_dir;
    rb.build_dir = opt.build_dir;
    rb.ref = opt.against == "auto" ? default_reference(opt.source_dir) : opt.against;
    rb.families = opt.families;
    rb.jobs = opt.jobs;
    rb.progress = opt.progress;
    opt.progress("gate: no committed baseline for key " + key.id() + "; measuring the base commit " + rb.ref +
                 " in this run");
    ref.dir = build_reference(rb, &ref.sha);
  }
  if (!fs::exists(ref.dir + "/bin/" + fam.executable)) {
    opt.progress("gate: " + fam.family + " does not exist at " + ref.sha.substr(0, 12) +
                 ": its rows are NEW, nothing to compare");
  } else {
    GateOptions gr = g;
    gr.build_dir = ref.dir;
    auto ref_run = run_gate(gr, fam);
    base.table = std::move(ref_run.table);
    base.table.metadata = run.table.metadata;  // same machine, same gate key, same run
    base.table.set_meta("commit", ref.sha);
    base.functions = std::move(ref_run.functions);
  }
  base.name = "commit " + ref.sha + " (built and measured in this run)";
  return base;
}

// Measures one family's gate rows and writes them to the CSV; returns the run.
GateRun measure_family(const GateCheckOptions& opt, const GateOptions& g, const GateKey& key,
                       const FamilyDescriptor& fam, const std::string& out) {
  const auto machine = probe_machine();
  auto run = run_gate(g, fam);
  const auto peak = load_peak_cache(opt.build_dir + "/peak.json");
  auto md = run_metadata(machine, opt.source_dir, opt.build_dir,
                         peak && peak->fingerprint == fingerprint(machine) ? &*peak : nullptr);
  for (auto& kv : key.metadata()) md.push_back(kv);
  for (auto& kv : run.table.metadata) md.push_back(kv);
  run.table.metadata = md;
  if (fs::path(out).has_parent_path()) fs::create_directories(fs::path(out).parent_path());
  write_bench_csv(out, run.table);
  write_functions(functions_path(out), run.functions);
  opt.progress("wrote " + out);
  return run;
}

}  // namespace

int run_gate_check(const GateCheckOptions& options, std::ostream& report) {
  GateCheckOptions opt = options;
  if (!opt.progress) opt.progress = [](const std::string&) {};
  if (opt.families.size() > 1 && (!opt.out.empty() || !opt.baseline.empty()))
    throw Error("--out and --baseline name one family's files; use them with one --family");
  GateOptions g;
  g.build_dir = opt.build_dir;
  g.progress = opt.progress;
  g.jobs = opt.jobs;
  if (opt.families.empty()) throw Error("no bench family to gate");
  g.probe =
      machine_probe_command(opt.build_dir, load_family(opt.source_dir, opt.families.front(), opt.build_dir).executable);
  g.env = gate_environment(g.valgrind, g.probe);
  const GateKey key = probe_gate_key(g);
  opt.progress("gate key: " + key.id() + " (cpu path " + key.cpu_isa + " under valgrind, OpenBLAS " +
               key.openblas_core + ")");
  if (key.cpu_isa != "avx512")
    opt.progress("note: valgrind's CPU has no AVX-512, so the gate counts the " + key.cpu_isa +
                 " paths; AVX-512 paths are judged only by the timed check (popper bench check)");
  RefBuild ref;
  int worst = 0;
  for (const auto& family : opt.families) {
    auto fam = load_family(opt.source_dir, family, opt.build_dir);
    restrict_to(fam.gate.shapes, opt.only_shapes, "shapes", fam);
    restrict_to(fam.gate.tiers, opt.only_tiers, "tiers", fam);
    restrict_to(fam.gate.precisions, opt.only_precisions, "precision", fam);
    GateCheckOptions one = opt;
    if (one.out.empty()) one.out = "reports/bench-" + fam.family + "-gate.csv";
    auto run = measure_family(one, g, key, fam, one.out);
    if (opt.no_check) continue;
    auto base = find_baseline(one, g, key, fam, run, ref);
    if (!base) {
      worst = std::max(worst, 2);
      continue;
    }
    std::erase_if(base->table.rows, [&](const BenchRow& r) {
      return !kept(opt.only_shapes, r.key.shape) || !kept(opt.only_tiers, r.key.tier) ||
             !kept(opt.only_precisions, r.key.precision);
    });
    const auto check = check_tables(base->table, run.table, {}, {});
    report << "family " << fam.family << ", baseline: " << base->name << "\n" << format_check_report(check);
    for (const auto& rc : check.rows) {
      if (rc.change == Change::Unchanged || rc.change == Change::New || rc.change == Change::Missing) continue;
      const std::string k = rc.key.to_string();
      const auto moved = top_function_changes(base->functions[k], run.functions[k]);
      if (moved.empty()) continue;
      report << "  " << k << ": functions that moved most\n";
      for (const auto& line : moved) report << "    " << line << "\n";
    }
    worst = std::max(worst, check.exit_code());
  }
  return worst;
}

}  // namespace popper::bench
