// The mutant runner (mutants.hpp).
#include "popper/mutant_runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/process.hpp"
#include "popper/binding.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"
#include "popper/scaffold.hpp"
#include "popper/runtime_paths.hpp"

namespace popper {

namespace {
// Whether the test recorded evidence of `path` ("cpu:avx2=forced,openblas:haswell=auto").
bool path_taken(const nlohmann::json& tc, const std::string& path) {
  if (POPPER_MUTANT("mutants-path-never-taken")) return false;
  for (const auto& b : parse_backends(tc.value("popper_backends", std::string())))
    if (backend_matches(path, b.tag)) return true;
  return false;
}
}  // namespace

MutantResult judge_mutant_run(const std::string& test_id, const std::string& json_text, bool process_ok,
                              const std::string& process_description, const std::string& path) {
  MutantResult r;
  r.test_id = test_id;
  nlohmann::json doc;
  try {
    if (!json_text.empty()) doc = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception&) {
    doc = nullptr;
  }
  const nlohmann::json* tc = nullptr;
  if (doc.is_object() && doc.contains("testsuites") && doc["testsuites"].is_array())
    for (const auto& suite : doc["testsuites"])
      if (suite.contains("testsuite") && suite["testsuite"].is_array())
        for (const auto& t : suite["testsuite"])
          if (t.value("popper_id", "") == test_id) tc = &t;
  if (!tc) {
    r.outcome = process_ok ? "not_run" : "killed";
    r.detail = process_ok ? "the test binary ran no test named " + test_id
                          : "the test binary " + process_description + " before reporting (counts as detected)";
    return r;
  }
  const bool failed =
      (tc->contains("failures") && !(*tc)["failures"].empty()) || tc->value("popper_outcome", "") == "failed";
  const std::string outcome = tc->value("popper_outcome", "not_run");
  const long hits = std::strtol(tc->value("popper_mutant_hits", std::string("0")).c_str(), nullptr, 10);
  if (failed) {
    r.outcome = "killed";
    std::string why = tc->value("popper_reason", "");
    if (why.empty() && tc->contains("failures") && !(*tc)["failures"].empty())
      why = (*tc)["failures"][0].value("failure", "");
    r.detail = why.substr(0, why.find('\n')).substr(0, 240);
  } else if (outcome == "skipped" || outcome == "unbound") {
    r.outcome = "not_run";
    r.detail = tc->value("popper_reason", outcome);
  } else if (hits == 0 && !path.empty() && !path_taken(*tc, path)) {
    // A mutant of one CPU or device path this run never took (cpu:avx512 on an
    // AVX2 machine): nothing was tested, which is not a survivor either.
    r.outcome = "not_run";
    r.detail = path +
               " not taken in this run (it ran: " + tc->value("popper_backends", std::string("nothing recorded")) +
               "); run it where that path runs";
  } else {
    r.outcome = hits > 0 ? "survived" : POPPER_MUTANT("mutants-unreached-counts-killed") ? "killed" : "not_reached";
    r.detail = hits > 0 ? "passed with the mutant active (" + std::to_string(hits) + " hits)"
                        : "passed; the mutation point was never reached";
  }
  return r;
}

std::vector<MutantResult> run_mutants(const ContractSet& set, const MutantRunOptions& opt) {
  struct Job {
    std::string contract, suite, test_id, mutant_id, path;
  };
  std::vector<Job> jobs;
  for (const auto& c : set.contracts) {
    const std::string suite = test_identifier(c.stem);
    auto wanted = [&](const Mutant& m) {
      return opt.paths.empty() || std::find(opt.paths.begin(), opt.paths.end(), m.path) != opt.paths.end();
    };
    for (const auto& t : c.falsification_tests)
      for (const auto& m : t.mutants)
        if (wanted(m)) jobs.push_back({c.stem, suite, t.id, m.id, m.path});
    for (const auto& h : c.kani_harnesses)
      for (const auto& m : h.mutants)
        if (wanted(m)) jobs.push_back({c.stem, suite, h.id, m.id, m.path});
  }
  if (::access(opt.test_binary.c_str(), X_OK) != 0)
    throw Error("popper audit --mutants: cannot run the test binary " + opt.test_binary);
  std::vector<MutantResult> results(jobs.size());
  std::atomic<std::size_t> next{0}, done{0};
  std::mutex say_mu;
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      const Job& j = jobs[i];
      const std::string json_path = popper::make_temp_file("popper-mutant");
      if (json_path.empty()) {
        results[i] = {j.contract, j.test_id, j.mutant_id, j.path, "not_run", "cannot create a temporary file", {}};
        ++done;
        continue;
      }
      std::vector<std::string> argv = opt.exec_prefix;
      argv.push_back(opt.test_binary);
      argv.push_back("--gtest_filter=" + j.suite + "." + test_identifier(j.test_id));
      argv.push_back(std::string("--gtest_output=json:") + json_path);
      auto env = opt.env;
      env.emplace_back("POPPER_MUTANT", j.mutant_id);
      const auto pr = run_process(argv, env, {}, opt.timeout_seconds);
      std::ifstream in(json_path);
      std::ostringstream ss;
      ss << in.rdbuf();
      ::unlink(json_path.c_str());
      // A process that exits 1 after writing its JSON is just a failing test.
      MutantResult r =
          judge_mutant_run(j.test_id, ss.str(), pr.ok() || (pr.exit_code == 1 && !pr.timed_out), pr.describe(), j.path);
      if (pr.timed_out) {
        r.outcome = "killed";
        r.detail =
            "timed out after " + std::to_string(static_cast<int>(opt.timeout_seconds)) + " s (counts as detected)";
      }
      r.contract = j.contract;
      r.mutant_id = j.mutant_id;
      r.path = j.path;
      r.by_site[opt.site] = r.outcome;
      results[i] = r;
      const std::size_t n = ++done;
      if (opt.progress) {
        std::lock_guard lock(say_mu);
        opt.progress("[" + std::to_string(n) + "/" + std::to_string(jobs.size()) + "] " + j.test_id + " under " +
                     j.mutant_id + ": " + r.outcome + (r.detail.empty() ? "" : " — " + r.detail));
      }
    }
  };
  std::vector<std::thread> pool;
  for (int w = 0; w < std::max(1, opt.jobs); ++w) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  return results;
}

}  // namespace popper
