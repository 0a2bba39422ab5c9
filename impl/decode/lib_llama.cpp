// popper's C++ API over libllama (lib_llama.hpp). Compiled as stubs that
// report "requires ggml" when cmake/PopperGgml.cmake did not find the packages.
#include "impl/decode/lib_llama.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "impl/common/device.hpp"
#include "impl/common/vulkan_runtime.hpp"
#include "popper/error.hpp"
#include "impl/q4k/lib_ggml.hpp"

#if POPPER_HAVE_GGML
#include <ggml-backend.h>
#include <llama.h>
#endif

namespace popper::decode::llama {

const char* to_string(Device d) {
  switch (d) {
    case Device::Cpu: return "ggml-cpu";
    case Device::Vulkan: return "ggml-vulkan";
    case Device::Cuda: return "ggml-cuda";
  }
  return "?";
}

#if !POPPER_HAVE_GGML

std::string unavailable_reason(Device) { return "requires ggml: " + q4k::ggml::status().reason; }
struct Session::Impl {};
Session::Session(const std::string&, Device d, int) { throw Unsupported(unavailable_reason(d)); }
Session::~Session() = default;
std::int64_t Session::vocab() const { return 0; }
std::vector<float> Session::logits(std::span<const std::int32_t>) {
  throw Unsupported(unavailable_reason(Device::Cpu));
}
const std::string& Session::evidence() const {
  static const std::string none;
  return none;
}

#else

namespace {

// llama.cpp's errors only (its info and warnings drown the report), or
// everything with POPPER_LLAMA_LOG=1 (to see what it loaded).
// A backend package's folder: $POPPER_GGML_<X>_DIR (a bundle sets it), else where the build found it.
std::string package_dir(const char* variable, const char* built) {
  const char* v = std::getenv(variable);
  return v && *v ? v : built;
}

void llama_log(enum ggml_log_level level, const char* text, void*) {
  static const bool all = [] {
    const char* v = std::getenv("POPPER_LLAMA_LOG");
    return v && *v && *v != '0';
  }();
  if (all || level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

struct Probe {
  std::string reason;  // empty: usable
  ggml_backend_dev_t dev = nullptr;
  std::string evidence;
};

// The device of a backend library loaded from `lib` (ggml-vulkan, ggml-cuda).
Probe load_device(const std::string& lib, const std::string& requires_what) {
  Probe p;
  ggml_backend_reg_t reg = ggml_backend_load(lib.c_str());
  if (!reg) {
    p.reason = requires_what + ": " + lib + " did not load (missing, or no driver/device)";
    return p;
  }
  for (std::size_t i = 0; i < ggml_backend_reg_dev_count(reg) && !p.dev; ++i)
    if (ggml_backend_dev_type(ggml_backend_reg_dev_get(reg, i)) != GGML_BACKEND_DEVICE_TYPE_CPU)
      p.dev = ggml_backend_reg_dev_get(reg, i);
  if (!p.dev) p.reason = requires_what + ": " + std::string(ggml_backend_reg_name(reg)) + " found no device";
  return p;
}

// "llvmpipe" of "llvmpipe (LLVM 15.0.6, 256 bits)".
std::string device_name(ggml_backend_dev_t dev) {
  const std::string d = ggml_backend_dev_description(dev);
  return d.substr(0, d.find(" ("));
}

Probe probe(Device d) {
  const auto& g = q4k::ggml::status();
  if (!g.usable()) return {"requires ggml: " + g.reason, nullptr, ""};
  static std::once_flag once;
  std::call_once(once, [] {
    llama_log_set(&llama_log, nullptr);
    llama_backend_init();
  });
  switch (d) {
    case Device::Cpu: return {"", nullptr, q4k::ggml::cpu_backend_tag()};
    case Device::Vulkan: {
      // ggml cannot say whether its device is a CPU one; under emulation it declines as popper's runtime does.
      if (const char* model = vulkan::emulated_cpu_model())
        return {std::string("requires vulkan: this CPU is emulated (") + model +
                    "), where a CPU Vulkan device's shader JIT does not run; POPPER_VULKAN_DEVICE overrides",
                nullptr, ""};
      setenv("GGML_VK_VISIBLE_DEVICES", "0", 0);  // lavapipe is a CPU-type device, skipped otherwise
      Probe p = load_device(package_dir("POPPER_GGML_VULKAN_DIR", POPPER_GGML_VULKAN_DIR) + "/libggml-vulkan.so",
                            "requires vulkan");
      if (p.dev) p.evidence = "ggml-vulkan:" + device_name(p.dev);
      return p;
    }
    case Device::Cuda: {
      const auto& cuda = device::cuda_status();
      if (!cuda.usable()) return {"requires cuda: " + cuda.reason, nullptr, ""};
      Probe p = load_device(package_dir("POPPER_GGML_CUDA_DIR", POPPER_GGML_CUDA_DIR) + "/libggml-cuda.so",
                            "requires cuda (the @node-llama-cpp/linux-x64-cuda package)");
      if (p.dev) p.evidence = "ggml-cuda:" + device_name(p.dev);
      return p;
    }
  }
  return {"unknown device", nullptr, ""};
}

const Probe& probed(Device d) {
  static std::mutex mu;
  static Probe cache[3];
  static bool done[3] = {};
  const std::lock_guard lock(mu);
  const auto i = static_cast<std::size_t>(d);
  if (!done[i]) cache[i] = probe(d), done[i] = true;
  return cache[i];
}

}  // namespace

std::string unavailable_reason(Device d) { return probed(d).reason; }

struct Session::Impl {
  llama_model* model = nullptr;
  llama_context* ctx = nullptr;  // kept between calls, as a server keeps it; cleared before each prompt
  std::unique_ptr<q4k::ggml::CpuThreadpool> pool;  // attached to ctx, as llama.cpp's tools attach one; outlives it
  int threads = 1;
  std::string evidence;
  ~Impl() {
    if (ctx) llama_free(ctx);
    if (model) llama_model_free(model);
  }
};

Session::Session(const std::string& path, Device d, int threads) : impl_(std::make_unique<Impl>()) {
  if (threads < 1) throw InvalidArgument("llama session: threads must be >= 1");
  const Probe& p = probed(d);
  if (!p.reason.empty()) throw Unsupported(p.reason);
  impl_->threads = threads;
  impl_->evidence = p.evidence;
  llama_model_params mp = llama_model_default_params();
  // Exactly one device: none for the CPU (every layer on ggml-cpu), else that one with every layer.
  ggml_backend_dev_t devices[2] = {p.dev, nullptr};
  mp.devices = devices;
  mp.n_gpu_layers = p.dev ? 999 : 0;
  impl_->model = llama_model_load_from_file(path.c_str(), mp);
  if (!impl_->model) throw Error("llama.cpp did not load " + path + " (its reason is above)");
}

Session::~Session() = default;

std::int64_t Session::vocab() const { return llama_vocab_n_tokens(llama_model_get_vocab(impl_->model)); }

const std::string& Session::evidence() const { return impl_->evidence; }

std::vector<float> Session::logits(std::span<const std::int32_t> tokens) {
  if (tokens.empty()) throw InvalidArgument("llama session: empty prompt");
  const std::int64_t n = vocab();
  for (auto t : tokens)
    if (t < 0 || t >= n)
      throw InvalidArgument("llama session: token id " + std::to_string(t) + " outside [0, " + std::to_string(n) + ")");
  // A context (KV cache, compute graphs, its thread pool) is made once for the
  // longest prompt so far and its memory cleared before each prompt, so a
  // timed call measures decoding, not llama.cpp's setup.
  if (!impl_->ctx || llama_n_ctx(impl_->ctx) < tokens.size()) {
    if (impl_->ctx) llama_free(impl_->ctx), impl_->ctx = nullptr;
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = static_cast<std::uint32_t>(tokens.size());
    cp.n_batch = cp.n_ubatch = 1;
    cp.n_threads = cp.n_threads_batch = impl_->threads;
    impl_->ctx = llama_init_from_model(impl_->model, cp);
    if (!impl_->ctx) throw Error("llama.cpp: no context for " + std::to_string(tokens.size()) + " tokens");
    if (!impl_->pool) impl_->pool = std::make_unique<q4k::ggml::CpuThreadpool>(impl_->threads);
    if (auto* h = static_cast<ggml_threadpool_t>(impl_->pool->handle())) llama_attach_threadpool(impl_->ctx, h, h);
  }
  llama_context* ctx = impl_->ctx;
  llama_memory_clear(llama_get_memory(ctx), true);
  std::vector<llama_token> ids(tokens.begin(), tokens.end());
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (llama_decode(ctx, llama_batch_get_one(&ids[i], 1)) != 0)
      throw Error("llama.cpp: decode of token " + std::to_string(i) + " failed");
  const float* y = llama_get_logits_ith(ctx, -1);
  if (!y) throw Error("llama.cpp returned no logits");
  return {y, y + n};
}

#endif  // POPPER_HAVE_GGML

}  // namespace popper::decode::llama
