#include <map>


#include "popper/binding.hpp"

namespace popper {

Registry& Registry::instance() {
  static Registry r;
  return r;
}

void Registry::add(Binding b) {
  if (find(b.id) != nullptr) duplicates_.push_back(b.id + " (" + b.file + ":" + std::to_string(b.line) + ")");
  bindings_.push_back(std::move(b));
}

const Binding* Registry::find(const std::string& id) const {
  for (const auto& b : bindings_)
    if (b.id == id) return &b;
  return nullptr;
}

nlohmann::json Registry::to_json() const {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& b : bindings_)
    arr.push_back({{"id", b.id},
                   {"kind", b.kind == BindingKind::Falsifier ? "falsifier" : "harness"},
                   {"file", b.file},
                   {"line", b.line}});
  return {{"bindings", arr}, {"duplicates", duplicates_}};
}

namespace {
std::map<std::string, CapabilityProbe>& probes() {
  static std::map<std::string, CapabilityProbe> m;
  return m;
}

CapabilityStatus cpu_feature(bool has, const char* name) {
  if (has) return {true, ""};
  return {false, std::string("CPU lacks ") + name};
}
}  // namespace

void register_capability(const std::string& name, CapabilityProbe probe) { probes()[name] = std::move(probe); }

CapabilityStatus capability(const std::string& name) {
  if (auto it = probes().find(name); it != probes().end()) return it->second();
  __builtin_cpu_init();
  if (name == "avx2") return cpu_feature(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"), "AVX2+FMA");
  if (name == "avx512")
    return cpu_feature(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"),
                       "AVX-512 F/BW/DQ/VL");
  if (name == "cuda") return {false, "no CUDA device: no probe registered (popper built without device support)"};
  return {false, "unknown capability '" + name + "'"};
}

const char* to_string(Outcome o) {
  switch (o) {
    case Outcome::Passed: return "passed";
    case Outcome::Failed: return "failed";
    case Outcome::Skipped: return "skipped";
    case Outcome::Unbound: return "unbound";
  }
  return "?";
}

}  // namespace popper
