// popper_parity (run as `popper parity`): the multi-backend parity gate on
// the canary model or a user's qwen2 Q4_K GGUF, and the drift-vs-depth
// measurement of the seed's accumulation hypothesis
// (contracts/decode/multi-backend-parity-v1.yaml).
//
// Exit: 0 the gate ran and no available candidate was excluded; 1 a
// candidate was excluded (its logits missed the threshold); 2 usage or I/O error.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "impl/common/parallel.hpp"
#include "impl/decode/drift.hpp"
#include "impl/decode/forward.hpp"
#include "impl/decode/lib_llama.hpp"
#include "impl/decode/parity.hpp"
#include "popper/error.hpp"
#include "popper/io.hpp"
#include "popper/version.hpp"

namespace {

using namespace popper::decode;

nlohmann::json to_json(const GateResult& g) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : g.runs) {
    nlohmann::json j{{"backend", r.name}, {"available", r.available}, {"fault", r.fault}, {"reason", r.reason}};
    if (r.available) {
      const auto& a = r.agreement;
      j.update({{"ran_on", r.evidence},
                {"passed", r.passed},
                {"cosine", a.cosine},
                {"max_abs", a.max_abs},
                {"max_rel", a.max_rel},
                {"rel_l2", a.rel_l2},
                {"top1", a.top1},
                {"top5", a.top5},
                {"seconds", r.seconds}});
      if (!g.names.empty() && g.names.front() == "fp64")
        j["fp64"] = {
            {"cosine", r.fp64.cosine}, {"max_rel", r.fp64.max_rel}, {"rel_l2", r.fp64.rel_l2}, {"top1", r.fp64.top1}};
    }
    runs.push_back(j);
  }
  return {{"model", g.model},
          {"tokens", g.tokens},
          {"min_cosine", g.min_cosine},
          {"cpu_seconds", g.cpu_seconds},
          {"runs", runs},
          {"selected", g.selected},
          {"names", g.names},
          {"cosine", g.cosine},
          {"fp64_seconds", g.fp64_seconds},
          {"popper", popper::build_json()}};
}

void print_drift(const std::vector<DriftPoint>& pts, const std::vector<std::string>& series) {
  std::printf("\ndrift against FP64 of the logits of the model truncated after L layers:\n%-10s", "L");
  for (const auto& o : series) std::printf(" %22s", o.c_str());
  std::printf(" %12s\n%-10s", "hypothesis", "");
  for (std::size_t i = 0; i < series.size(); ++i) std::printf(" %22s", "rel_l2 (1 - cos)");
  std::printf(" %12s\n", "rel");
  int max_depth = 0;
  for (const auto& p : pts) max_depth = std::max(max_depth, p.depth);
  for (int d = 1; d <= max_depth; ++d) {
    std::printf("%-10d", d);
    for (const auto& o : series) {
      const auto at =
          std::find_if(pts.begin(), pts.end(), [&](const DriftPoint& p) { return p.series == o && p.depth == d; });
      if (at == pts.end()) std::printf(" %22s", "-");  // a whole-model runtime is measured at fewer depths
      else std::printf(" %10.3g (%9.2g)", at->rel_l2, 1 - at->cosine);
    }
    std::printf(" %12.3g\n", hypothesis_rel(d));
  }
  std::printf(
      "\ngrowth of rel_l2 with depth: exponent p of rel ~ L^p (0.5 random walk, 1 linear), and rel(L=%d) / rel(L=1)\n",
      max_depth);
  for (const auto& o : series) {
    const auto f = fit_drift(pts, o);
    std::printf("  %-10s p = %5.2f   rel %.3g, growth %.2fx   (hypothesis: rel %.3g, growth %.1fx)\n", o.c_str(),
                f.power, f.rel, f.growth, f.hypothesis_rel, f.hypothesis_growth);
  }
  double worst_cos = 1, worst_rel = 0;
  for (const auto& p : pts)
    if (p.depth == max_depth) worst_cos = std::min(worst_cos, p.cosine), worst_rel = std::max(worst_rel, p.rel_l2);
  const double predicted = hypothesis_rel(max_depth);
  std::printf(
      "verdict: at L = %d the largest rel of any series is %.3g (lowest cosine %.9f); the hypothesis predicts "
      "rel %.3g (and cosine ~ -0.005 at 28 layers): %s\n",
      max_depth, worst_rel, worst_cos, predicted,
      worst_rel < predicted / 10 ? "FALSIFIED (every series more than 10x below the prediction)"
                                 : "NOT falsified (a series within 10x of the prediction)");
}

}  // namespace

// Every error, the setup's too, is a message and exit 2, never an abort.
int main(int argc, char** argv) try {
  CLI::App app{
      "popper parity: run the multi-backend parity gate (one canary forward per backend against the cpu "
      "reference; keep the first backend in priority order with cosine >= threshold) and measure "
      "accumulation drift against depth"};
  std::string model_path, write_model, json_out, drift_dir, preset = "canary";
  std::vector<std::string> candidates{"cuda", "vulkan", "cpu-simd", "ggml-cuda", "ggml-vulkan", "ggml-cpu"}, faults,
      drift_names;
  int tokens = 4, threads = popper::parallel::hardware_threads(), layers = 0;
  double min_cosine = kMinCosine;
  bool drift = false, no_fp64 = false;
  std::uint64_t seed = 20261123;
  app.add_option("--model", model_path, "a qwen2 GGUF whose matrices are Q4_K (default: the generated canary)");
  app.add_option("--preset", preset, "generated model: canary (hidden 1024, 24 layers, vocab 32768) or small")
      ->check(CLI::IsMember({"canary", "small"}));
  app.add_option("--layers", layers, "generated model: number of layers (default: the preset's)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--seed", seed, "generated model: weight seed");
  app.add_option("--write-model", write_model, "write the generated model as GGUF to this path, then run on it");
  app.add_option("--candidates", candidates,
                 "priority order (popper's cuda, vulkan, cpu-simd; llama.cpp's ggml-cuda, ggml-vulkan, ggml-cpu)")
      ->delimiter(',');
  app.add_flag("--no-fp64", no_fp64, "skip the FP64 oracle (its column and the cosine matrix's fp64 row)");
  app.add_option("--inject-fault", faults,
                 "BACKEND:KIND (zero-scale | reverse-subblocks): corrupt what that backend's "
                 "GEMVs read, to see the gate exclude it (repeatable)");
  app.add_option("--tokens", tokens, "canary prompt length")->check(CLI::Range(1, 4096));
  app.add_option("--threads", threads, "threads of every backend")->check(CLI::Range(1, 1024));
  app.add_option("--min-cosine", min_cosine, "parity threshold")->check(CLI::Range(-0.999, 1.0));
  app.add_option("--json", json_out, "write the gate's result as JSON");
  app.add_flag("--drift", drift, "also measure drift against depth for every accumulation order");
  app.add_option("--drift-out", drift_dir, "folder for parity-drift.csv and parity-drift.svg (with --drift)");
  app.add_option("--drift-series", drift_names,
                 "with --drift: accumulation orders and backends (default: every order, cpu-simd, and ggml-cpu, "
                 "ggml-vulkan where available)")
      ->delimiter(',');
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;  // usage errors exit 2, as every popper command
  }
  check_drift_series(drift_names);  // before minutes of work, not after
  Model m;
  if (!model_path.empty()) {
    if (layers || !write_model.empty())
      throw popper::InvalidArgument("--layers and --write-model apply to a generated model, not --model");
    m = load_gguf(model_path);
  } else {
    Config c = preset == "small" ? small_config() : canary_config();
    if (layers) c.layers = layers;
    std::fprintf(stderr, "generating the %s model (%lld layers, seed %llu) ...\n", preset.c_str(),
                 static_cast<long long>(c.layers), static_cast<unsigned long long>(seed));
    m = make_canary(c, seed, threads);
    if (!write_model.empty()) {
      write_gguf(m, write_model);
      m = load_gguf(write_model);  // run on what was written, so the file is what was checked
      std::fprintf(stderr, "wrote %s\n", write_model.c_str());
    }
  }
  GateOptions o;
  o.candidates = candidates;
  o.min_cosine = min_cosine;
  o.threads = threads;
  o.tokens = tokens;
  o.fp64 = !no_fp64;
  for (const auto& f : faults) {
    const auto colon = f.find(':');
    if (colon == std::string::npos) throw popper::InvalidArgument("--inject-fault '" + f + "': expected BACKEND:KIND");
    o.faults.emplace_back(f.substr(0, colon), parse_fault(f.substr(colon + 1)));
  }
  std::fprintf(stderr, "running the gate: cpu reference, then %zu candidates (%.1f MB of weights per token) ...\n",
               candidates.size(), static_cast<double>(m.bytes_per_token()) / 1e6);
  const GateResult g = run_gate(m, o);
  std::cout << format_gate(g);
  if (!json_out.empty()) popper::write_file_atomic(json_out, to_json(g).dump(2) + "\n");
  if (drift) {
    auto series = drift_names;
    if (series.empty()) {
      series = drift_series();
      for (auto d : {llama::Device::Cpu, llama::Device::Vulkan})
        if (llama::unavailable_reason(d).empty()) series.emplace_back(llama::to_string(d));
    }
    std::fprintf(stderr, "measuring drift: one FP64 and %zu FP32 forwards ...\n", series.size());
    const auto pts = measure_drift(m, canary_tokens(m.config, tokens), series, threads);
    print_drift(pts, series);
    if (!drift_dir.empty()) {
      std::filesystem::create_directories(drift_dir);
      popper::write_file_atomic(drift_dir + "/parity-drift.csv", drift_csv(pts));
      popper::write_file_atomic(
          drift_dir + "/parity-drift.svg",
          drift_svg(pts, "FP32 logits against FP64 by depth, " + std::to_string(m.config.layers) + "-layer " + preset));
      std::printf("wrote %s/parity-drift.csv and parity-drift.svg\n", drift_dir.c_str());
    }
  }
  for (const auto& r : g.runs)
    if (r.available && !r.passed) return 1;
  return 0;
} catch (const std::exception& e) {
  std::cerr << "popper parity: " << e.what() << "\n";
  return 2;
}
