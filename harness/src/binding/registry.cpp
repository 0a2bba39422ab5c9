#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

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

// The CUDA driver API through dlopen: a device is there when cuInit succeeds
// and cuDeviceGetCount reports one. Nothing is linked, so this works in any
// project, with or without a CUDA toolkit.
CapabilityStatus probe_cuda() {
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return {false, "no CUDA driver (libcuda.so.1 cannot be loaded)"};
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(::dlsym(h, "cuInit"));
  auto count = reinterpret_cast<CountFn>(::dlsym(h, "cuDeviceGetCount"));
  if (!init || !count) return {false, "libcuda.so.1 lacks cuInit/cuDeviceGetCount"};
  if (const int rc = init(0); rc != 0)
    return {false, "no CUDA device: cuInit failed with CUresult " + std::to_string(rc)};
  int n = 0;
  if (count(&n) != 0 || n <= 0) return {false, "no CUDA device: the driver reports none"};
  return {true, ""};  // the handle stays open: the driver dislikes being unloaded
}

// The Vulkan loader through dlopen: vkCreateInstance, then at least one
// physical device (lavapipe, Mesa's CPU device, counts: it is a real driver).
CapabilityStatus probe_vulkan() {
  void* h = ::dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return {false, "no Vulkan loader (libvulkan.so.1 cannot be loaded)"};
  struct AppInfo {
    int sType;
    const void* pNext;
    const char* app;
    std::uint32_t app_version;
    const char* engine;
    std::uint32_t engine_version;
    std::uint32_t api_version;
  };
  struct CreateInfo {
    int sType;
    const void* pNext;
    std::uint32_t flags;
    const AppInfo* app;
    std::uint32_t layers;
    const char* const* layer_names;
    std::uint32_t extensions;
    const char* const* extension_names;
  };
  using Instance = void*;
  using CreateFn = int (*)(const CreateInfo*, const void*, Instance*);
  using EnumFn = int (*)(Instance, std::uint32_t*, void**);
  using DestroyFn = void (*)(Instance, const void*);
  auto create = reinterpret_cast<CreateFn>(::dlsym(h, "vkCreateInstance"));
  auto enumerate = reinterpret_cast<EnumFn>(::dlsym(h, "vkEnumeratePhysicalDevices"));
  auto destroy = reinterpret_cast<DestroyFn>(::dlsym(h, "vkDestroyInstance"));
  if (!create || !enumerate || !destroy) return {false, "libvulkan.so.1 lacks the instance entry points"};
  const AppInfo app{
      0 /*VK_STRUCTURE_TYPE_APPLICATION_INFO*/, nullptr, "popper", 1, "popper", 1, (1u << 22) | (1u << 12)};
  const CreateInfo ci{1 /*VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO*/, nullptr, 0, &app, 0, nullptr, 0, nullptr};
  Instance inst = nullptr;
  if (const int rc = create(&ci, nullptr, &inst); rc != 0)
    return {false, "no Vulkan device: vkCreateInstance failed with VkResult " + std::to_string(rc)};
  std::uint32_t n = 0;
  int rc = enumerate(inst, &n, nullptr);
  if (rc != 0 || n == 0) {
    destroy(inst, nullptr);
    return {false, "no Vulkan device: the loader reports no physical device"};
  }
  // Under emulation (the CPU-matrix legs set POPPER_CPU_MODEL) a CPU Vulkan
  // device (lavapipe) JIT-compiles shaders for the host CPU and faults; popper's
  // Vulkan runtime and its ggml-vulkan backend decline it there, so the
  // capability is absent unless a real device exists or POPPER_VULKAN_DEVICE asks.
  const char* model = std::getenv("POPPER_CPU_MODEL");
  bool only_cpu_devices = false;
  if (model && *model && !std::getenv("POPPER_VULKAN_DEVICE")) {
    using PropsFn = void (*)(void*, void*);
    auto props = reinterpret_cast<PropsFn>(::dlsym(h, "vkGetPhysicalDeviceProperties"));
    std::vector<void*> devices(n);
    rc = enumerate(inst, &n, devices.data());
    only_cpu_devices = props && rc == 0;
    for (std::uint32_t i = 0; i < n && only_cpu_devices; ++i) {
      alignas(8) unsigned char p[4096] = {};  // VkPhysicalDeviceProperties (about 824 bytes)
      props(devices[i], p);
      std::int32_t type = 0;  // VkPhysicalDeviceType after apiVersion, driverVersion, vendorID, deviceID
      std::memcpy(&type, p + 16, sizeof type);
      only_cpu_devices = type == 4;  // VK_PHYSICAL_DEVICE_TYPE_CPU
    }
  }
  // The instance is kept until exit, never destroyed: destroying it lets the
  // loader unload the driver, which the kernels' runtime then loads again, maybe
  // at another address, and LeakSanitizer can no longer attribute the driver's
  // own leaks to it (cmake/lsan-suppressions.txt names the driver's module).
  if (only_cpu_devices)
    return {false, std::string("only a CPU Vulkan device, and this CPU is emulated (") + model +
                       "): its shader JIT does not run under qemu-user; POPPER_VULKAN_DEVICE overrides"};
  return {true, ""};
}

struct EvidenceLog {
  std::mutex mu;
  Evidence ev;
};
EvidenceLog& evidence_log() {
  static EvidenceLog log;
  return log;
}

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::string(v) == value;
}

// POPPER_ISA_MAX, the cap on the kernels' CPU paths (cpu_features.cpp reads it); "" when none.
std::string isa_cap() {
  const char* v = std::getenv("POPPER_ISA_MAX");
  return v ? v : "";
}
}  // namespace

void record_backend(const std::string& tag, Dispatch how) {
  // Under POPPER_ISA_MAX the cap chose the CPU path, not the kernel: such a
  // path is never evidence of the kernel's own dispatch, whatever the caller says.
  if (tag.rfind("cpu:", 0) == 0 && !isa_cap().empty()) how = Dispatch::Forced;
  auto& log = evidence_log();
  std::lock_guard lock(log.mu);
  for (const auto& b : log.ev.backends)
    if (b.tag == tag && b.how == how) return;
  log.ev.backends.push_back({tag, how});
}

void record_decline(const std::string& device, const std::string& reason) {
  auto& log = evidence_log();
  std::lock_guard lock(log.mu);
  const std::string line = device + ": " + reason;
  for (const auto& d : log.ev.declines)
    if (d == line) return;
  log.ev.declines.push_back(line);
}

Evidence take_evidence() {
  auto& log = evidence_log();
  std::lock_guard lock(log.mu);
  Evidence out = std::move(log.ev);
  log.ev.clear();
  return out;
}

std::string execution_site() {
  const char* m = std::getenv("POPPER_CPU_MODEL");
  std::string site = m && *m ? std::string("emulated:") + m : std::string("native");
  // A run with its kernels capped (the CPU matrix's native run of the tests
  // an emulated leg leaves out) says so, as evidence of that path only.
  if (const std::string cap = isa_cap(); !cap.empty()) site += ":isa-max=" + cap;
  return site;
}

bool forced_paths_allowed() { return !env_is("POPPER_DISPATCH", "auto"); }
DeviceRule device_rule() {
  return env_is("POPPER_REQUIRE_DEVICE", "1") ? DeviceRule::DeclineFails : DeviceRule::DeclineSkips;
}
bool is_device_capability(const std::string& name) { return name == "cuda" || name == "vulkan"; }

bool backend_matches(const std::string& want, const std::string& tag) {
  return tag == want || (tag.size() > want.size() && tag.compare(0, want.size(), want) == 0 && tag[want.size()] == ':');
}

bool device_ran(const std::string& device, const std::string& tag) {
  if (backend_matches(device, tag)) return true;
  // "<runtime>-<device>[:...]": a vendor runtime's work on the device (ggml-vulkan:llvmpipe).
  const auto dash = tag.find('-'), colon = tag.find(':');
  return dash != std::string::npos && dash > 0 && dash < colon && backend_matches(device, tag.substr(dash + 1));
}

const char* to_string(Dispatch how) { return how == Dispatch::Forced ? "forced" : "auto"; }

std::string format_backends(const std::vector<BackendEvidence>& backends) {
  std::string out;
  for (const auto& b : backends) out += (out.empty() ? "" : ",") + b.tag + "=" + to_string(b.how);
  return out;
}

std::vector<BackendEvidence> parse_backends(const std::string& property) {
  std::vector<BackendEvidence> out;
  std::istringstream in(property);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    const bool forced = eq != std::string::npos && item.substr(eq + 1) == to_string(Dispatch::Forced);
    out.push_back({item.substr(0, eq), forced ? Dispatch::Forced : Dispatch::Auto});
  }
  return out;
}

void register_capability(const std::string& name, CapabilityProbe probe) { probes()[name] = std::move(probe); }

CapabilityStatus capability(const std::string& name) {
  if (auto it = probes().find(name); it != probes().end()) return it->second();
  __builtin_cpu_init();
  if (name == "avx2") return cpu_feature(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"), "AVX2+FMA");
  if (name == "avx512")
    return cpu_feature(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"),
                       "AVX-512 F/BW/DQ/VL");
  if (name == "avx512_bf16") return cpu_feature(__builtin_cpu_supports("avx512bf16"), "AVX512-BF16");
  if (name == "cuda") {
    static const CapabilityStatus s = probe_cuda();
    return s;
  }
  if (name == "vulkan") {
    static const CapabilityStatus s = probe_vulkan();
    return s;
  }
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
