// Shared pieces of the parity-gate falsifiers (contracts/decode/multi-backend-parity-v1.yaml):
// the small canary at a given depth, the evidence a gate run leaves, and
// temporary model files (edited copies of a GGUF).
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "impl/common/cpu_features.hpp"
#include "impl/decode/forward.hpp"
#include "impl/decode/model.hpp"
#include "impl/decode/parity.hpp"
#include "impl/gguf/gguf.hpp"
#include "popper/binding.hpp"

namespace popper::decode::testbed {

inline Model small_model(std::int64_t layers, std::uint64_t seed) {
  Config c = small_config();
  c.layers = layers;
  return make_canary(c, seed);
}

// Params: layers, seed, and optionally hidden and intermediate (wider rows
// give a GEMV more blocks to accumulate).
inline Model small_model(const popper::Params& p) {
  Config c = small_config();
  c.layers = p.integer("layers");
  c.hidden = p.integer("hidden", c.hidden);
  c.intermediate = p.integer("intermediate", c.intermediate);
  return make_canary(c, p.seed());
}

// The cpu backend is the gate's reference in every run.
inline void record_cpu_reference() { popper::record_backend(cpu::backend_tag(cpu::Isa::Scalar)); }

// Evidence of a gate run: what ran; with `declines`, also each candidate
// whose device was missing (only a test that judges that device records it:
// under POPPER_REQUIRE_DEVICE=1 a decline fails the test).
inline void record(const GateResult& g, bool declines = false) {
  record_cpu_reference();
  for (const auto& r : g.runs) {
    if (r.available) popper::record_backend(r.evidence);
    else if (declines) popper::record_decline(r.name, r.reason);
  }
}

inline const BackendRun* run_of(const GateResult& g, const std::string& name) {
  for (const auto& r : g.runs)
    if (r.name == name) return &r;
  return nullptr;
}

inline void print(const char* id, const GateResult& g) {
  for (const auto& r : g.runs)
    if (r.errored) std::printf("[%s] %s excluded, %s\n", id, r.name.c_str(), r.reason.c_str());
    else if (r.available)
      std::printf("[%s] %s (%s, fault %s): cosine %.9f, max abs %.3g, max rel %.3g, top1 %s, top5 %d/5 -> %s\n", id,
                  r.name.c_str(), r.evidence.c_str(), r.fault.c_str(), r.agreement.cosine, r.agreement.max_abs,
                  r.agreement.max_rel, r.agreement.top1 ? "yes" : "no", r.agreement.top5,
                  r.passed ? "pass" : "excluded");
    else std::printf("[%s] %s unavailable: %s\n", id, r.name.c_str(), r.reason.c_str());
  std::printf("[%s] selected %s\n", id, g.selected.c_str());
}

// A temporary GGUF path, removed on every exit.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& tag)
      : path((std::filesystem::temp_directory_path() / ("popper-mbp-" + tag + "-" + std::to_string(getpid()) + ".gguf"))
                 .string()) {}
  ~TempFile() { std::filesystem::remove(path); }
};

// Rewrites a model file with `edit` applied to its tensor table and metadata.
template <class Edit>
inline void rewrite(const std::string& from, const std::string& to, Edit edit) {
  const auto f = popper::gguf::File::open(from);
  popper::gguf::Writer w;
  std::vector<std::pair<std::string, popper::gguf::Value>> kv = f.metadata();
  std::vector<popper::gguf::TensorInfo> tensors = f.tensors();
  edit(kv, tensors);
  for (auto& [k, v] : kv) w.set(k, v);
  for (const auto& t : tensors) w.add_tensor(t.name, t.type, t.ne, t.data);
  w.write(to);
}

}  // namespace popper::decode::testbed
