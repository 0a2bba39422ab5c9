// `popper bench merge`: join bench CSVs (bench/merge.hpp) and, with --claims,
// judge a family's claims on the merged table (bench/claims.hpp).
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include "bench/compare.hpp"
#include "bench/family.hpp"
#include "bench/merge.hpp"
#include "bench/peak.hpp"
#include "bench_cli.hpp"
#include "popper/error.hpp"
#include "popper/loader.hpp"

namespace popper::cli {

namespace {

struct MergeArgs {
  BenchDirs dirs;
  std::vector<std::string> inputs;
  std::string out, claims;
  bool allow_mixed = false;
};

// Judges the claims of the contracts in a.claims on the merged table (one family), runs measured apart judged together.
void judge_merged_claims(const MergeArgs& a, const bench::BenchTable& merged) {
  std::set<std::string> families;
  for (const auto& r : merged.rows) families.insert(r.key.family);
  if (families.size() != 1)
    throw Error("--claims: the merged table holds " + std::to_string(families.size()) +
                " families; merge one family's CSVs to judge its claims");
  const auto fam = bench::load_family(a.dirs.source_dir, *families.begin());
  Diagnostics diags;
  auto set = load_contract_set({a.claims}, diags);
  if (diags.has_errors()) throw Error("--claims: " + a.claims + " has contract errors (popper validate it)");
  // % of peak needs the peaks of the machine that measured the table: only when it is this one.
  const auto machine = bench::probe_machine();
  std::optional<bench::PeakResult> peak;
  if (merged.meta("fingerprint") == bench::fingerprint(machine))
    peak = bench::cached_or_measured_peak(a.dirs.build() + "/peak.json", machine, false, progress);
  const auto claims = bench::evaluate_claims(set.contracts, fam.family, merged, peak ? &*peak : nullptr, fam.peak,
                                             bench::list_family_shapes(a.dirs.build(), fam));
  const auto dir = std::filesystem::path(a.out).parent_path();
  report_claims((dir.empty() ? std::filesystem::path(".") : dir).string() + "/bench-claims.json", fam.family, claims);
}

}  // namespace

void add_bench_merge_command(CLI::App& bench, int& exit_code) {
  auto* cmd = bench.add_subcommand("merge", "Join bench CSVs (e.g. the shards of bench compare --shard K/N) into one");
  auto a = std::make_shared<MergeArgs>();
  add_dir_options(cmd, a->dirs);
  cmd->add_option("inputs", a->inputs, "bench CSVs")->required();
  cmd->add_option("-o,--output", a->out, "merged CSV")->required();
  cmd->add_flag("--allow-mixed", a->allow_mixed, "merge tables from different machines or builds (marked mixed)");
  cmd->add_option("--claims", a->claims,
                  "contract folder: judge its benchmark claims on the merged table (runs measured apart, judged "
                  "together) and write bench-claims.json beside the output");
  cmd->callback([a, &exit_code] {
    try {
      std::vector<std::pair<std::string, bench::BenchTable>> tables;
      for (const auto& f : a->inputs) tables.emplace_back(f, bench::read_bench_csv(f));
      const auto merged = bench::merge_tables(tables, a->allow_mixed);
      bench::write_bench_csv(a->out, merged);
      std::cerr << "wrote " << a->out << " (" << merged.rows.size() << " rows from " << tables.size() << " tables)\n";
      if (!a->claims.empty()) judge_merged_claims(*a, merged);
      exit_code = 0;
    } catch (const std::exception& e) {
      std::cerr << "popper bench merge: " << e.what() << "\n";
      exit_code = 2;
    }
  });
}

}  // namespace popper::cli
