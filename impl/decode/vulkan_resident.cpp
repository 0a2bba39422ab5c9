// The resident decode on Vulkan (resident.hpp): the model's weights, norms,
// biases, RoPE table and KV cache in device buffers, uploaded once; a
// token's launches recorded once into one command buffer (a
// vulkan::Sequence: the step copied from a host buffer, 5 L + 2 dispatches,
// the logits copied to a host buffer) and resubmitted for every token, the
// host writing the token id and position into the step buffer before each
// submission and waiting once per token.
#include <algorithm>
#include <array>
#include <map>

#include "impl/common/vulkan_runtime.hpp"
#include "impl/decode/resident.hpp"
#include "popper/error.hpp"

namespace popper::decode::resident {
namespace {

#if POPPER_HAVE_VULKAN
const std::uint32_t kEmbed[] =
#include "decode/embed.spv.inc"
    ;
const std::uint32_t kQkv[] =
#include "decode/qkv.spv.inc"
    ;
const std::uint32_t kAttention[] =
#include "decode/attention.spv.inc"
    ;
const std::uint32_t kGemvAcc[] =
#include "decode/gemv_acc.spv.inc"
    ;
const std::uint32_t kFfn[] =
#include "decode/ffn.spv.inc"
    ;
const std::uint32_t kHead[] =
#include "decode/head.spv.inc"
    ;
#endif

constexpr std::uint32_t kBindings = 8;  // act, step, vectors, kv, rope, W0, W1, W2
constexpr std::uint32_t kMaxGroupsX = 65535;
constexpr std::uint32_t kItemsPerGroup = 4;  // work items of 32 lanes per workgroup: resident_common.glsl's kItems

// The six pipelines, built once per process; a device that cannot build one
// leaves the reason and the backend is unavailable.
struct Pipelines {
  std::array<std::unique_ptr<vulkan::Kernel>, kKernels> kernel;
  std::string decline;
};

const Pipelines& pipelines() {
  static const Pipelines p = [] {
    Pipelines out;
#if POPPER_HAVE_VULKAN
    const std::array<std::span<const std::uint32_t>, kKernels> spirv{kEmbed, kQkv, kAttention, kGemvAcc, kFfn, kHead};
    try {
      for (int k = 0; k < kKernels; ++k)
        out.kernel[static_cast<std::size_t>(k)] =
            std::make_unique<vulkan::Kernel>(spirv[static_cast<std::size_t>(k)], kBindings, sizeof(Args));
    } catch (const Unsupported& e) {
      out.decline = e.what();
    }
#endif
    return out;
  }();
  return p;
}

class VulkanResident final : public Backend {
 public:
  explicit VulkanResident(const Model& m) : m_(m) {
    name_ = "vulkan";
    const auto& st = vulkan::status();
    if (!st.usable()) {
      reason_ = "requires vulkan: " + st.reason;
      return;
    }
    layout_ = layout_of(m.config);
    if (!(reason_ = fits_device(st.device)).empty()) return;
    if (const Pipelines& p = pipelines(); !p.decline.empty()) {
      reason_ = "vulkan declined: " + p.decline;
      return;
    }
    const auto floats = [](std::size_t n) { return std::max<std::size_t>(n * sizeof(float), 4); };
    act_ = std::make_unique<vulkan::Buffer>(floats(layout_.act_size));
    step_ = std::make_unique<vulkan::Buffer>(sizeof(Step));
    step_host_ = std::make_unique<vulkan::Buffer>(sizeof(Step), vulkan::Memory::Host);
    vectors_ = std::make_unique<vulkan::Buffer>(floats(layout_.vectors_size));
    kv_ = std::make_unique<vulkan::Buffer>(floats(layout_.kv_size));
    rope_ = std::make_unique<vulkan::Buffer>(floats(layout_.rope_size));
    logits_host_ =
        std::make_unique<vulkan::Buffer>(floats(static_cast<std::size_t>(m.config.vocab)), vulkan::Memory::Host);
    unused_ = std::make_unique<vulkan::Buffer>(4);
    const auto vectors = vectors_of(m);
    vectors_->upload(vectors.data(), vectors.size() * sizeof(float));
    const auto rope = rope_of(m.config);
    rope_->upload(rope.data(), rope.size() * sizeof(float));
    // Zeros, so that no launch can read what another process left in the memory.
    const std::vector<float> zeros(std::max<std::size_t>(layout_.act_size, 1 << 20));
    for (std::size_t at = 0; at < layout_.kv_size; at += zeros.size())
      kv_->upload(zeros.data(), std::min(zeros.size(), static_cast<std::size_t>(layout_.kv_size) - at) * sizeof(float),
                  at * sizeof(float));
    act_->upload(zeros.data(), layout_.act_size * sizeof(float));
    record(token_plan(m, layout_));
    evidence_ = vulkan::backend_tag();
  }

  std::vector<float> logits(std::span<const std::int32_t> tokens) override {
    if (!available()) throw Unsupported("vulkan backend: " + reason_);
    decode_tokens(
        m_.config, tokens, [&](Step s) { step_host_->upload(&s, sizeof s); }, [&] { sequence_->submit(); });
    std::vector<float> out(static_cast<std::size_t>(m_.config.vocab));
    logits_host_->download(out.data(), out.size() * sizeof(float));
    return out;
  }

 private:
  // Empty when every buffer and launch fits the device's limits, else why not.
  std::string fits_device(const vulkan::DeviceInfo& d) const {
    std::uint64_t largest = std::max<std::uint64_t>(layout_.kv_size, layout_.act_size) * sizeof(float);
    for (const Weight* w : {&m_.token_embd, &m_.output})
      largest = std::max<std::uint64_t>(largest, w->blocks.size_bytes());
    for (const auto& y : m_.layers)
      for (const Weight* w : {&y.gate, &y.up, &y.down})
        largest = std::max<std::uint64_t>(largest, w->blocks.size_bytes());
    if (d.max_storage_buffers < kBindings)
      return "vulkan declined: the device binds " + std::to_string(d.max_storage_buffers) +
             " storage buffers per stage, the decode needs 8";
    if (d.max_push_constant_bytes < sizeof(Args)) return "vulkan declined: push constants of under 72 bytes";
    if (d.max_storage_buffer_range < largest)
      return "vulkan declined: a buffer of " + std::to_string(largest) +
             " bytes exceeds the device's storage range of " + std::to_string(d.max_storage_buffer_range);
    return "";
  }

  vulkan::Buffer& weights(const Weight* w) {
    auto& slot = weights_[w->blocks.data()];
    if (!slot) {
      slot = std::make_unique<vulkan::Buffer>(w->blocks.size_bytes());
      slot->upload(w->blocks.data(), w->blocks.size_bytes());
    }
    return *slot;
  }

  void record(const std::vector<Launch>& plan) {
    sequence_ = std::make_unique<vulkan::Sequence>();
    sequence_->copy(*step_host_, 0, *step_, 0, sizeof(Step));
    for (const Launch& l : plan) {
      std::array<vulkan::Buffer*, kBindings> b{act_.get(),  step_.get(),   vectors_.get(), kv_.get(),
                                               rope_.get(), unused_.get(), unused_.get(),  unused_.get()};
      for (std::size_t i = 0; i < l.weights.size(); ++i) b[5 + i] = &weights(l.weights[i]);
      const std::uint32_t groups = (l.items + kItemsPerGroup - 1) / kItemsPerGroup;
      const std::uint32_t gx = std::min(groups, kMaxGroupsX), gy = (groups + gx - 1) / gx;
      sequence_->dispatch(*pipelines().kernel[static_cast<std::size_t>(l.kernel)], b, &l.args, sizeof(Args), gx, gy);
    }
    sequence_->copy(*act_, std::size_t{layout_.logits} * sizeof(float), *logits_host_, 0,
                    static_cast<std::size_t>(m_.config.vocab) * sizeof(float));
  }

  const Model& m_;
  Layout layout_;
  std::unique_ptr<vulkan::Buffer> act_, step_, step_host_, vectors_, kv_, rope_, logits_host_, unused_;
  std::map<const q4k::Block*, std::unique_ptr<vulkan::Buffer>> weights_;
  std::unique_ptr<vulkan::Sequence> sequence_;  // declared last: destroyed before the buffers it names
};

}  // namespace

std::unique_ptr<Backend> make_vulkan(const Model& m) { return std::make_unique<VulkanResident>(m); }

}  // namespace popper::decode::resident
