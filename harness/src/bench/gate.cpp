// Callgrind instruction-count gate (gate.hpp).
#include "popper/bench/gate.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "popper/bench/ingest.hpp"
#include "popper/bench/process.hpp"
#include "popper/error.hpp"

namespace popper::bench {

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

std::optional<BenchRow> measure_gate_row(const GateOptions& opt, const FamilyDescriptor& fam, const BenchKey& key) {
  const std::string name = format_bench_name({fam.family, key.tier, key.shape, key.precision, key.threads});
  char out_path[] = "/tmp/popper-callgrind-XXXXXX";
  char json_path[] = "/tmp/popper-gate-json-XXXXXX";
  const int fd1 = ::mkstemp(out_path), fd2 = ::mkstemp(json_path);
  if (fd1 < 0 || fd2 < 0) throw Error("cannot create a temporary file");
  ::close(fd1);
  ::close(fd2);
  std::string filter;
  for (char ch : name) {
    if (std::string(".^$|()[]{}*+?\\").find(ch) != std::string::npos) filter.push_back('\\');
    filter.push_back(ch);
  }
  const auto r = run_process(
      {opt.valgrind, "--tool=callgrind", "--callgrind-out-file=" + std::string(out_path),
       "--toggle-collect=*popper_bench_call_" + key.tier + "*", opt.build_dir + "/bin/" + fam.executable,
       "--benchmark_filter=^" + filter + "(/iterations:[0-9]+)?(/real_time)?$", "--benchmark_repetitions=1",
       std::string("--benchmark_out=") + json_path, "--benchmark_out_format=json"},
      {{"POPPER_BENCH_ITERATIONS", std::to_string(fam.gate.iterations)}, {"OPENBLAS_NUM_THREADS", "1"}});
  auto slurp = [](const char* p) {
    std::ifstream in(p);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  const std::string cg = slurp(out_path), js = slurp(json_path);
  ::unlink(out_path);
  ::unlink(json_path);
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
  if (row.verdict.rfind("incorrect", 0) == 0 || ir <= 0) {
    row.samples.clear();
    if (ir <= 0 && opt.progress) opt.progress("warning: no instructions collected for " + name);
    return row;
  }
  row.unit = kUnitInstructions;
  row.key.cache_mode = "callgrind";
  row.samples = {ir / fam.gate.iterations};
  return row;
}

BenchTable run_gate(const GateOptions& opt, const FamilyDescriptor& fam) {
  if (fam.gate.shapes.empty()) throw Error(fam.path + ": no gate.shapes: the family has no CI gate");
  BenchTable t;
  std::size_t total = fam.gate.shapes.size() * fam.gate.tiers.size() * fam.gate.precisions.size(), done = 0;
  for (const auto& shape : fam.gate.shapes)
    for (const auto& prec : fam.gate.precisions)
      for (const auto& tier : fam.gate.tiers) {
        ++done;
        if (opt.progress)
          opt.progress("[" + std::to_string(done) + "/" + std::to_string(total) + "] callgrind " + fam.family + "/" +
                       tier + "/" + shape + "/" + prec + "/threads:1");
        BenchKey key{fam.family, tier, tier, shape, prec, 1, "callgrind"};
        auto row = measure_gate_row(opt, fam, key);
        if (!row) {
          BenchRow empty;
          empty.key = key;
          empty.unit = kUnitInstructions;
          empty.verdict = "not_run: callgrind failed";
          t.rows.push_back(empty);
        } else {
          t.rows.push_back(*row);
        }
      }
  t.set_meta("family", fam.family);
  t.set_meta("kind", "callgrind instruction counts per iteration (deterministic CI gate)");
  t.set_meta("gate_iterations", std::to_string(fam.gate.iterations));
  return t;
}

}  // namespace popper::bench
