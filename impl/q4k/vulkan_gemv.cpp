// Vulkan tier of the Q4_K GEMV: the host side of vulkan/gemv_q4k.comp
// (order and formula in device_q4k.hpp), with the decline to the hand CPU kernel.
#include <algorithm>
#include <array>
#include <mutex>

#include "impl/common/vulkan_runtime.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"
#include "impl/q4k/device_q4k.hpp"

namespace popper::q4k {
namespace {

#if POPPER_HAVE_VULKAN
const std::uint32_t kGemvSpirv[] =
#include "q4k/gemv_q4k.spv.inc"
    ;
#endif

constexpr std::uint32_t kMaxGroupsX = 65535;

// The pipeline is built once per process; a device that cannot build it
// leaves the reason here and every call declines.
struct Pipeline {
  std::unique_ptr<vulkan::Kernel> kernel;
  std::string decline;
};

const Pipeline& pipeline() {
  static const Pipeline p = [] {
    Pipeline out;
    const auto& st = vulkan::status();
    if (!st.usable()) {
      out.decline = st.reason;
      return out;
    }
#if POPPER_HAVE_VULKAN
    try {
      out.kernel = std::make_unique<vulkan::Kernel>(std::span<const std::uint32_t>(kGemvSpirv), 3, 8);
    } catch (const Unsupported& e) {
      out.decline = e.what();
    }
#endif
    return out;
  }();
  return p;
}

device::Execution declined(std::span<const Block> w, std::int64_t rows, std::int64_t cols, std::span<const float> x,
                           std::span<float> y, const cpu::CpuOptions& fallback, const std::string& reason) {
  cpu::gemv(w, rows, cols, x, y, fallback);
  return {cpu::backend_tag(fallback.isa), "vulkan", reason};
}

}  // namespace

struct VulkanMatrix::State {
  vulkan::Buffer weights;
  std::unique_ptr<vulkan::Buffer> x, y;
};

VulkanMatrix::VulkanMatrix(std::span<const Block> w, std::int64_t rows, std::int64_t cols)
    : w_(w), rows_(rows), cols_(cols) {
  check_matrix(rows, cols, w.size());
  const Pipeline& p = pipeline();
  if (!p.kernel) {
    decline_ = p.decline;
    return;
  }
  if (rows > static_cast<std::int64_t>(kMaxGroupsX) * kMaxGroupsX || cols > (std::int64_t{1} << 31)) {
    decline_ = "shape " + std::to_string(rows) + " x " + std::to_string(cols) + " exceeds the kernel's grid";
    return;
  }
  const std::size_t bytes = matrix_bytes(rows, cols);
  state_ = std::make_unique<State>(State{vulkan::Buffer(bytes), nullptr, nullptr});
  state_->weights.upload(w.data(), bytes);
}

VulkanMatrix::~VulkanMatrix() = default;

device::Execution VulkanMatrix::gemv(std::span<const float> x, std::span<float> y, const cpu::CpuOptions& fallback,
                                     double* device_seconds) {
  check_gemv_args(rows_, cols_, w_.size(), x.size(), y.size());
  if (device_seconds) *device_seconds = 0;
  if (!state_) return declined(w_, rows_, cols_, x, y, fallback, decline_);
  if (rows_ == 0) return {vulkan::backend_tag(), "", ""};
  const std::size_t xb = static_cast<std::size_t>(cols_) * sizeof(float);
  const std::size_t yb = static_cast<std::size_t>(rows_) * sizeof(float);
  // Mutation point (q4k-vulkan-stale-x): reuse an existing x buffer without uploading.
  const bool fresh = !state_->x || state_->x->size() != std::max<std::size_t>(xb, 4);
  if (fresh) state_->x = std::make_unique<vulkan::Buffer>(std::max<std::size_t>(xb, 4));
  if (!state_->y || state_->y->size() != yb) state_->y = std::make_unique<vulkan::Buffer>(yb);
  if (fresh || !POPPER_MUTANT("q4k-vulkan-stale-x")) state_->x->upload(x.data(), xb);
  const std::uint32_t push[2] = {static_cast<std::uint32_t>(rows_), static_cast<std::uint32_t>(cols_)};
  const auto r = static_cast<std::uint32_t>(rows_);
  const std::uint32_t gx = std::min(r, kMaxGroupsX), gy = (r + gx - 1) / gx;
  std::array<vulkan::Buffer*, 3> bufs{&state_->weights, state_->x.get(), state_->y.get()};
  const auto t = vulkan::dispatch(*pipeline().kernel, bufs, push, sizeof push, gx, gy);
  state_->y->download(y.data(), yb);
  if (device_seconds) *device_seconds = t.seconds;
  return {vulkan::backend_tag(), "", ""};
}

device::Execution gemv_vulkan(std::span<const Block> w, std::int64_t rows, std::int64_t cols, std::span<const float> x,
                              std::span<float> y, const cpu::CpuOptions& fallback) {
  check_gemv_args(rows, cols, w.size(), x.size(), y.size());
  VulkanMatrix m(w, rows, cols);
  return m.gemv(x, y, fallback);
}

}  // namespace popper::q4k
