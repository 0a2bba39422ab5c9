#include "bench/mutants.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "bench/ingest.hpp"
#include "bench/placement.hpp"
#include "common/process.hpp"
#include "popper/error.hpp"
#include "popper/runtime_paths.hpp"

namespace popper::bench {
namespace {

// The hand rows of a cache mode, and of those the ones a mutant runs on.
bool hand_row(const BenchRow& r, CacheMode rows) {
  return r.key.tier == Tier::Hand && r.key.cache_mode == to_string(rows);
}
bool applies(const BenchRow& r, const BenchMutantSpec& m) {
  return hand_row(r, m.rows) && r.key.threads >= m.min_threads;
}

// Every run times a fixed 64 calls a row: a loop far longer than any one
// call, behind which a scheduler's pause cannot hide a mutant.
constexpr const char* kIterations = "64";

// The suite's rows matching `filter`, as the harness reads them, under `mutant` ("" for none).
std::vector<BenchRow> suite_rows(const FamilyDescriptor& fam, const std::string& bin_dir, const std::string& filter,
                                 std::string_view mutant) {
  const std::string json_path = popper::make_temp_file("popper-bench-mutants");
  if (json_path.empty()) throw Error("cannot create a temporary file");
  const auto r =
      run_process({bin_dir + "/" + fam.executable, "--benchmark_filter=" + filter, "--benchmark_out=" + json_path,
                   "--benchmark_out_format=json"},
                  {{"POPPER_BENCH_MUTANT", std::string(mutant)}, {"POPPER_BENCH_ITERATIONS", kIterations}}, {}, 300);
  std::ifstream in(json_path);
  std::ostringstream ss;
  ss << in.rdbuf();
  ::unlink(json_path.c_str());
  const std::string run = mutant.empty() ? "the clean run" : "the run under " + std::string(mutant);
  if (!r.ok())
    throw Error(
        fmt::format("{} {} of '{}' failed: {}: {}", fam.executable, run, filter, r.describe(), r.err.substr(0, 400)));
  return rows_from_gbench_json(ss.str(), fam.executable, fam.work_unit);
}

}  // namespace

BenchMutantResult judge_bench_mutant(const std::string& family, const BenchMutantSpec& mutant,
                                     const std::vector<BenchRow>& clean, const std::vector<BenchRow>& mutated) {
  BenchMutantResult res;
  res.family = family;
  res.mutant = std::string(mutant.name);
  res.caught_by = std::string(mutant.caught_by);
  std::vector<std::string> escaped;
  for (const auto& c : clean) {
    if (!applies(c, mutant)) continue;
    ++res.rows;
    const auto it = std::find_if(mutated.begin(), mutated.end(), [&](const BenchRow& m) { return m.key == c.key; });
    if (it == mutated.end()) {
      escaped.push_back(c.key.shape + ": no row in the mutant's run");
      continue;
    }
    if (it->verdict.label.starts_with(mutant.caught_by)) ++res.caught;
    else
      escaped.push_back(fmt::format("{}/{}/threads:{}: {}", c.key.shape, c.key.precision, c.key.threads,
                                    it->samples.empty() ? it->verdict.label : "timed, " + it->verdict.label));
  }
  res.outcome = res.rows > 0 && res.caught == res.rows ? "killed" : "survived";
  if (res.rows == 0) escaped.push_back("no hand row to run it on");
  res.detail = fmt::format("{}", fmt::join(escaped, "; "));
  return res;
}

std::vector<BenchMutantResult> run_bench_mutants(const FamilyDescriptor& fam, const std::string& bin_dir,
                                                 const std::function<void(const std::string&)>& say) {
  if (fam.bench_mutants.rows.empty())
    throw Error(fam.path + ": declares no bench_mutants rows, so no benchmark of family " + fam.family +
                " shows it can fail");
  std::vector<BenchMutantResult> out;
  const std::size_t cpus = allowed_cpus().size();
  for (const CacheMode mode : {CacheMode::Warm, CacheMode::Cold}) {
    const std::string& filter = mode == CacheMode::Warm ? fam.bench_mutants.rows : fam.bench_mutants.cold_rows;
    if (filter.empty()) continue;
    const auto clean = suite_rows(fam, bin_dir, filter, "");
    std::size_t hand = 0;
    for (const auto& r : clean) {
      if (!hand_row(r, mode)) continue;
      ++hand;
      if (r.verdict.failed() || r.samples.empty())
        throw Error(fmt::format("{}: the clean run of '{}' did not time {}/{}: {}", fam.family, filter, r.key.shape,
                                r.key.precision, r.verdict.label));
    }
    if (hand == 0)
      throw Error(
          fmt::format("{}: bench_mutants filter '{}' selects no {} hand row", fam.family, filter, to_string(mode)));
    for (const auto& m : kBenchMutants) {
      if (m.rows != mode) continue;
      // On fewer CPUs the pool has no worker to leave spinning: nothing to catch, and not a survivor.
      if (cpus < static_cast<std::size_t>(m.min_threads)) {
        say(fmt::format("bench mutant {}/{}: not run: it needs {} CPUs, this process may run on {}", fam.family, m.name,
                        m.min_threads, cpus));
        continue;
      }
      auto res = judge_bench_mutant(fam.family, m, clean, suite_rows(fam, bin_dir, filter, m.name));
      say(fmt::format("bench mutant {}/{}: {} on {} of {} hand row(s) ({}){}", fam.family, m.name,
                      res.killed() ? "caught" : "SURVIVED", res.caught, res.rows, m.caught_by,
                      res.detail.empty() ? "" : ": " + res.detail));
      out.push_back(std::move(res));
    }
  }
  return out;
}

}  // namespace popper::bench
