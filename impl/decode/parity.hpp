// The parity gate (contracts/decode/multi-backend-parity-v1.yaml):
//
//   multi_backend_parity  cos(forward(b), forward(cpu)) >= tau,  tau = 0.98
//   backend_priority      select = first(b in [cuda, vulkan, cpu-simd] : available(b) and cos >= tau), else cpu
//
// Before serving, one canary forward runs on the cpu backend (the reference
// order) and on every candidate; a candidate whose logits miss tau, or that
// is unavailable, is excluded; nothing that fails is ever selected, and the
// cpu backend serves when nothing passes.
#pragma once
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "impl/decode/model.hpp"

namespace popper::decode {

// How logits `got` agree with `ref`, all in FP64:
//   cosine = <got, ref> / (|got| |ref|)   (NaN when either is zero or not finite)
//   max_abs = max |got - ref|, max_rel = max_abs / max |ref|, rel_l2 = |got - ref| / |ref|
//   top1 = argmax equal, top5 = |top5(got) & top5(ref)|
struct Agreement {
  double cosine = 0, max_abs = 0, max_rel = 0, rel_l2 = 0;
  bool top1 = false;
  int top5 = 0;
};
Agreement compare_logits(std::span<const float> got, std::span<const float> ref);
Agreement compare_logits(std::span<const float> got, std::span<const double> ref);

inline constexpr double kMinCosine = 0.98;  // the seed's threshold

// The selection rule alone: candidates in priority order.
struct Candidate {
  std::string name;
  bool available = false;
  bool passed = false;
};
std::string select_backend(std::span<const Candidate> candidates);

struct GateOptions {
  // Priority order; the cpu backend is the reference. llama.cpp's backends
  // (ggml-*) may be named as well.
  std::vector<std::string> candidates{"cuda", "vulkan", "cpu-simd"};
  double min_cosine = kMinCosine;
  bool fp64 = true;  // also run the FP64 oracle: every run's agreement with it, and the cosine matrix
  int threads = 1;
  int tokens = 4;  // canary prompt length (the logits of the last token are compared)
  std::vector<std::pair<std::string, Fault>> faults;  // backend -> fault injected into the weights it sees
};

struct BackendRun {
  std::string name, evidence, fault = "none";
  bool available = false, passed = false;
  bool errored = false;  // the runtime ran and failed (llama.cpp refusing the file): excluded, reason has its error
  std::string reason;    // unavailable: why; failed: the cosine against tau, or "error: " and the runtime's error
  Agreement agreement;   // against the cpu reference (what the gate judges)
  Agreement fp64;        // against the FP64 oracle (GateOptions::fp64)
  double seconds = 0;    // the forward's wall time (all tokens)
};

struct GateResult {
  std::string model;  // Model::source
  std::vector<std::int32_t> tokens;
  double min_cosine = kMinCosine;  // the threshold it was judged at
  double cpu_seconds = 0, fp64_seconds = 0;
  Agreement cpu_fp64;            // the cpu reference against the FP64 oracle
  std::vector<BackendRun> runs;  // in priority order
  std::string selected;
  // cosine[i][j] between the logits of names[i] and names[j]: "fp64" (when
  // run), "cpu", then every candidate that ran.
  std::vector<std::string> names;
  std::vector<std::vector<double>> cosine;
};

// Runs the gate on m; throws InvalidArgument for an unknown candidate or fault
// target. A candidate whose runtime fails (llama.cpp refusing the file) is
// excluded with its error.
GateResult run_gate(const Model& m, const GateOptions& o);
std::string format_gate(const GateResult& g);

}  // namespace popper::decode
