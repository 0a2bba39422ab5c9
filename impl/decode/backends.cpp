// The parity gate's backends (forward.hpp): cpu (reference order),
// cpu-simd (hand kernels), vulkan and cuda (device GEMVs, host elsewhere),
// and llama.cpp on ggml-cpu, ggml-vulkan and ggml-cuda.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>

#include "impl/common/device.hpp"
#include "impl/common/vulkan_runtime.hpp"
#include "impl/decode/forward.hpp"
#include "impl/decode/lib_llama.hpp"
#include "impl/fused/fused.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"
#include "impl/q4k/cpu_q4k.hpp"
#include "impl/q4k/device_q4k.hpp"

namespace popper::decode {

namespace {

// A backend that runs popper's forward over its own Ops.
class ForwardBackend : public Backend {
 public:
  explicit ForwardBackend(const Model& m) : m_(m) {}
  std::vector<float> logits(std::span<const std::int32_t> tokens) override { return forward<float>(m_, tokens, *ops()); }

 private:
  const Model& m_;
};

class CpuBackend final : public ForwardBackend {
 public:
  CpuBackend(const Model& m, int threads) : ForwardBackend(m), ops_(ordered_ops(m.config, accum::Order::Sequential, threads)) {
    name_ = "cpu";
    evidence_ = cpu::backend_tag(cpu::Isa::Scalar);
  }
  Ops<float>* ops() override { return ops_.get(); }

 private:
  std::unique_ptr<Ops<float>> ops_;
};

// The hand kernels: Q4_K GEMV with 14-bit fixed-point activations (q4k
// contract, gemv_hand) over weights repacked once into the packed layout
// (q4k::cpu::PackedWeights, gemv_packed: the plain kernel's scalar bits), and
// the fused family's one-token kernels.
class SimdBackend final : public ForwardBackend, public Ops<float> {
 public:
  SimdBackend(const Model& m, int threads)
      : ForwardBackend(m), c_(m.config), threads_(threads), table_(fused::make_rope_table(c_.context, c_.head_dim, c_.rope_base)),
        lse_(static_cast<std::size_t>(c_.q_heads)) {
    name_ = "cpu-simd";
    evidence_ = cpu::backend_tag(cpu::Isa::Auto);
    // Every matrix repacked once, as a serving runtime keeps its weights.
    const auto pack = [&](const Weight& w) {
      auto& slot = resident_[w.blocks.data()];
      if (slot.cols() == 0) slot = q4k::cpu::PackedWeights(w.blocks, w.rows, w.cols);
    };
    for (const auto& l : m.layers)
      for (const Weight* w : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) pack(*w);
    pack(m.output);
  }
  Ops<float>* ops() override { return this; }

  void gemv(const Weight& w, std::span<const float> x, std::span<float> y) override {
    const auto it = resident_.find(w.blocks.data());
    if (it == resident_.end()) throw InvalidArgument("decode cpu-simd backend: a matrix that was not packed");
    q4k::cpu::gemv(it->second, x, y, {threads_, cpu::Isa::Auto});
  }
  void rmsnorm(std::span<const float> x, std::span<const float> w, std::span<float> y) override {
    fused::rmsnorm_forward({1, c_.hidden, static_cast<float>(c_.rms_eps)}, x, w, y);
  }
  void rope(std::span<float> q, std::span<float> k, std::int64_t pos) override {
    fused::rope_forward({1, 1, c_.q_heads, c_.kv_heads, c_.head_dim, pos}, table_, q, k);
  }
  void attention(std::span<const float> q, std::span<const float> kc, std::span<const float> vc, std::int64_t len,
                 std::span<float> out) override {
    fused::AttentionShape s;
    s.batch = 1, s.q_len = 1, s.kv_len = len, s.q_heads = c_.q_heads, s.kv_heads = c_.kv_heads, s.head_dim = c_.head_dim;
    fused::attention_forward(s, q, kc, vc, out, lse_);
  }
  void swiglu(std::span<const float> g, std::span<const float> u, std::span<float> h) override {
    fused::swiglu_forward({1, static_cast<std::int64_t>(h.size())}, g, u, h);
  }

 private:
  Config c_;
  int threads_;
  fused::RopeTable table_;
  std::vector<float> lse_;
  std::map<const q4k::Block*, q4k::cpu::PackedWeights> resident_;
};

// A device backend: its GEMVs on the device, every other operation on the
// host in the cpu backend's order. A call the device declined makes the
// backend unavailable (its result was the CPU's).
class DeviceBackend : public ForwardBackend, public Ops<float> {
 public:
  DeviceBackend(const Model& m, int threads)
      : ForwardBackend(m), host_(ordered_ops(m.config, accum::Order::Sequential, threads)) {}
  Ops<float>* ops() override { return this; }

  void rmsnorm(std::span<const float> x, std::span<const float> w, std::span<float> y) override { host_->rmsnorm(x, w, y); }
  void rope(std::span<float> q, std::span<float> k, std::int64_t pos) override { host_->rope(q, k, pos); }
  void attention(std::span<const float> q, std::span<const float> kc, std::span<const float> vc, std::int64_t len,
                 std::span<float> out) override {
    host_->attention(q, kc, vc, len, out);
  }
  void swiglu(std::span<const float> g, std::span<const float> u, std::span<float> h) override { host_->swiglu(g, u, h); }

 protected:
  // Mutation point (decode-device-half-rows): rows past the first half lost.
  static void mutate(std::span<float> y) {
    if (POPPER_MUTANT("decode-device-half-rows"))
      for (std::size_t r = y.size() / 2; r < y.size(); ++r) y[r] = 0;
  }
  void note(const device::Execution& e) {
    if (e.declined() && reason_.empty()) reason_ = e.declined_device + " declined a call: " + e.decline_reason;
    else if (!e.declined()) evidence_ = e.backend;
  }

 private:
  std::unique_ptr<Ops<float>> host_;
};

class VulkanBackend final : public DeviceBackend {
 public:
  VulkanBackend(const Model& m, int threads) : DeviceBackend(m, threads) {
    name_ = "vulkan";
    const auto& st = vulkan::status();
    if (!st.usable()) {
      reason_ = "requires vulkan: " + st.reason;
      return;
    }
    // Every matrix resident on the device, uploaded once (as a serving runtime keeps them).
    const auto upload = [&](const Weight& w) {
      auto& slot = resident_[w.blocks.data()];
      if (!slot) slot = std::make_unique<q4k::VulkanMatrix>(w.blocks, w.rows, w.cols);
      if (!slot->decline_reason().empty() && reason_.empty()) reason_ = "vulkan declined: " + slot->decline_reason();
    };
    for (const auto& l : m.layers)
      for (const Weight* w : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) upload(*w);
    upload(m.output);
  }
  void gemv(const Weight& w, std::span<const float> x, std::span<float> y) override {
    const auto it = resident_.find(w.blocks.data());
    if (it == resident_.end()) throw InvalidArgument("decode vulkan backend: a matrix that was not uploaded");
    note(it->second->gemv(x, y));
    mutate(y);
  }

 private:
  std::map<const q4k::Block*, std::unique_ptr<q4k::VulkanMatrix>> resident_;
};

class CudaBackend final : public DeviceBackend {
 public:
  CudaBackend(const Model& m, int threads) : DeviceBackend(m, threads) {
    name_ = "cuda";
    const auto& st = device::cuda_status();
    if (!st.usable()) reason_ = "requires cuda: " + st.reason;
  }
  void gemv(const Weight& w, std::span<const float> x, std::span<float> y) override {
    note(q4k::gemv_cuda(w.blocks, w.rows, w.cols, x, y));
    mutate(y);
  }
};

// llama.cpp, unmodified, on one of ggml's devices: the model is the GGUF file
// it came from, or popper's GGUF of it in a temporary file (removed once
// llama.cpp has mapped or uploaded it).
class LlamaBackend final : public Backend {
 public:
  LlamaBackend(const Model& m, llama::Device d, int threads) {
    name_ = llama::to_string(d);
    reason_ = llama::unavailable_reason(d);
    if (!reason_.empty()) return;
    std::string path = m.file;
    if (path.empty()) {
      static std::atomic<int> serial{0};
      path = (std::filesystem::temp_directory_path() /
              ("popper-" + name_ + "-" + std::to_string(::getpid()) + "-" + std::to_string(serial++) + ".gguf"))
                 .string();
      write_gguf(m, path);
    }
    struct Remove {
      std::string path;
      ~Remove() {
        if (!path.empty()) std::filesystem::remove(path);
      }
    } remove{m.file.empty() ? path : ""};
    session_ = std::make_unique<llama::Session>(path, d, threads);
    if (session_->vocab() != m.config.vocab)
      throw Error(name_ + ": llama.cpp reads a vocabulary of " + std::to_string(session_->vocab()) + " from " + path +
                  ", popper " + std::to_string(m.config.vocab));
    evidence_ = session_->evidence();
  }
  std::vector<float> logits(std::span<const std::int32_t> tokens) override { return session_->logits(tokens); }

 private:
  std::unique_ptr<llama::Session> session_;
};

}  // namespace

std::unique_ptr<Backend> make_backend(const std::string& name, const Model& m, int threads) {
  if (threads < 1) throw InvalidArgument("decode backend: threads must be >= 1");
  m.config.check();
  if (name == "cpu") return std::make_unique<CpuBackend>(m, threads);
  if (name == "cpu-simd") return std::make_unique<SimdBackend>(m, threads);
  if (name == "vulkan") return std::make_unique<VulkanBackend>(m, threads);
  if (name == "cuda") return std::make_unique<CudaBackend>(m, threads);
  for (auto d : {llama::Device::Cpu, llama::Device::Vulkan, llama::Device::Cuda})
    if (name == llama::to_string(d)) return std::make_unique<LlamaBackend>(m, d, threads);
  throw InvalidArgument("unknown backend '" + name + "' (" + backend_list() + ")");
}

}  // namespace popper::decode
