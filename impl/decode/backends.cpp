// The parity gate's backends (forward.hpp): cpu (reference order),
// cpu-simd (hand kernels), vulkan and cuda (resident.hpp: the whole token on
// the device), and llama.cpp on ggml-cpu, ggml-vulkan and ggml-cuda.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>

#include "impl/decode/forward.hpp"
#include "impl/decode/lib_llama.hpp"
#include "impl/decode/resident.hpp"
#include "impl/fused/fused.hpp"
#include "popper/error.hpp"
#include "impl/q4k/cpu_q4k.hpp"

namespace popper::decode {

namespace {

// A backend that runs popper's forward over its own Ops.
class ForwardBackend : public Backend {
 public:
  explicit ForwardBackend(const Model& m) : m_(m) {}
  std::vector<float> logits(std::span<const std::int32_t> tokens) override {
    return forward<float>(m_, tokens, *ops());
  }

 private:
  const Model& m_;
};

class CpuBackend final : public ForwardBackend {
 public:
  CpuBackend(const Model& m, int threads)
      : ForwardBackend(m), ops_(ordered_ops(m.config, accum::Order::Sequential, threads)) {
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
      : ForwardBackend(m),
        c_(m.config),
        threads_(threads),
        table_(fused::make_rope_table(c_.context, c_.head_dim, c_.rope_base)),
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
    s.batch = 1, s.q_len = 1, s.kv_len = len, s.q_heads = c_.q_heads, s.kv_heads = c_.kv_heads,
    s.head_dim = c_.head_dim;
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
  if (name == "vulkan") return resident::make_vulkan(m);
  if (name == "cuda") return resident::make_cuda(m);
  for (auto d : {llama::Device::Cpu, llama::Device::Vulkan, llama::Device::Cuda})
    if (name == llama::to_string(d)) return std::make_unique<LlamaBackend>(m, d, threads);
  throw InvalidArgument("unknown backend '" + name + "' (" + backend_list() + ")");
}

}  // namespace popper::decode
