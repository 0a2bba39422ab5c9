// The small Vulkan compute runtime every family's Vulkan entry uses: one
// process-wide instance, device and compute queue; buffers; a compute
// pipeline from embedded SPIR-V; a synchronous dispatch with its device time.
//
// The loader (libvulkan.so.1) is opened at run time, never linked, so the
// decline contract holds everywhere:
//   status().usable() == false  (not compiled with Vulkan, no loader, no
//   instance, no device with a compute queue)  =>  the family's entry serves
//   the call on the CPU and reports the decline with status().reason.
// A shader the device cannot build (Kernel's constructor throws
// popper::Unsupported) is a decline too.
//
// Device choice: POPPER_VULKAN_DEVICE=<index> picks one explicitly;
// otherwise discrete > integrated > virtual > CPU (lavapipe/llvmpipe is a
// conformant CPU-type device and is accepted, unlike in ggml, which skips CPU
// devices unless GGML_VK_VISIBLE_DEVICES names them).
//
// Calls are serialized by one mutex (one queue); dispatch and
// Sequence::submit wait for completion, so a Buffer may be read right after.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace popper::vulkan {

enum class DeviceType { Other = 0, IntegratedGpu = 1, DiscreteGpu = 2, VirtualGpu = 3, Cpu = 4 };

struct DeviceInfo {
  std::string name;  // VkPhysicalDeviceProperties::deviceName
  DeviceType type = DeviceType::Other;
  std::uint32_t api_version = 0;
  std::uint32_t subgroup_size = 0;  // 0 when unknown
  std::uint32_t max_workgroup_invocations = 0;
  std::uint32_t max_storage_buffers = 0;       // per shader stage
  std::uint64_t max_storage_buffer_range = 0;  // bytes one storage binding may span
  std::uint32_t max_push_constant_bytes = 0;
  bool timestamps = false;  // the compute queue can time dispatches
};

struct Status {
  bool compiled = false;  // popper was built with the Vulkan headers and glslc
  bool usable_ = false;
  std::string reason;  // why not usable; empty when usable
  DeviceInfo device;
  bool usable() const { return compiled && usable_; }
};

// Probed once per process (thread-safe), then cached.
const Status& status();

// POPPER_CPU_MODEL when the CPU is emulated (the CPU-matrix legs set it) and
// POPPER_VULKAN_DEVICE forces no device, else nullptr. A CPU Vulkan device
// (lavapipe) JIT-compiles shaders for the CPU it detects, and under qemu-user
// that code can fault (SIGILL on -cpu Nehalem); those legs exist for
// the CPU paths, so there every Vulkan runtime (popper's, ggml-vulkan)
// declines a CPU device.
const char* emulated_cpu_model();

// "vulkan:<device name up to the first ' ('>", spaces as '_' (e.g. "vulkan:llvmpipe").
// Throws popper::Unsupported when no device is usable.
std::string backend_tag();

// A storage buffer. Memory::Device: device-local, host-visible too when the
// device offers it and has room (integrated GPUs, lavapipe, the BAR window),
// otherwise with a staging copy inside upload/download. Memory::Host:
// host-visible memory (host-cached when offered) the device reaches over the
// bus: a staging buffer a Sequence copies from or to.
enum class Memory { Device, Host };

class Buffer {
 public:
  explicit Buffer(std::size_t bytes, Memory memory = Memory::Device);
  ~Buffer();
  Buffer(Buffer&&) noexcept;
  Buffer& operator=(Buffer&&) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  std::size_t size() const;
  // Copies bytes into / out of the buffer at offset; throws InvalidArgument
  // when [offset, offset + bytes) is not inside the buffer.
  void upload(const void* src, std::size_t bytes, std::size_t offset = 0);
  void download(void* dst, std::size_t bytes, std::size_t offset = 0) const;

  struct Impl;
  Impl* impl() const { return impl_.get(); }

 private:
  std::unique_ptr<Impl> impl_;
};

// A compute pipeline: SPIR-V words, `storage_buffers` bindings 0..n-1 in set 0,
// `push_constant_bytes` of push constants, entry point "main".
class Kernel {
 public:
  Kernel(std::span<const std::uint32_t> spirv, std::uint32_t storage_buffers, std::uint32_t push_constant_bytes);
  ~Kernel();
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  struct Impl;
  Impl* impl() const { return impl_.get(); }

 private:
  std::unique_ptr<Impl> impl_;
};

struct DispatchTime {
  double seconds = 0;  // device time between timestamps, else host wall time of submit+wait
  bool device_timed = false;
};

// Binds `buffers` to bindings 0..n-1, pushes `push` (the kernel's size), and
// dispatches groups_x * groups_y * groups_z workgroups; waits for completion.
DispatchTime dispatch(const Kernel& kernel, std::span<Buffer* const> buffers, const void* push, std::size_t push_bytes,
                      std::uint32_t groups_x, std::uint32_t groups_y = 1, std::uint32_t groups_z = 1);

// Commands recorded once into one command buffer and submitted any number of
// times: dispatches, each with bindings and push constants of its own, and
// buffer copies, each starting after the previous one's writes (a memory
// barrier between every two commands). What changes between submissions
// must live in buffers (the host writes a Memory::Host buffer that the first
// command copies), since the recorded push constants never change. The
// buffers and kernels must outlive the Sequence.
class Sequence {
 public:
  Sequence();
  ~Sequence();
  Sequence(const Sequence&) = delete;
  Sequence& operator=(const Sequence&) = delete;

  // Appends commands; throws InvalidArgument as dispatch does, or for a copy
  // outside either buffer, and Error once submitted.
  void dispatch(const Kernel& kernel, std::span<Buffer* const> buffers, const void* push, std::size_t push_bytes,
                std::uint32_t groups_x, std::uint32_t groups_y = 1, std::uint32_t groups_z = 1);
  void copy(const Buffer& from, std::size_t from_offset, Buffer& to, std::size_t to_offset, std::size_t bytes);
  std::size_t commands() const;
  // Ends the recording (first call), runs the commands and waits for them.
  DispatchTime submit();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace popper::vulkan
