// Binding contract ids to C++ falsifiers and bounded exhaustive harnesses.
//
//   POPPER_FALSIFIER("FALSIFY-GEMM-005", [](const popper::Params& p) { ... });
//   POPPER_HARNESS("KANI-GEMM-001", [](const popper::Params& p) { ... p.bound() ... });
//
// The body receives the test's `params` from the contract and calls the real
// implementation, asserting with GoogleTest (EXPECT_*/ASSERT_*) or RapidCheck
// (rc::check inside, RC_ASSERT in properties). The registry lives in the test
// binary, so a binding to code that no longer exists fails to compile.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "popper/error.hpp"

namespace popper {

// A falsification test's `params` mapping (plus `bound` for harnesses), with
// typed getters. A present key of the wrong type throws ParamError naming it.
class ParamError : public Error {
 public:
  using Error::Error;
};

class Params {
 public:
  Params() = default;
  Params(std::string owner_id, nlohmann::json values) : owner_(std::move(owner_id)), v_(std::move(values)) {}

  bool has(const std::string& key) const { return v_.is_object() && v_.contains(key); }
  double number(const std::string& key, std::optional<double> fallback = std::nullopt) const;
  std::int64_t integer(const std::string& key, std::optional<std::int64_t> fallback = std::nullopt) const;
  std::string string(const std::string& key, std::optional<std::string> fallback = std::nullopt) const;
  bool boolean(const std::string& key, std::optional<bool> fallback = std::nullopt) const;
  std::vector<std::int64_t> integers(const std::string& key,
                                     std::optional<std::vector<std::int64_t>> fallback = std::nullopt) const;
  std::vector<double> numbers(const std::string& key, std::optional<std::vector<double>> fallback = std::nullopt) const;
  std::vector<std::string> strings(const std::string& key,
                                   std::optional<std::vector<std::string>> fallback = std::nullopt) const;
  // A list of mappings (e.g. `shapes: [{m: 4, n: 5, k: 6}, ...]`), each a Params.
  std::vector<Params> list(const std::string& key) const;

  // Seed for random inputs: POPPER_SEED from the environment if set, else
  // `seed` from params, else a fixed default. Printed by the falsifier on failure.
  std::uint64_t seed() const;
  // Exhaustive bound of a kani harness (its `bound` key); throws if absent.
  std::int64_t bound() const;

  const std::string& owner() const { return owner_; }
  const nlohmann::json& json() const { return v_; }

 private:
  const nlohmann::json* find(const std::string& key) const;
  [[noreturn]] void type_error(const std::string& key, const char* wanted) const;
  std::string owner_;
  nlohmann::json v_ = nlohmann::json::object();
};

enum class BindingKind { Falsifier, Harness };
using BoundFn = std::function<void(const Params&)>;

struct Binding {
  BindingKind kind;
  std::string id;
  BoundFn fn;
  std::string file;
  int line;
};

// The process-wide registry. Registering an id twice is a programming error,
// reported when the test binary starts (see duplicate_bindings()).
class Registry {
 public:
  static Registry& instance();
  void add(Binding b);
  const Binding* find(const std::string& id) const;
  const std::vector<Binding>& all() const { return bindings_; }
  const std::vector<std::string>& duplicates() const { return duplicates_; }
  // {"bindings":[{"id":..,"kind":"falsifier"|"harness","file":..,"line":..}]}
  nlohmann::json to_json() const;

 private:
  std::vector<Binding> bindings_;
  std::vector<std::string> duplicates_;
};

struct Registrar {
  Registrar(BindingKind kind, const char* id, BoundFn fn, const char* file, int line) {
    Registry::instance().add(Binding{kind, id, std::move(fn), file, line});
  }
};

// Capabilities named by a test's `requires:`. Built-in probes: CPU features
// (avx2, avx512, avx512_bf16) and devices found through their drivers, without
// linking them: cuda (libcuda.so.1: cuInit, cuDeviceGetCount) and vulkan
// (libvulkan.so.1: a physical device). A project may register its own probe
// for any name (POPPER_CAPABILITY), which replaces the built-in one.
struct CapabilityStatus {
  bool available;
  std::string reason;  // why not, when unavailable
};
using CapabilityProbe = std::function<CapabilityStatus()>;
void register_capability(const std::string& name, CapabilityProbe probe);
CapabilityStatus capability(const std::string& name);
struct CapabilityRegistrar {
  CapabilityRegistrar(const char* name, CapabilityProbe probe) { register_capability(name, std::move(probe)); }
};

// Evidence: what actually executed inside the running bound test. A falsifier
// records the backend of every kernel call it judges, as the kernel reports
// it (a device entry that declined reports the CPU):
//   tags: "cpu:scalar" "cpu:avx2" "cpu:avx512" "openblas:<core>" "cuda:sm_90"
//         "vulkan:<device>" "ggml-cpu" "reference" ...
// `Forced` marks a path chosen by a dispatch override rather than by the
// kernel's own detection; under POPPER_ISA_MAX every "cpu:" path is. run_bound
// writes the set as the result properties popper_backends / popper_declines /
// popper_where, which the audit reads: a `requires: [cuda]` test with no cuda
// evidence is skipped, never passed, and an obligation with `backends:` is
// covered only by evidence on each.
enum class Dispatch { Auto, Forced };
const char* to_string(Dispatch how);  // "auto" | "forced"
void record_backend(const std::string& tag, Dispatch how = Dispatch::Auto);
// A device entry that declined to the CPU. Never evidence for the device;
// under DeviceRule::DeclineFails (make gpu-check) it fails the test.
void record_decline(const std::string& device, const std::string& reason);

struct BackendEvidence {
  std::string tag;
  Dispatch how = Dispatch::Auto;
};
struct Evidence {
  std::vector<BackendEvidence> backends;  // unique by (tag, how), in first-seen order
  std::vector<std::string> declines;      // "cuda: <reason>"
  void clear() { backends.clear(), declines.clear(); }
};
// The evidence recorded since the last take (run_bound takes it per test).
Evidence take_evidence();
// "native", or "emulated:<model>" when POPPER_CPU_MODEL names the CPU model an
// emulator presents (set by the CPU-matrix legs, make test-cpus); followed by
// ":isa-max=<isa>" when POPPER_ISA_MAX caps the kernels' paths.
std::string execution_site();
// Whether this harness is a sanitizer build (make asan), where a test's
// params.emulated applies as under an emulated CPU (Params::find).
bool sanitizer_build();
// Whether falsifiers may force CPU paths other than the one the kernels pick
// by themselves: true by default; false when POPPER_DISPATCH=auto (the
// CPU-matrix legs, so each leg proves exactly its own CPU's path).
bool forced_paths_allowed();
// What a decline means to a verdict: a skip (the default), or a failure
// (make gpu-check, POPPER_REQUIRE_DEVICE=1). Verdict functions take it as an
// argument; only the test runner reads the variable (device_rule()), so unit
// tests of the verdict logic judge the same way under gpu-check.
enum class DeviceRule { DeclineSkips, DeclineFails };
// DeclineFails when POPPER_REQUIRE_DEVICE=1, else DeclineSkips.
DeviceRule device_rule();
// Capabilities that name a device: a test requiring one needs evidence from it.
bool is_device_capability(const std::string& name);
// Does evidence tag `tag` satisfy the backend requirement `want`? ("cuda"
// matches "cuda" and "cuda:sm_90"; "cpu:avx2" matches only "cpu:avx2...".)
bool backend_matches(const std::string& want, const std::string& tag);
// Did the work of evidence tag `tag` run on `device` (a device capability)?
// Its own tags ("vulkan:llvmpipe") and a vendor runtime's on it
// ("ggml-vulkan:llvmpipe"); "ggml-cpu:zen4" is no Vulkan evidence.
bool device_ran(const std::string& device, const std::string& tag);
// The `popper_backends` result property, "tag=auto|forced,...": written by
// run_bound, read by the audit and by the mutant judge.
std::string format_backends(const std::vector<BackendEvidence>& backends);
std::vector<BackendEvidence> parse_backends(const std::string& property);

// What running one contract test id produced.
enum class Outcome { Passed, Failed, Skipped, Unbound };
const char* to_string(Outcome o);
struct RunResult {
  Outcome outcome;
  std::string reason;  // skip reason, "UNBOUND: ...", or failure summary
};

struct Contract;

// Resolves `id` in a loaded contract without running anything, in this
// order: Failed (not in the contract), Unbound (no registration; the reason
// starts with "UNBOUND"), Failed (bound with the wrong macro), Skipped (an
// unmet `requires`; Failed for a device under DeviceRule::DeclineFails), or
// ready to run (binding != nullptr, outcome Passed until it runs).
struct PreparedCall {
  Outcome outcome = Outcome::Failed;
  std::string reason;
  const Binding* binding = nullptr;
  Params params;
  std::vector<std::string> requires_;
  bool ready() const { return binding != nullptr; }
};

// After the body ran: the verdict the evidence allows. A pass of a test that
// requires a device but recorded no evidence from it becomes Skipped ("ran
// on a decline"), or Failed under DeviceRule::DeclineFails, where a recorded
// decline fails too.
RunResult judge_evidence(Outcome body_outcome, const std::string& body_reason,
                         const std::vector<std::string>& requires_, const Evidence& ev, DeviceRule rule);
PreparedCall prepare_bound(const Contract& c, const std::string& id, DeviceRule rule,
                           const Registry& registry = Registry::instance());

// A contract compiled into the test binary by `popper scaffold`: the file name
// it came from (for diagnostics) and its text. A test binary built this way
// reads no source file at run time, so it runs wherever it is copied.
struct EmbeddedContract {
  const char* file;
  const char* profile;  // "strict" or "pv": how the scaffold read it
  const char* text;
};

// Loads the contract (cached), resolves `id` to a falsification test or kani
// harness, checks `requires`, and runs its binding. Inside a GoogleTest test
// it records the outcome as a property (popper_outcome) and turns skips and
// UNBOUND into GTEST_SKIP with the reason.
RunResult run_bound(const EmbeddedContract& contract, const std::string& id);
RunResult run_bound(const std::string& contract_path, const std::string& id);

}  // namespace popper

#define POPPER_CONCAT_INNER(a, b) a##b
#define POPPER_CONCAT(a, b) POPPER_CONCAT_INNER(a, b)
#define POPPER_FALSIFIER(id, ...)                                                                                    \
  static const ::popper::Registrar POPPER_CONCAT(popper_binding_, __COUNTER__)(::popper::BindingKind::Falsifier, id, \
                                                                               __VA_ARGS__, __FILE__, __LINE__)
#define POPPER_HARNESS(id, ...)                                                                                    \
  static const ::popper::Registrar POPPER_CONCAT(popper_binding_, __COUNTER__)(::popper::BindingKind::Harness, id, \
                                                                               __VA_ARGS__, __FILE__, __LINE__)
#define POPPER_CAPABILITY(name, ...) \
  static const ::popper::CapabilityRegistrar POPPER_CONCAT(popper_capability_, __COUNTER__)(name, __VA_ARGS__)
