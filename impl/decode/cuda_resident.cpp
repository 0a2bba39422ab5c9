// The resident decode on CUDA (resident.hpp): the model's weights, norms,
// biases, RoPE table and KV cache in device memory, uploaded once; a token's
// work captured once on one stream into a CUDA graph (the step copied from
// pinned host memory to its device word, 5 L + 2 kernels, the logits copied to
// pinned host memory) and replayed for every token, the host writing the
// token id and position into the pinned step before each launch and
// synchronising once per token. Without a usable device it is unavailable.
#include <map>
#include <utility>

#include "impl/common/device.hpp"
#include "impl/decode/resident.hpp"
#include "popper/error.hpp"

#if POPPER_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "impl/decode/cuda/resident_launch.hpp"
#endif

namespace popper::decode::resident {
namespace {

#if POPPER_HAVE_CUDA
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("cuda decode backend: ") + what + ": " + cudaGetErrorString(e));
}

// Device memory (or pinned host memory) freed with its owner.
struct DeviceBytes {
  void* p = nullptr;
  bool pinned = false;
  DeviceBytes() = default;
  DeviceBytes(std::size_t n, bool host) : pinned(host) {
    check(host ? cudaMallocHost(&p, n == 0 ? 1 : n) : cudaMalloc(&p, n == 0 ? 1 : n),
          host ? "cudaMallocHost" : "cudaMalloc");
  }
  ~DeviceBytes() {
    if (p) pinned ? cudaFreeHost(p) : cudaFree(p);
  }
  DeviceBytes(DeviceBytes&& o) noexcept : p(o.p), pinned(o.pinned) { o.p = nullptr; }
  DeviceBytes& operator=(DeviceBytes&& o) noexcept {  // the old memory leaves with o
    std::swap(p, o.p);
    std::swap(pinned, o.pinned);
    return *this;
  }
  DeviceBytes(const DeviceBytes&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

class CudaResident final : public Backend {
 public:
  explicit CudaResident(const Model& m) : m_(m) {
    name_ = "cuda";
    const auto& st = device::cuda_status();
    if (!st.usable()) {
      reason_ = "requires cuda: " + st.reason;
      return;
    }
    layout_ = layout_of(m.config);
    const auto floats = [](std::uint64_t n) { return static_cast<std::size_t>(n) * sizeof(float); };
    act_ = DeviceBytes(floats(layout_.act_size), false);
    step_ = DeviceBytes(sizeof(Step), false);
    step_host_ = DeviceBytes(sizeof(Step), true);
    vectors_ = DeviceBytes(floats(layout_.vectors_size), false);
    kv_ = DeviceBytes(floats(layout_.kv_size), false);
    rope_ = DeviceBytes(floats(layout_.rope_size), false);
    logits_host_ = DeviceBytes(floats(static_cast<std::uint64_t>(m.config.vocab)), true);
    const auto vectors = vectors_of(m);
    check(cudaMemcpy(vectors_.p, vectors.data(), floats(vectors.size()), cudaMemcpyHostToDevice),
          "upload norms and biases");
    const auto rope = rope_of(m.config);
    check(cudaMemcpy(rope_.p, rope.data(), floats(rope.size()), cudaMemcpyHostToDevice), "upload the RoPE table");
    check(cudaMemset(kv_.p, 0, floats(layout_.kv_size)), "cudaMemset KV");
    check(cudaMemset(act_.p, 0, floats(layout_.act_size)), "cudaMemset activations");
    capture(token_plan(m, layout_));
    evidence_ = st.backend_tag();
  }
  ~CudaResident() override { release(); }

  std::vector<float> logits(std::span<const std::int32_t> tokens) override {
    if (!available()) throw Unsupported("cuda backend: " + reason_);
    decode_tokens(
        m_.config, tokens, [&](Step s) { *step_host_.as<Step>() = s; },
        [&] {
          check(cudaGraphLaunch(exec_, stream_), "cudaGraphLaunch");
          check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
        });
    const float* y = logits_host_.as<float>();
    return std::vector<float>(y, y + m_.config.vocab);
  }

 private:
  const unsigned char* weights(const Weight* w) {
    auto& slot = weights_[w->blocks.data()];
    if (!slot.p) {
      slot = DeviceBytes(w->blocks.size_bytes(), false);
      check(cudaMemcpy(slot.p, w->blocks.data(), w->blocks.size_bytes(), cudaMemcpyHostToDevice), "upload weights");
    }
    return slot.as<const unsigned char>();
  }

  void capture(const std::vector<Launch>& plan) {
    std::vector<cuda::detail::Buffers> bufs;
    for (const Launch& l : plan) {  // every upload before the capture starts
      cuda::detail::Buffers b{act_.as<float>(), step_.as<const std::uint32_t>(), vectors_.as<const float>(),
                              kv_.as<float>(),  rope_.as<const float>(),         {nullptr, nullptr, nullptr}};
      for (std::size_t i = 0; i < l.weights.size(); ++i) b.w[i] = weights(l.weights[i]);
      bufs.push_back(b);
    }
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    cudaError_t failed = cudaMemcpyAsync(step_.p, step_host_.p, sizeof(Step), cudaMemcpyHostToDevice, stream_);
    for (std::size_t i = 0; i < plan.size() && failed == cudaSuccess; ++i)
      failed = static_cast<cudaError_t>(
          cuda::detail::launch_resident(plan[i].kernel, bufs[i], plan[i].args, plan[i].items, stream_));
    if (failed == cudaSuccess)
      failed =
          cudaMemcpyAsync(logits_host_.p, act_.as<float>() + layout_.logits,
                          static_cast<std::size_t>(m_.config.vocab) * sizeof(float), cudaMemcpyDeviceToHost, stream_);
    const cudaError_t ended = cudaStreamEndCapture(stream_, &graph_);
    if (failed == cudaSuccess) failed = ended;
    if (failed == cudaSuccess) failed = cudaGraphInstantiate(&exec_, graph_, 0);
    if (failed != cudaSuccess) {
      release();  // the constructor throws: no destructor will
      check(failed, "capturing a token's launches into a graph");
    }
  }

  void release() {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
    if (stream_) cudaStreamDestroy(stream_);
    exec_ = nullptr, graph_ = nullptr, stream_ = nullptr;
  }

  const Model& m_;
  Layout layout_;
  DeviceBytes act_, step_, step_host_, vectors_, kv_, rope_, logits_host_;
  std::map<const q4k::Block*, DeviceBytes> weights_;
  cudaStream_t stream_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};
#endif

}  // namespace

std::unique_ptr<Backend> make_cuda(const Model& m) {
#if POPPER_HAVE_CUDA
  return std::make_unique<CudaResident>(m);
#else
  // Without CUDA compiled in: a backend that only says why it cannot run.
  class Unavailable final : public Backend {
   public:
    Unavailable() {
      name_ = "cuda";
      reason_ = "requires cuda: " + device::cuda_status().reason;
    }
    std::vector<float> logits(std::span<const std::int32_t>) override { throw Unsupported("cuda backend: " + reason_); }
  };
  (void)m;
  return std::make_unique<Unavailable>();
#endif
}

}  // namespace popper::decode::resident
