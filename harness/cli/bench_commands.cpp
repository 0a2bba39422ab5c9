// `popper bench compare | check | gate | baseline save` (see baselines/README.md).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "popper/io.hpp"
#include "popper/bench/check.hpp"
#include "popper/bench/claims.hpp"
#include "popper/bench/compare.hpp"
#include "popper/bench/csv.hpp"
#include "popper/bench/family.hpp"
#include "popper/bench/gate.hpp"
#include "popper/bench/machine.hpp"
#include "popper/bench/peak.hpp"
#include "popper/bench/report.hpp"
#include "popper/error.hpp"
#include "popper/loader.hpp"

namespace popper::cli {

std::string default_build_dir();  // peak_command.cpp
void add_bench_threshold_command(CLI::App& bench, int& exit_code);  // threshold_command.cpp

namespace {

namespace fs = std::filesystem;

void progress(const std::string& s) { std::cerr << s << std::endl; }

std::vector<std::string> split_list(const std::vector<std::string>& in) {
  std::vector<std::string> out;
  for (const auto& item : in) {
    std::stringstream ss(item);
    std::string part;
    while (std::getline(ss, part, ','))
      if (!part.empty()) out.push_back(part);
  }
  return out;
}

struct CommonOptions {
  std::string source_dir = ".";
  std::string build_dir;
  std::string build() const { return build_dir.empty() ? default_build_dir() : build_dir; }
};

void add_common(CLI::App* cmd, CommonOptions& o) {
  cmd->add_option("--source-dir", o.source_dir, "repository root (holds bench/ and contracts/)");
  cmd->add_option("--build-dir", o.build_dir, "build tree holding bin/ (default: the one this popper lives in)");
}

std::string gate_baseline_path(const std::string& source_dir, const std::string& fp, const std::string& family) {
  return source_dir + "/baselines/" + fp + "/" + family + "-gate.csv";
}

// bench-gemm.csv -> gemm.csv, bench-gemm-gate.csv -> gemm-gate.csv
std::string baseline_name(const std::string& from) {
  std::string name = fs::path(from).filename().string();
  if (name.rfind("bench-", 0) == 0) name = name.substr(6);
  return name;
}

}  // namespace

void add_bench_commands(CLI::App& app, int& exit_code) {
  auto* bench = app.add_subcommand("bench", "Three-tier benchmarks, regression checks, baselines");
  bench->require_subcommand(1);
  add_bench_threshold_command(*bench, exit_code);

  // ---- compare ----
  {
    auto* cmd = bench->add_subcommand("compare", "Run ceiling, wrapped and hand tiers interleaved; write reports");
    struct Opt {
      CommonOptions common;
      std::string family = "gemm";
      std::vector<std::string> shapes{"gate"}, threads{"1,2"}, precisions{"f32,f64"}, tiers{"ceiling,wrapped,hand"};
      int reps = 5;
      double min_time = 0.2;
      std::string out = "reports";
      std::string contracts = "contracts";
      bool no_core_types = false, refresh_peak = false;
    };
    auto o = std::make_shared<Opt>();
    add_common(cmd, o->common);
    cmd->add_option("--family", o->family, "bench family (bench/<family>/family.yaml)");
    cmd->add_option("--shapes", o->shapes, "gate | full | all | shape names (default gate)");
    cmd->add_option("--reps", o->reps, "repetitions per tier and shape")->check(CLI::Range(1, 1000));
    cmd->add_option("--threads", o->threads, "thread counts, e.g. 1,2");
    cmd->add_option("--precision", o->precisions, "precisions, e.g. f32,f64");
    cmd->add_option("--tiers", o->tiers, "tiers to run (ceiling,wrapped,hand,reference)");
    cmd->add_option("--min-time", o->min_time, "minimum seconds per repetition (Google Benchmark)");
    cmd->add_option("--out", o->out, "report folder");
    cmd->add_option("--contracts", o->contracts, "contract folder whose benchmarks claims are evaluated");
    cmd->add_flag("--no-core-types", o->no_core_types, "run the ceiling only under the default OpenBLAS core");
    cmd->add_flag("--refresh-peak", o->refresh_peak, "re-measure the machine peak");
    cmd->callback([o, &exit_code] {
      try {
        const std::string build = o->common.build();
        const auto fam = bench::load_family(o->common.source_dir, o->family);
        const auto machine = bench::probe_machine();
        const auto peak = bench::cached_or_measured_peak(build + "/peak.json", machine, o->refresh_peak, progress);
        bench::CompareOptions co;
        co.source_dir = o->common.source_dir;
        co.build_dir = build;
        co.shapes = split_list(o->shapes);
        co.tiers = split_list(o->tiers);
        co.precisions = split_list(o->precisions);
        co.threads.clear();
        for (const auto& t : split_list(o->threads)) co.threads.push_back(std::stoi(t));
        co.reps = o->reps;
        co.min_time = o->min_time;
        co.blas_core_types = !o->no_core_types;
        co.progress = progress;
        auto table = bench::run_compare(co, fam, machine, &peak);
        fs::create_directories(o->out);
        const std::string stem = o->out + "/bench-" + fam.family;
        bench::write_bench_csv(stem + ".csv", table);
        popper::write_file_atomic(stem + ".md", bench::render_markdown(table, fam.family));
        const auto kind = [&](const char* p) {
          auto it = fam.peak.find(p);
          return it == fam.peak.end() ? std::string() : it->second;
        };
        popper::write_file_atomic(stem + ".svg", bench::render_svg(table, fam.family, &peak, kind("f32"), kind("f64")));
        std::cout << bench::render_markdown(table, fam.family);
        std::cerr << "wrote " << stem << ".csv, .md, .svg\n";
        // Contract claims.
        Diagnostics diags;
        std::vector<Contract> contracts;
        if (fs::exists(o->contracts)) {
          auto set = load_contract_set({o->contracts}, diags);
          contracts = std::move(set.contracts);
          if (diags.has_errors())
            std::cerr << "warning: contracts have errors (popper validate " << o->contracts
                      << "); claims evaluated on the contracts that loaded\n";
        }
        const auto claims = bench::evaluate_claims(contracts, fam.family, table, &peak, fam.peak);
        bench::write_claims_json(o->out + "/bench-claims.json", fam.family, claims);
        for (const auto& c : claims) std::cout << c.id << " (" << c.contract << "): " << c.verdict << " — " << c.detail << "\n";
        std::cerr << "wrote " << o->out << "/bench-claims.json (" << claims.size() << " claims)\n";
        exit_code = 0;
      } catch (const std::exception& e) {
        std::cerr << "popper bench compare: " << e.what() << "\n";
        exit_code = 2;
      }
    });
  }

  // ---- check ----
  {
    auto* cmd = bench->add_subcommand("check", "Classify current vs baseline rows; exit 1 on REGRESSION or MISSING");
    struct Opt {
      CommonOptions common;
      std::string baseline, current;
      bool rerun = false;
      bench::Thresholds th;
    };
    auto o = std::make_shared<Opt>();
    add_common(cmd, o->common);
    cmd->add_option("--baseline", o->baseline, "baseline CSV (baselines/<fingerprint>/<family>.csv)")->required();
    cmd->add_option("--current", o->current, "current CSV (reports/bench-<family>.csv)")->required();
    cmd->add_flag("--rerun", o->rerun, "re-measure a flagged row once before calling it a REGRESSION");
    cmd->add_option("--alpha", o->th.alpha, "significance level of the Mann-Whitney test");
    cmd->add_option("--regression-threshold", o->th.regression, "fraction slower that is a regression (0.10)");
    cmd->add_option("--warning-threshold", o->th.warning, "fraction slower that is a warning (0.05)");
    cmd->callback([o, &exit_code] {
      try {
        bench::BenchTable base;
        try {
          base = bench::read_baseline(o->baseline);
        } catch (const bench::NoBaseline& e) {
          std::cerr << "popper bench check: " << e.what() << "\n";
          exit_code = 2;
          return;
        }
        const auto cur = bench::read_bench_csv(o->current);
        bench::Rerun rerun;
        if (o->rerun) {
          const std::string build = o->common.build();
          const std::string src = o->common.source_dir;
          rerun = [build, src, cur](const bench::BenchRow& row) -> std::optional<bench::BenchRow> {
            const auto fam = bench::load_family(src, row.key.family);
            std::cerr << "re-measuring " << row.key.to_string() << "\n";
            if (row.unit == bench::kUnitInstructions) {
              bench::GateOptions g;
              g.build_dir = build;
              g.progress = progress;
              return bench::measure_gate_row(g, fam, row.key);
            }
            bench::CompareOptions co;
            co.source_dir = src;
            co.build_dir = build;
            co.shapes = {row.key.shape};
            co.tiers = {row.key.tier};
            co.precisions = {row.key.precision};
            co.threads = {row.key.threads};
            co.reps = static_cast<int>(row.samples.size());
            co.progress = progress;
            const auto machine = bench::probe_machine();
            auto t = bench::run_compare(co, fam, machine, nullptr);
            if (const auto* r = t.find(row.key)) return *r;
            return std::nullopt;
          };
        }
        const auto report = bench::check_tables(base, cur, o->th, rerun);
        std::cout << bench::format_check_report(report);
        exit_code = report.exit_code();
      } catch (const std::exception& e) {
        std::cerr << "popper bench check: " << e.what() << "\n";
        exit_code = 2;
      }
    });
  }

  // ---- gate ----
  {
    auto* cmd = bench->add_subcommand("gate", "CI regression gate: callgrind instruction counts on the gate shapes");
    struct Opt {
      CommonOptions common;
      std::string family = "gemm";
      std::string out, baseline;
      bool no_check = false;
      std::vector<std::string> only_shapes, only_tiers, only_precisions;
    };
    auto o = std::make_shared<Opt>();
    add_common(cmd, o->common);
    cmd->add_option("--family", o->family, "bench family");
    cmd->add_option("--out", o->out, "CSV to write (default reports/bench-<family>-gate.csv)");
    cmd->add_option("--baseline", o->baseline, "baseline (default baselines/<fingerprint>/<family>-gate.csv)");
    cmd->add_flag("--no-check", o->no_check, "only measure and write the CSV");
    cmd->add_option("--shapes", o->only_shapes, "restrict to these gate shapes (baseline rows filtered alike)");
    cmd->add_option("--tiers", o->only_tiers, "restrict to these tiers, e.g. hand");
    cmd->add_option("--precision", o->only_precisions, "restrict to these precisions, e.g. f32");
    cmd->callback([o, &exit_code] {
      try {
        const std::string build = o->common.build();
        auto fam = bench::load_family(o->common.source_dir, o->family);
        const auto only_shapes = split_list(o->only_shapes), only_tiers = split_list(o->only_tiers),
                   only_precisions = split_list(o->only_precisions);
        auto keep = [](const std::vector<std::string>& filter, const std::string& v) {
          return filter.empty() || std::find(filter.begin(), filter.end(), v) != filter.end();
        };
        auto restrict_to = [&](std::vector<std::string>& list, const std::vector<std::string>& filter, const char* what) {
          for (const auto& f : filter)
            if (std::find(list.begin(), list.end(), f) == list.end())
              throw Error(std::string("--") + what + " " + f + " is not in " + fam.path + " gate");
          std::erase_if(list, [&](const std::string& v) { return !keep(filter, v); });
        };
        restrict_to(fam.gate.shapes, only_shapes, "shapes");
        restrict_to(fam.gate.tiers, only_tiers, "tiers");
        restrict_to(fam.gate.precisions, only_precisions, "precision");
        const auto machine = bench::probe_machine();
        bench::GateOptions g;
        g.build_dir = build;
        g.progress = progress;
        auto table = bench::run_gate(g, fam);
        const auto peak = bench::load_peak_cache(build + "/peak.json");
        auto md = bench::run_metadata(machine, o->common.source_dir, build,
                                      peak && peak->fingerprint == bench::fingerprint(machine) ? &*peak : nullptr);
        for (auto& kv : table.metadata) md.push_back(kv);
        table.metadata = md;
        const std::string out = o->out.empty() ? "reports/bench-" + fam.family + "-gate.csv" : o->out;
        if (fs::path(out).has_parent_path()) fs::create_directories(fs::path(out).parent_path());
        bench::write_bench_csv(out, table);
        std::cerr << "wrote " << out << "\n";
        if (o->no_check) {
          exit_code = 0;
          return;
        }
        const std::string base_path = o->baseline.empty()
                                          ? gate_baseline_path(o->common.source_dir, bench::fingerprint(machine), fam.family)
                                          : o->baseline;
        if (!fs::exists(base_path)) {
          std::cerr << "popper bench gate: no baseline for this machine at " << base_path
                    << "\n  create it: popper bench gate --family " << fam.family
                    << " --no-check && popper bench baseline save --from " << out << "\n";
          exit_code = 2;
          return;
        }
        auto base = bench::read_bench_csv(base_path);
        std::erase_if(base.rows, [&](const bench::BenchRow& r) {
          return !keep(only_shapes, r.key.shape) || !keep(only_tiers, r.key.tier) ||
                 !keep(only_precisions, r.key.precision);
        });
        bench::Rerun rerun = [g, fam](const bench::BenchRow& row) { return bench::measure_gate_row(g, fam, row.key); };
        const auto report = bench::check_tables(base, table, {}, rerun);
        std::cout << "baseline: " << base_path << "\n" << bench::format_check_report(report);
        exit_code = report.exit_code();
      } catch (const std::exception& e) {
        std::cerr << "popper bench gate: " << e.what() << "\n";
        exit_code = 2;
      }
    });
  }

  // ---- baseline save ----
  {
    auto* baseline = bench->add_subcommand("baseline", "Manage committed baselines");
    baseline->require_subcommand(1);
    auto* cmd = baseline->add_subcommand("save", "Copy a bench CSV to baselines/<fingerprint>/ (keeps <name>.prev.csv)");
    struct Opt {
      std::string from = "reports/bench-gemm.csv";
      std::string dir = "baselines";
    };
    auto o = std::make_shared<Opt>();
    cmd->add_option("--from", o->from, "bench CSV to save (reports/bench-<family>[-gate].csv)");
    cmd->add_option("--dir", o->dir, "baselines folder");
    cmd->callback([o, &exit_code] {
      try {
        const auto table = bench::read_bench_csv(o->from);  // validates before anything is replaced
        const auto fp = table.meta("fingerprint");
        if (!fp || fp->empty()) throw Error(o->from + ": no '# fingerprint:' metadata; not produced by popper bench");
        const fs::path folder = fs::path(o->dir) / *fp;
        fs::create_directories(folder);
        const fs::path target = folder / baseline_name(o->from);
        if (fs::exists(target)) {
          fs::path prev = target;
          prev.replace_extension(".prev.csv");
          popper::write_file_atomic(prev.string(), bench::format_bench_csv(bench::read_bench_csv(target.string())));
          std::cerr << "previous baseline kept as " << prev.string() << "\n";
        }
        bench::write_bench_csv(target.string(), table);
        std::cout << "saved " << target.string() << " (" << table.rows.size() << " rows)\n";
        exit_code = 0;
      } catch (const std::exception& e) {
        std::cerr << "popper bench baseline save: " << e.what() << "\n";
        exit_code = 2;
      }
    });
  }
}

}  // namespace popper::cli
