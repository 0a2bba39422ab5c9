// Callgrind instruction-count gate (gate.hpp).
#include "bench/gate.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/ingest.hpp"
#include "bench/machine.hpp"
#include "common/process.hpp"
#include "common/text.hpp"
#include "popper/error.hpp"
#include "popper/io.hpp"
#include "popper/runtime_paths.hpp"

namespace popper::bench {

namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string temp_file(const char* stem) {
  std::string t = popper::make_temp_file(stem);
  if (t.empty()) throw Error("cannot create a temporary file");
  return t;
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string GateKey::id() const {
  const std::string all = cpu_isa + "|" + caches + "|" + openblas_core + "|" + openblas_config + "|" + compiler + "|" +
                          build_type + "|" + flags;
  char hash[16];
  std::snprintf(hash, sizeof hash, "%08x", fnv1a(all));
  // Slugs keep '.', for the compiler's version: the key names committed folders.
  const auto key_slug = [](const std::string& s) { return slug(s, "."); };
  // compiler is "<path> (<first line of --version>)": keep its family and version.
  const std::string lower_comp = key_slug(compiler);
  std::string version;
  std::istringstream words(compiler.substr(compiler.find('(') == std::string::npos ? 0 : compiler.find('(')));
  for (std::string w; words >> w;)
    if (!w.empty() && std::isdigit(static_cast<unsigned char>(w[0])) && w.find('.') != std::string::npos)
      version = w.substr(0, w.find_first_not_of("0123456789."));
  const std::string comp_id = (lower_comp.find("clang") != std::string::npos ? "clang-" : "gcc-") + key_slug(version);
  return "gate-" + key_slug(cpu_isa) + "-openblas-" + key_slug(openblas_core) + "-" + comp_id + "-" +
         key_slug(build_type) + "-" + hash;
}

std::vector<std::pair<std::string, std::string>> GateKey::metadata() const {
  return {{"gate_key", id()},
          {"gate_cpu_isa", cpu_isa},
          {"gate_caches", caches},
          {"gate_openblas_core", openblas_core},
          {"gate_openblas_config", openblas_config},
          {"gate_compiler", compiler},
          {"gate_build_type", build_type},
          {"gate_flags", flags}};
}

std::vector<std::string> machine_probe_command(const std::string& build_dir, const std::string& suite) {
  const std::string probe = build_dir + "/bin/popper_dispatch_probe";
  if (fs::exists(probe)) return {probe};
  return {build_dir + "/bin/" + suite, "--popper_machine_probe"};
}

std::vector<std::pair<std::string, std::string>> gate_environment(const std::string& valgrind,
                                                                  const std::vector<std::string>& probe) {
  std::vector<std::pair<std::string, std::string>> env{{"OPENBLAS_NUM_THREADS", "1"}, {"OMP_NUM_THREADS", "1"}};
  // Ask valgrind's CPU (not ours) whether it has AVX2: it never has AVX-512.
  std::vector<std::string> argv{valgrind, "--tool=none", "-q"};
  argv.insert(argv.end(), probe.begin(), probe.end());
  const auto r = run_process(argv, {{"OPENBLAS_CORETYPE", "Haswell"}}, {}, 120);
  if (r.ok() && r.out.find("\"cpu_isa\":\"scalar\"") == std::string::npos)
    env.emplace_back("OPENBLAS_CORETYPE", "Haswell");
  return env;
}

GateKey probe_gate_key(const GateOptions& opt) {
  const std::string probe = opt.probe.empty() ? std::string("(no probe)") : opt.probe.front();
  std::vector<std::string> unset;
  bool pinned = false;
  for (const auto& [k, v] : opt.env) pinned = pinned || k == "OPENBLAS_CORETYPE";
  if (!pinned) unset.emplace_back("OPENBLAS_CORETYPE");
  std::vector<std::string> argv{opt.valgrind, "--tool=none", "-q"};
  argv.insert(argv.end(), opt.probe.begin(), opt.probe.end());
  const auto r = run_process(argv, opt.env, unset, 120);
  if (!r.ok())
    throw Error("cannot run " + probe + " under " + opt.valgrind + " (" + r.describe() + "): " + r.err +
                "; build it (popper_dispatch_probe in popper's tree, the family's suite in a project's) and "
                "install valgrind");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(r.out.substr(0, r.out.find('\n')));
  } catch (const nlohmann::json::exception& e) {
    throw Error(probe + " printed no JSON: " + r.out.substr(0, 200));
  }
  GateKey k;
  k.cpu_isa = j.value("cpu_isa", "unknown");
  k.caches = j.value("caches", "");
  k.openblas_core = j.value("openblas_core", "unknown");
  k.openblas_config = j.value("openblas_config", "");
  const std::string cxx = cmake_cache_value(opt.build_dir, "CMAKE_CXX_COMPILER");
  k.compiler = cxx + " (" + capture_command("'" + cxx + "' --version | head -n 1") + ")";
  k.build_type = cmake_cache_value(opt.build_dir, "CMAKE_BUILD_TYPE");
  k.flags = cmake_cache_value(opt.build_dir, "CMAKE_CXX_FLAGS") + " | " +
            cmake_cache_value(opt.build_dir, "CMAKE_CXX_FLAGS_" + upper(k.build_type)) +
            " | sanitize=" + cmake_cache_value(opt.build_dir, "POPPER_SANITIZE");
  return k;
}

double callgrind_total_ir(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  double total = -1;
  while (std::getline(in, line)) {
    for (const char* key : {"totals:", "summary:"}) {
      const std::string k = key;
      if (line.rfind(k, 0) == 0) {
        std::istringstream v(line.substr(k.size()));
        double ir = 0;
        if (v >> ir) total = std::max(total, ir);
      }
    }
  }
  return total;
}

FunctionCounts callgrind_function_ir(const std::string& text) {
  FunctionCounts out;
  std::map<std::string, std::string> names;  // "(12)" -> name (fn= and cfn= share the table)
  auto resolve = [&](const std::string& spec) {
    if (spec.empty() || spec[0] != '(') return spec;
    const auto close = spec.find(')');
    const std::string id = spec.substr(0, close + 1);
    if (close + 1 < spec.size()) names[id] = spec.substr(close + 2);
    return names.count(id) ? names[id] : id;
  };
  std::istringstream in(text);
  std::string line, fn;
  bool skip_next_cost = false;  // the cost line after calls= is the call's inclusive cost
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.rfind("fn=", 0) == 0) {
      fn = resolve(line.substr(3));
    } else if (line.rfind("cfn=", 0) == 0) {
      resolve(line.substr(4));
    } else if (line.rfind("calls=", 0) == 0) {
      skip_next_cost = true;
    } else if (std::isdigit(static_cast<unsigned char>(line[0])) || line[0] == '+' || line[0] == '-' ||
               line[0] == '*') {
      if (skip_next_cost) {
        skip_next_cost = false;
        continue;
      }
      std::istringstream cost(line);
      std::string pos;
      double ir = 0;
      if (cost >> pos >> ir && !fn.empty()) out[fn] += ir;
    }
  }
  return out;
}

std::optional<BenchRow> measure_gate_row(const GateOptions& opt, const FamilyDescriptor& fam, const BenchKey& key,
                                         FunctionCounts* functions) {
  const std::string name = format_bench_name({fam.family, key.tier, key.shape, key.precision, key.threads});
  const std::string out_path = temp_file("popper-callgrind"), json_path = temp_file("popper-gate-json");
  auto env = opt.env;
  env.emplace_back("POPPER_BENCH_ITERATIONS", std::to_string(fam.gate.iterations));
  std::vector<std::string> unset;
  bool pinned = false;
  for (const auto& [k, v] : env) pinned = pinned || k == "OPENBLAS_CORETYPE";
  if (!pinned) unset.emplace_back("OPENBLAS_CORETYPE");
  const auto r = run_process(
      {opt.valgrind, "--tool=callgrind", "--callgrind-out-file=" + out_path,
       "--toggle-collect=*popper_bench_call_" + tier_text(key.tier) + "*", opt.build_dir + "/bin/" + fam.executable,
       "--benchmark_filter=^" + regex_escape(name) + "(/iterations:[0-9]+)?(/real_time)?$", "--benchmark_repetitions=1",
       "--benchmark_out=" + json_path, "--benchmark_out_format=json"},
      env, unset);
  const std::string cg = slurp(out_path), js = slurp(json_path);
  ::unlink(out_path.c_str());
  ::unlink(json_path.c_str());
  if (!r.ok()) {
    if (opt.progress) opt.progress("warning: callgrind run of " + name + " failed: " + r.describe());
    return std::nullopt;
  }
  std::vector<BenchRow> rows;
  try {
    rows = rows_from_gbench_json(js, name, fam.work_unit);
  } catch (const BenchFileError& e) {
    if (opt.progress) opt.progress(std::string("warning: ") + e.what());
    return std::nullopt;
  }
  if (rows.empty()) return std::nullopt;
  BenchRow row = rows.front();
  const double ir = callgrind_total_ir(cg);
  if (row.verdict.failed() || ir <= 0) {
    row.samples.clear();
    if (ir <= 0 && opt.progress) opt.progress("warning: no instructions collected for " + name);
    return row;
  }
  row.unit = kUnitInstructions;
  row.key.cache_mode = "callgrind";
  row.samples = {ir / fam.gate.iterations};
  if (const std::string why = implausibly_few_instructions(row, row.samples[0]); !why.empty()) {
    row.verdict = Verdict::invalid(why);
    row.samples.clear();  // reported like a failed row: missing from the gate, never UNCHANGED
  }
  if (functions) {
    functions->clear();
    for (const auto& [f, v] : callgrind_function_ir(cg))
      if (v >= 0.001 * ir) (*functions)[f] = v / fam.gate.iterations;  // >= 0.1% of the row
  }
  return row;
}

std::string implausibly_few_instructions(const BenchRow& row, double instructions_per_call) {
  if (row.work_unit != "flop" || row.work_per_iter <= 0) return "";
  const std::string& p = row.key.precision;
  const double widest = p == "f32" ? 32 : p == "f64" ? 16 : p == "bf16" || p == "f16" ? 64 : 128;
  const double least = row.work_per_iter / widest;
  if (instructions_per_call >= least) return "";
  return fmt::format(
      "{:.4g} instructions a call for {:.4g} FLOP: fewer than the {:.4g} its widest vector "
      "instruction ({:.0f} FLOP each) needs, so the call skipped work",
      instructions_per_call, row.work_per_iter, least, widest);
}

GateRun run_gate(const GateOptions& opt, const FamilyDescriptor& fam) {
  if (fam.gate.shapes.empty()) throw Error(fam.path + ": no gate.shapes: the family has no CI gate");
  std::vector<BenchKey> keys;
  for (const auto& shape : fam.gate.shapes)
    for (const auto& prec : fam.gate.precisions)
      for (const auto& tier : fam.gate.tiers)
        keys.push_back(BenchKey{fam.family, tier, tier_text(tier), shape, prec, 1, "callgrind"});
  // Rows are measured by up to opt.jobs workers and stored in plan order.
  std::vector<std::optional<BenchRow>> rows(keys.size());
  std::vector<FunctionCounts> counts(keys.size());
  std::atomic<std::size_t> next{0};
  std::mutex progress_mutex;
  std::size_t started = 0;
  std::exception_ptr failure;  // the first error a worker met, rethrown after the join
  GateOptions locked = opt;    // a worker's warnings go through the lock too
  locked.progress = [&](const std::string& m) {
    if (!opt.progress) return;
    std::lock_guard<std::mutex> lock(progress_mutex);
    opt.progress(m);
  };
  auto worker = [&] {
    for (std::size_t i; (i = next++) < keys.size();) try {
        if (opt.progress) {
          std::lock_guard<std::mutex> lock(progress_mutex);
          opt.progress("[" + std::to_string(++started) + "/" + std::to_string(keys.size()) + "] callgrind " +
                       format_bench_name({fam.family, keys[i].tier, keys[i].shape, keys[i].precision, 1}));
        }
        rows[i] = measure_gate_row(locked, fam, keys[i], &counts[i]);
      } catch (...) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        if (!failure) failure = std::current_exception();
        next = keys.size();  // no further rows: the run fails as a whole
      }
  };
  const std::size_t workers = std::min(static_cast<std::size_t>(std::max(opt.jobs, 1)), keys.size());
  std::vector<std::thread> pool;
  for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);

  GateRun run;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (!rows[i]) {
      BenchRow empty;
      empty.key = keys[i];
      empty.unit = kUnitInstructions;
      empty.verdict = Verdict::not_run("callgrind failed");
      run.table.rows.push_back(empty);
    } else {
      run.functions[rows[i]->key.to_string()] = counts[i];
      run.table.rows.push_back(*rows[i]);
    }
  }
  run.table.set_meta("family", fam.family);
  run.table.set_meta("kind", "callgrind instruction counts per iteration (deterministic CI gate)");
  run.table.set_meta("gate_iterations", std::to_string(fam.gate.iterations));
  run.table.set_environment(opt.env, "gate_environment");
  if (const char* inj = std::getenv("POPPER_BENCH_INJECT_SLOWDOWN"); inj && *inj)
    run.table.set_meta("injected_slowdown", inj);
  return run;
}

std::string functions_path(const std::string& csv_path) { return csv_path + ".functions.json"; }

void write_functions(const std::string& path, const std::map<std::string, FunctionCounts>& f) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [row, counts] : f) j[row] = counts;
  write_file_atomic(path, j.dump(1) + "\n");
}

std::map<std::string, FunctionCounts> read_functions(const std::string& path) {
  std::map<std::string, FunctionCounts> out;
  if (!fs::exists(path)) return out;
  try {
    const auto j = nlohmann::json::parse(read_file(path));
    for (const auto& [row, counts] : j.items())
      for (const auto& [fn, v] : counts.items()) out[row][fn] = v.get<double>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not a gate functions file: " + e.what());
  }
  return out;
}

std::vector<std::string> top_function_changes(const FunctionCounts& base, const FunctionCounts& current,
                                              std::size_t limit) {
  std::vector<std::pair<double, std::string>> changes;
  std::map<std::string, bool> all;
  for (const auto& [f, v] : base) all[f] = true;
  for (const auto& [f, v] : current) all[f] = true;
  for (const auto& [f, unused] : all) {
    const double b = base.count(f) ? base.at(f) : 0, c = current.count(f) ? current.at(f) : 0;
    if (b == c) continue;
    char buf[96];
    if (b > 0) std::snprintf(buf, sizeof buf, ": %+.0f (%+.1f%%)", c - b, 100.0 * (c - b) / b);
    else std::snprintf(buf, sizeof buf, ": %+.0f (new)", c - b);
    changes.emplace_back(std::fabs(c - b), f + buf);
  }
  std::sort(changes.begin(), changes.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < changes.size() && i < limit; ++i) out.push_back(changes[i].second);
  return out;
}

std::string default_reference(const std::string& source_dir) {
  const std::string git = "git -C '" + source_dir + "' ";
  std::string ref = capture_command(git + "log -1 --format=%H -- baselines");
  const std::string head = capture_command(git + "rev-parse HEAD");
  if (ref.empty() || ref == head) ref = capture_command(git + "rev-parse --verify -q HEAD~1");
  if (ref.empty()) throw Error("--against auto: no commit changed baselines/ and HEAD has no parent; name a commit");
  return ref;
}

std::string build_reference(const RefBuildOptions& opt, std::string* resolved_sha) {
  auto say = [&](const std::string& s) {
    if (opt.progress) opt.progress(s);
  };
  const std::string sha =
      capture_command("git -C '" + opt.source_dir + "' rev-parse --verify -q '" + opt.ref + "^{commit}'");
  if (sha.empty()) throw Error("--against " + opt.ref + ": not a commit of " + opt.source_dir);
  if (resolved_sha) *resolved_sha = sha;
  const fs::path root = fs::absolute(fs::path(opt.build_dir) / (opt.same_options ? "check-ref" : "gate-ref") / sha);
  const fs::path src = root / "src", build = root / "build";
  if (!fs::exists(src / "CMakeLists.txt")) {
    say("gate: extracting " + sha.substr(0, 12) + " into " + src.string());
    fs::create_directories(src);
    const auto r = run_process(
        {"sh", "-c", "git -C \"$1\" archive \"$2\" | tar -x -C \"$3\"", "sh", opt.source_dir, sha, src.string()});
    if (!r.ok()) {
      fs::remove_all(src);
      throw Error("git archive " + sha + " failed (" + r.describe() + "): " + r.err);
    }
  }
  if (!fs::exists(build / "CMakeCache.txt")) {
    say(std::string("gate: configuring the base commit (same compiler, build type and flags; ") +
        (opt.same_options ? "every POPPER_* option as this build)" : "CUDA off)"));
    std::vector<std::string> argv = {
        "cmake", "-S", src.string(), "-B", build.string(), "-DPOPPER_CUDA=OFF", "-DPOPPER_WERROR=OFF"};
    if (opt.same_options) {  // later -D options win
      std::ifstream cache(opt.build_dir + "/CMakeCache.txt");
      for (std::string line; std::getline(cache, line);)
        if (line.rfind("POPPER_", 0) == 0 && line.rfind("POPPER_WERROR:", 0) != 0 &&
            (line.find(":BOOL=") != std::string::npos || line.find(":STRING=") != std::string::npos))
          argv.push_back("-D" + line);
    }
    // A project's tree finds the same installed popper (CMAKE_PREFIX_PATH, popper_DIR).
    for (const char* key : {"CMAKE_BUILD_TYPE", "CMAKE_C_COMPILER", "CMAKE_CXX_COMPILER", "CMAKE_CXX_FLAGS",
                            "CMAKE_C_FLAGS", "CMAKE_PREFIX_PATH", "popper_DIR"}) {
      const std::string v = cmake_cache_value(opt.build_dir, key);
      if (!v.empty()) argv.push_back(std::string("-D") + key + "=" + v);
    }
    const auto r = run_process(argv);
    if (!r.ok()) throw Error("configuring the base commit failed (" + r.describe() + "): " + r.err.substr(0, 2000));
  }
  // Only the families the base commit has: a family added since has no base.
  // A project's family exists where configuring wrote its descriptor.
  std::vector<std::string> argv = {"cmake", "--build", build.string(), "-j" + std::to_string(opt.jobs), "--target"};
  for (const auto& f : opt.families)
    if (fs::exists(src / "bench" / f) || fs::exists(build / "popper-bench" / f / "family.yaml"))
      argv.push_back("bench_" + f);
  if (argv.size() == 5) return build.string();
  say("gate: building the base commit's bench binaries (" + std::to_string(argv.size() - 5) + " families); cached in " +
      build.string());
  const auto r = run_process(argv);
  if (!r.ok())
    throw Error("building the base commit failed (" + r.describe() +
                "): " + r.out.substr(r.out.size() > 3000 ? r.out.size() - 3000 : 0) + r.err.substr(0, 2000));
  return build.string();
}

}  // namespace popper::bench
