// Vulkan compute runtime (vulkan_runtime.hpp). The loader is opened with
// dlopen and every entry point is fetched through vkGetInstanceProcAddr /
// vkGetDeviceProcAddr (VK_NO_PROTOTYPES), so nothing links libvulkan.
#include "impl/common/vulkan_runtime.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "popper/error.hpp"

#if POPPER_HAVE_VULKAN
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>
#endif

namespace popper::vulkan {

const char* emulated_cpu_model() {
  const char* model = std::getenv("POPPER_CPU_MODEL");
  return model && *model && !std::getenv("POPPER_VULKAN_DEVICE") ? model : nullptr;
}

#if !POPPER_HAVE_VULKAN

const Status& status() {
  static const Status s{
      false, false, "no Vulkan device: popper was built without Vulkan (POPPER_VULKAN=OFF or no headers/glslc)", {}};
  return s;
}
std::string backend_tag() { throw Unsupported(status().reason); }
struct Buffer::Impl {};
Buffer::Buffer(std::size_t, Memory) { throw Unsupported(status().reason); }
Buffer::~Buffer() = default;
Buffer::Buffer(Buffer&&) noexcept = default;
Buffer& Buffer::operator=(Buffer&&) noexcept = default;
std::size_t Buffer::size() const { return 0; }
void Buffer::upload(const void*, std::size_t, std::size_t) { throw Unsupported(status().reason); }
void Buffer::download(void*, std::size_t, std::size_t) const { throw Unsupported(status().reason); }
struct Kernel::Impl {};
Kernel::Kernel(std::span<const std::uint32_t>, std::uint32_t, std::uint32_t) { throw Unsupported(status().reason); }
Kernel::~Kernel() = default;
DispatchTime dispatch(const Kernel&, std::span<Buffer* const>, const void*, std::size_t, std::uint32_t, std::uint32_t,
                      std::uint32_t) {
  throw Unsupported(status().reason);
}
struct Sequence::Impl {};
Sequence::Sequence() { throw Unsupported(status().reason); }
Sequence::~Sequence() = default;
void Sequence::dispatch(const Kernel&, std::span<Buffer* const>, const void*, std::size_t, std::uint32_t, std::uint32_t,
                        std::uint32_t) {}
void Sequence::copy(const Buffer&, std::size_t, Buffer&, std::size_t, std::size_t) {}
std::size_t Sequence::commands() const { return 0; }
DispatchTime Sequence::submit() { throw Unsupported(status().reason); }

#else

namespace {

#define POPPER_VK_INSTANCE_FNS(X)             \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

#define POPPER_VK_DEVICE_FNS(X)    \
  X(vkDestroyDevice)               \
  X(vkGetDeviceQueue)              \
  X(vkCreateBuffer)                \
  X(vkDestroyBuffer)               \
  X(vkGetBufferMemoryRequirements) \
  X(vkAllocateMemory)              \
  X(vkFreeMemory)                  \
  X(vkBindBufferMemory)            \
  X(vkMapMemory)                   \
  X(vkUnmapMemory)                 \
  X(vkCreateShaderModule)          \
  X(vkDestroyShaderModule)         \
  X(vkCreateDescriptorSetLayout)   \
  X(vkDestroyDescriptorSetLayout)  \
  X(vkCreatePipelineLayout)        \
  X(vkDestroyPipelineLayout)       \
  X(vkCreateComputePipelines)      \
  X(vkDestroyPipeline)             \
  X(vkCreateDescriptorPool)        \
  X(vkDestroyDescriptorPool)       \
  X(vkAllocateDescriptorSets)      \
  X(vkUpdateDescriptorSets)        \
  X(vkCreateCommandPool)           \
  X(vkDestroyCommandPool)          \
  X(vkAllocateCommandBuffers)      \
  X(vkResetCommandBuffer)          \
  X(vkBeginCommandBuffer)          \
  X(vkEndCommandBuffer)            \
  X(vkCmdBindPipeline)             \
  X(vkCmdBindDescriptorSets)       \
  X(vkCmdPushConstants)            \
  X(vkCmdDispatch)                 \
  X(vkCmdCopyBuffer)               \
  X(vkCmdPipelineBarrier)          \
  X(vkCmdResetQueryPool)           \
  X(vkCmdWriteTimestamp)           \
  X(vkCreateQueryPool)             \
  X(vkDestroyQueryPool)            \
  X(vkGetQueryPoolResults)         \
  X(vkQueueSubmit)                 \
  X(vkCreateFence)                 \
  X(vkDestroyFence)                \
  X(vkResetFences)                 \
  X(vkWaitForFences)

struct Api {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  PFN_vkCreateInstance vkCreateInstance = nullptr;
#define POPPER_VK_DECLARE(name) PFN_##name name = nullptr;
  POPPER_VK_INSTANCE_FNS(POPPER_VK_DECLARE)
  POPPER_VK_DEVICE_FNS(POPPER_VK_DECLARE)
#undef POPPER_VK_DECLARE
};

// A zeroed Vulkan create-info with its structure type set.
template <class T>
T vk_struct(VkStructureType type) {
  T v{};
  v.sType = type;
  return v;
}

std::string vk_error(const char* what, VkResult r) {
  return std::string(what) + " failed with VkResult " + std::to_string(r);
}

// The process-wide context: created on first use, kept until exit (the
// driver's own atexit handlers outlive us on some loaders, so no teardown).
struct Context {
  Status status;
  Api api;
  void* loader = nullptr;
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  std::uint32_t queue_family = 0;
  float timestamp_period_ns = 0;
  VkPhysicalDeviceMemoryProperties memory{};
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkQueryPool timestamps = VK_NULL_HANDLE;
  std::mutex mu;

  void fail(std::string why) {
    status.usable_ = false;
    status.reason = "no Vulkan device: " + std::move(why);
  }

  void probe() {
    status.compiled = true;
    loader = ::dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!loader) return fail("no Vulkan loader (libvulkan.so.1 cannot be loaded)");
    api.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(::dlsym(loader, "vkGetInstanceProcAddr"));
    if (!api.vkGetInstanceProcAddr) return fail("libvulkan.so.1 has no vkGetInstanceProcAddr");
    api.vkCreateInstance =
        reinterpret_cast<PFN_vkCreateInstance>(api.vkGetInstanceProcAddr(VK_NULL_HANDLE, "vkCreateInstance"));
    if (!api.vkCreateInstance) return fail("the loader has no vkCreateInstance");

    auto app = vk_struct<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
    app.pApplicationName = "popper";
    app.pEngineName = "popper";
    app.apiVersion = VK_API_VERSION_1_1;
    auto ici = vk_struct<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
    ici.pApplicationInfo = &app;
    if (VkResult r = api.vkCreateInstance(&ici, nullptr, &instance); r != VK_SUCCESS)
      return fail(vk_error("vkCreateInstance", r));
#define POPPER_VK_LOAD_INSTANCE(name)                                                  \
  api.name = reinterpret_cast<PFN_##name>(api.vkGetInstanceProcAddr(instance, #name)); \
  if (!api.name) return fail("the loader lacks " #name);
    POPPER_VK_INSTANCE_FNS(POPPER_VK_LOAD_INSTANCE)
#undef POPPER_VK_LOAD_INSTANCE

    std::uint32_t n = 0;
    if (api.vkEnumeratePhysicalDevices(instance, &n, nullptr) != VK_SUCCESS || n == 0)
      return fail("the loader reports no physical device");
    std::vector<VkPhysicalDevice> devices(n);
    api.vkEnumeratePhysicalDevices(instance, &n, devices.data());

    // A device qualifies when it has a compute queue and Vulkan >= 1.1.
    auto compute_family = [&](VkPhysicalDevice d) -> int {
      std::uint32_t qn = 0;
      api.vkGetPhysicalDeviceQueueFamilyProperties(d, &qn, nullptr);
      std::vector<VkQueueFamilyProperties> qf(qn);
      api.vkGetPhysicalDeviceQueueFamilyProperties(d, &qn, qf.data());
      for (std::uint32_t i = 0; i < qn; ++i)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return static_cast<int>(i);
      return -1;
    };
    auto rank = [](VkPhysicalDeviceType t) {
      switch (t) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
        default: return 0;
      }
    };
    int chosen = -1;
    if (const char* want = std::getenv("POPPER_VULKAN_DEVICE"); want && *want) {
      char* end = nullptr;
      const long idx = std::strtol(want, &end, 10);
      if (*end != '\0' || idx < 0 || idx >= static_cast<long>(n))
        return fail("POPPER_VULKAN_DEVICE=" + std::string(want) + " names no device (" + std::to_string(n) +
                    " present)");
      chosen = static_cast<int>(idx);
      if (compute_family(devices[static_cast<std::size_t>(idx)]) < 0)
        return fail("POPPER_VULKAN_DEVICE=" + std::string(want) + " has no compute queue");
    } else {
      int best = -1;
      for (std::uint32_t i = 0; i < n; ++i) {
        VkPhysicalDeviceProperties p;
        api.vkGetPhysicalDeviceProperties(devices[i], &p);
        if (p.apiVersion < VK_API_VERSION_1_1 || compute_family(devices[i]) < 0) continue;
        if (rank(p.deviceType) > best) best = rank(p.deviceType), chosen = static_cast<int>(i);
      }
      if (chosen < 0) return fail("no physical device with Vulkan 1.1 and a compute queue");
    }
    physical = devices[static_cast<std::size_t>(chosen)];
    // A CPU device declines under emulation (emulated_cpu_model()).
    if (const char* model = emulated_cpu_model()) {
      VkPhysicalDeviceProperties p;
      api.vkGetPhysicalDeviceProperties(physical, &p);
      if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU)
        return fail(std::string("the chosen device is a CPU device (") + p.deviceName + ") and this CPU is emulated (" +
                    model + "): its shader JIT does not run under qemu-user");
    }
    queue_family = static_cast<std::uint32_t>(compute_family(physical));

    auto sub = vk_struct<VkPhysicalDeviceSubgroupProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
    auto props2 = vk_struct<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
    props2.pNext = &sub;
    api.vkGetPhysicalDeviceProperties2(physical, &props2);
    const VkPhysicalDeviceProperties& p = props2.properties;
    status.device.name = p.deviceName;
    status.device.type = static_cast<DeviceType>(p.deviceType);
    status.device.api_version = p.apiVersion;
    status.device.subgroup_size = sub.subgroupSize;
    status.device.max_workgroup_invocations = p.limits.maxComputeWorkGroupInvocations;
    status.device.max_storage_buffers = p.limits.maxPerStageDescriptorStorageBuffers;
    status.device.max_storage_buffer_range = p.limits.maxStorageBufferRange;
    status.device.max_push_constant_bytes = p.limits.maxPushConstantsSize;
    timestamp_period_ns = p.limits.timestampPeriod;
    {
      std::uint32_t qn = 0;
      api.vkGetPhysicalDeviceQueueFamilyProperties(physical, &qn, nullptr);
      std::vector<VkQueueFamilyProperties> qf(qn);
      api.vkGetPhysicalDeviceQueueFamilyProperties(physical, &qn, qf.data());
      status.device.timestamps = qf[queue_family].timestampValidBits > 0 && p.limits.timestampComputeAndGraphics;
    }
    api.vkGetPhysicalDeviceMemoryProperties(physical, &memory);

    const float priority = 1.0f;
    auto qci = vk_struct<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
    qci.queueFamilyIndex = queue_family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    auto dci = vk_struct<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    if (VkResult r = api.vkCreateDevice(physical, &dci, nullptr, &device); r != VK_SUCCESS)
      return fail(vk_error("vkCreateDevice", r));
#define POPPER_VK_LOAD_DEVICE(name)                                                \
  api.name = reinterpret_cast<PFN_##name>(api.vkGetDeviceProcAddr(device, #name)); \
  if (!api.name) return fail("the driver lacks " #name);
    POPPER_VK_DEVICE_FNS(POPPER_VK_LOAD_DEVICE)
#undef POPPER_VK_LOAD_DEVICE
    api.vkGetDeviceQueue(device, queue_family, 0, &queue);

    auto pci = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = queue_family;
    if (VkResult r = api.vkCreateCommandPool(device, &pci, nullptr, &pool); r != VK_SUCCESS)
      return fail(vk_error("vkCreateCommandPool", r));
    auto cai = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    cai.commandPool = pool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    if (VkResult r = api.vkAllocateCommandBuffers(device, &cai, &cmd); r != VK_SUCCESS)
      return fail(vk_error("vkAllocateCommandBuffers", r));
    auto fci = vk_struct<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
    if (VkResult r = api.vkCreateFence(device, &fci, nullptr, &fence); r != VK_SUCCESS)
      return fail(vk_error("vkCreateFence", r));
    if (status.device.timestamps) {
      auto qpi = vk_struct<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
      qpi.queryType = VK_QUERY_TYPE_TIMESTAMP;
      qpi.queryCount = 2;
      if (api.vkCreateQueryPool(device, &qpi, nullptr, &timestamps) != VK_SUCCESS) status.device.timestamps = false;
    }
    status.usable_ = true;
    status.reason.clear();
  }

  std::uint32_t memory_type(std::uint32_t allowed, VkMemoryPropertyFlags want) const {
    for (std::uint32_t i = 0; i < memory.memoryTypeCount; ++i)
      if ((allowed & (1u << i)) && (memory.memoryTypes[i].propertyFlags & want) == want) return i;
    return UINT32_MAX;
  }

  // Records commands with `record`, submits them and waits. Caller holds mu.
  template <class F>
  void submit_and_wait(F&& record) {
    check(api.vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer");
    auto bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(api.vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
    record(cmd);
    check(api.vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    auto si = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    check(api.vkResetFences(device, 1, &fence), "vkResetFences");
    check(api.vkQueueSubmit(queue, 1, &si, fence), "vkQueueSubmit");
    check(api.vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  }

  static void check(VkResult r, const char* what) {
    if (r != VK_SUCCESS) throw Error("Vulkan: " + vk_error(what, r));
  }
};

Context& context() {
  static Context* ctx = [] {
    auto* c = new Context();  // intentionally never destroyed (see Context)
    c->probe();
    return c;
  }();
  return *ctx;
}

Context& usable_context() {
  Context& c = context();
  if (!c.status.usable()) throw Unsupported(c.status.reason);
  return c;
}

}  // namespace

const Status& status() { return context().status; }

std::string backend_tag() {
  const Status& s = usable_context().status;
  std::string name = s.device.name.substr(0, s.device.name.find(" ("));
  for (char& ch : name)
    if (ch == ' ') ch = '_';
  return "vulkan:" + name;
}

// ---------------------------------------------------------------- buffers

struct Buffer::Impl {
  std::size_t bytes = 0;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;  // persistent mapping when host-visible

  static void create(Context& c, std::size_t bytes, VkBufferUsageFlags usage, VkMemoryPropertyFlags want,
                     VkMemoryPropertyFlags fallback, VkBuffer& buf, VkDeviceMemory& mem, bool& host_visible) {
    auto bci = vk_struct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
    bci.size = bytes == 0 ? 4 : bytes;
    bci.usage = usage;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    Context::check(c.api.vkCreateBuffer(c.device, &bci, nullptr, &buf), "vkCreateBuffer");
    VkMemoryRequirements req;
    c.api.vkGetBufferMemoryRequirements(c.device, buf, &req);
    std::uint32_t type = c.memory_type(req.memoryTypeBits, want);
    if (type == UINT32_MAX) type = c.memory_type(req.memoryTypeBits, fallback);
    if (type == UINT32_MAX) {
      c.api.vkDestroyBuffer(c.device, buf, nullptr);
      throw Unsupported("Vulkan: no memory type for a storage buffer");
    }
    auto mai = vk_struct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = type;
    VkResult r = c.api.vkAllocateMemory(c.device, &mai, nullptr, &mem);
    // The preferred heap may be small (a 256 MiB BAR window): the fallback type then.
    if (const std::uint32_t other = c.memory_type(req.memoryTypeBits, fallback);
        r == VK_ERROR_OUT_OF_DEVICE_MEMORY && other != UINT32_MAX && other != type) {
      type = mai.memoryTypeIndex = other;
      r = c.api.vkAllocateMemory(c.device, &mai, nullptr, &mem);
    }
    if (r != VK_SUCCESS) {
      c.api.vkDestroyBuffer(c.device, buf, nullptr);
      throw Error("Vulkan: " + vk_error("vkAllocateMemory", r) + " for " + std::to_string(bytes) + " bytes");
    }
    host_visible = (c.memory.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
                   (c.memory.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    Context::check(c.api.vkBindBufferMemory(c.device, buf, mem, 0), "vkBindBufferMemory");
  }

  // Copies through a host-visible staging buffer (device-local memory only).
  void staged_copy(Context& c, void* host, std::size_t n, std::size_t offset, bool to_device) const {
    VkBuffer sb;
    VkDeviceMemory sm;
    bool hv = false;
    create(c, n, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
           VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
           VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, sb, sm, hv);
    void* p = nullptr;
    Context::check(c.api.vkMapMemory(c.device, sm, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory");
    if (to_device) std::memcpy(p, host, n);
    c.submit_and_wait([&](VkCommandBuffer cb) {
      VkBufferCopy region{to_device ? 0 : offset, to_device ? offset : 0, n};
      c.api.vkCmdCopyBuffer(cb, to_device ? sb : buffer, to_device ? buffer : sb, 1, &region);
    });
    if (!to_device) std::memcpy(host, p, n);
    c.api.vkUnmapMemory(c.device, sm);
    c.api.vkDestroyBuffer(c.device, sb, nullptr);
    c.api.vkFreeMemory(c.device, sm, nullptr);
  }
};

Buffer::Buffer(std::size_t bytes, Memory memory) : impl_(std::make_unique<Impl>()) {
  Context& c = usable_context();
  std::lock_guard lock(c.mu);
  impl_->bytes = bytes;
  bool host_visible = false;
  constexpr VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  const bool on_device = memory == Memory::Device;
  Impl::create(c, bytes,
               VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
               on_device ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | host : host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
               on_device ? VkMemoryPropertyFlags{VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT} : host, impl_->buffer,
               impl_->memory, host_visible);
  if (host_visible)
    Context::check(c.api.vkMapMemory(c.device, impl_->memory, 0, VK_WHOLE_SIZE, 0, &impl_->mapped), "vkMapMemory");
}

Buffer::~Buffer() {
  if (!impl_) return;
  Context& c = context();
  std::lock_guard lock(c.mu);
  if (impl_->mapped) c.api.vkUnmapMemory(c.device, impl_->memory);
  c.api.vkDestroyBuffer(c.device, impl_->buffer, nullptr);
  c.api.vkFreeMemory(c.device, impl_->memory, nullptr);
}

Buffer::Buffer(Buffer&&) noexcept = default;
Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    Buffer dead(std::move(*this));
    impl_ = std::move(o.impl_);
  }
  return *this;
}

std::size_t Buffer::size() const { return impl_ ? impl_->bytes : 0; }

void Buffer::upload(const void* src, std::size_t bytes, std::size_t offset) {
  if (offset > size() || bytes > size() - offset)
    throw InvalidArgument("vulkan::Buffer::upload: [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                          ") outside a buffer of " + std::to_string(size()) + " bytes");
  if (bytes == 0) return;
  Context& c = context();
  std::lock_guard lock(c.mu);
  if (impl_->mapped) std::memcpy(static_cast<char*>(impl_->mapped) + offset, src, bytes);
  else impl_->staged_copy(c, const_cast<void*>(src), bytes, offset, true);
}

void Buffer::download(void* dst, std::size_t bytes, std::size_t offset) const {
  if (offset > size() || bytes > size() - offset)
    throw InvalidArgument("vulkan::Buffer::download: [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                          ") outside a buffer of " + std::to_string(size()) + " bytes");
  if (bytes == 0) return;
  Context& c = context();
  std::lock_guard lock(c.mu);
  if (impl_->mapped) std::memcpy(dst, static_cast<const char*>(impl_->mapped) + offset, bytes);
  else impl_->staged_copy(c, dst, bytes, offset, false);
}

// ---------------------------------------------------------------- kernels

struct Kernel::Impl {
  std::uint32_t bindings = 0;
  std::uint32_t push_bytes = 0;
  VkShaderModule module = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;

  void destroy(Context& c) {
    if (pool) c.api.vkDestroyDescriptorPool(c.device, pool, nullptr);
    if (pipeline) c.api.vkDestroyPipeline(c.device, pipeline, nullptr);
    if (layout) c.api.vkDestroyPipelineLayout(c.device, layout, nullptr);
    if (set_layout) c.api.vkDestroyDescriptorSetLayout(c.device, set_layout, nullptr);
    if (module) c.api.vkDestroyShaderModule(c.device, module, nullptr);
  }
};

Kernel::Kernel(std::span<const std::uint32_t> spirv, std::uint32_t storage_buffers, std::uint32_t push_constant_bytes)
    : impl_(std::make_unique<Impl>()) {
  Context& c = usable_context();
  std::lock_guard lock(c.mu);
  Impl& k = *impl_;
  k.bindings = storage_buffers;
  k.push_bytes = push_constant_bytes;
  auto unsupported = [&](const char* what, VkResult r) {
    k.destroy(c);
    throw Unsupported("Vulkan device '" + c.status.device.name + "' cannot build the kernel: " + vk_error(what, r));
  };
  auto smi = vk_struct<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  smi.codeSize = spirv.size_bytes();
  smi.pCode = spirv.data();
  if (VkResult r = c.api.vkCreateShaderModule(c.device, &smi, nullptr, &k.module); r != VK_SUCCESS)
    unsupported("vkCreateShaderModule", r);
  std::vector<VkDescriptorSetLayoutBinding> b(storage_buffers);
  for (std::uint32_t i = 0; i < storage_buffers; ++i)
    b[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  auto dli = vk_struct<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  dli.bindingCount = storage_buffers;
  dli.pBindings = b.data();
  if (VkResult r = c.api.vkCreateDescriptorSetLayout(c.device, &dli, nullptr, &k.set_layout); r != VK_SUCCESS)
    unsupported("vkCreateDescriptorSetLayout", r);
  VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_constant_bytes};
  auto pli = vk_struct<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &k.set_layout;
  pli.pushConstantRangeCount = push_constant_bytes ? 1 : 0;
  pli.pPushConstantRanges = &pcr;
  if (VkResult r = c.api.vkCreatePipelineLayout(c.device, &pli, nullptr, &k.layout); r != VK_SUCCESS)
    unsupported("vkCreatePipelineLayout", r);
  auto cpi = vk_struct<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  cpi.stage = vk_struct<VkPipelineShaderStageCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
  cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpi.stage.module = k.module;
  cpi.stage.pName = "main";
  cpi.layout = k.layout;
  if (VkResult r = c.api.vkCreateComputePipelines(c.device, VK_NULL_HANDLE, 1, &cpi, nullptr, &k.pipeline);
      r != VK_SUCCESS)
    unsupported("vkCreateComputePipelines", r);
  VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, storage_buffers == 0 ? 1 : storage_buffers};
  auto dpi = vk_struct<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
  dpi.maxSets = 1;
  dpi.poolSizeCount = 1;
  dpi.pPoolSizes = &ps;
  if (VkResult r = c.api.vkCreateDescriptorPool(c.device, &dpi, nullptr, &k.pool); r != VK_SUCCESS)
    unsupported("vkCreateDescriptorPool", r);
  auto dsa = vk_struct<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
  dsa.descriptorPool = k.pool;
  dsa.descriptorSetCount = 1;
  dsa.pSetLayouts = &k.set_layout;
  if (VkResult r = c.api.vkAllocateDescriptorSets(c.device, &dsa, &k.set); r != VK_SUCCESS)
    unsupported("vkAllocateDescriptorSets", r);
}

Kernel::~Kernel() {
  if (!impl_) return;
  Context& c = context();
  std::lock_guard lock(c.mu);
  impl_->destroy(c);
}

namespace {

void check_dispatch(const Kernel::Impl& k, std::size_t buffers, std::size_t push_bytes) {
  if (buffers != k.bindings)
    throw InvalidArgument("vulkan::dispatch: the kernel has " + std::to_string(k.bindings) + " bindings, got " +
                          std::to_string(buffers) + " buffers");
  if (push_bytes != k.push_bytes)
    throw InvalidArgument("vulkan::dispatch: the kernel takes " + std::to_string(k.push_bytes) +
                          " bytes of push constants, got " + std::to_string(push_bytes));
}

// Points `set`'s bindings 0..n-1 at `buffers`. Caller holds mu.
void write_set(Context& c, VkDescriptorSet set, std::span<Buffer* const> buffers) {
  std::vector<VkDescriptorBufferInfo> infos(buffers.size());
  std::vector<VkWriteDescriptorSet> writes(buffers.size());
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    infos[i] = {buffers[i]->impl()->buffer, 0, VK_WHOLE_SIZE};
    writes[i] = vk_struct<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
    writes[i].dstSet = set;
    writes[i].dstBinding = static_cast<std::uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  c.api.vkUpdateDescriptorSets(c.device, static_cast<std::uint32_t>(writes.size()), writes.data(), 0, nullptr);
}

void record_dispatch(Context& c, VkCommandBuffer cb, const Kernel::Impl& k, VkDescriptorSet set, const void* push,
                     std::size_t push_bytes, std::uint32_t gx, std::uint32_t gy, std::uint32_t gz) {
  c.api.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline);
  c.api.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, k.layout, 0, 1, &set, 0, nullptr);
  if (push_bytes)
    c.api.vkCmdPushConstants(cb, k.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<std::uint32_t>(push_bytes),
                             push);
  c.api.vkCmdDispatch(cb, gx, gy, gz);
}

// Every write of the commands so far (shaders, copies) visible to every later
// command and to the host.
void record_barrier(Context& c, VkCommandBuffer cb) {
  auto mb = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
  c.api.vkCmdPipelineBarrier(
      cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
      nullptr, 0, nullptr);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

DispatchTime dispatch(const Kernel& kernel, std::span<Buffer* const> buffers, const void* push, std::size_t push_bytes,
                      std::uint32_t groups_x, std::uint32_t groups_y, std::uint32_t groups_z) {
  Context& c = usable_context();
  Kernel::Impl& k = *kernel.impl();
  check_dispatch(k, buffers.size(), push_bytes);
  std::lock_guard lock(c.mu);
  write_set(c, k.set, buffers);
  const bool timed = c.status.device.timestamps;
  const auto t0 = std::chrono::steady_clock::now();
  c.submit_and_wait([&](VkCommandBuffer cb) {
    if (timed) {
      c.api.vkCmdResetQueryPool(cb, c.timestamps, 0, 2);
      c.api.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, c.timestamps, 0);
    }
    record_dispatch(c, cb, k, k.set, push, push_bytes, groups_x, groups_y, groups_z);
    record_barrier(c, cb);
    if (timed) c.api.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, c.timestamps, 1);
  });
  DispatchTime t;
  t.seconds = seconds_since(t0);
  if (timed) {
    std::uint64_t ts[2] = {0, 0};
    if (c.api.vkGetQueryPoolResults(c.device, c.timestamps, 0, 2, sizeof ts, ts, sizeof ts[0],
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS &&
        ts[1] >= ts[0]) {
      t.seconds = static_cast<double>(ts[1] - ts[0]) * static_cast<double>(c.timestamp_period_ns) * 1e-9;
      t.device_timed = true;
    }
  }
  return t;
}

// ---------------------------------------------------------------- sequences

struct Sequence::Impl {
  static constexpr std::uint32_t kSetsPerPool = 128, kBindingsPerSet = 16;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> sets;  // pools of descriptor sets, one set per dispatch
  std::uint32_t in_last_pool = kSetsPerPool;
  std::size_t commands = 0;
  bool recording = true;

  VkDescriptorSet allocate(Context& c, VkDescriptorSetLayout layout) {
    if (in_last_pool == kSetsPerPool) {
      VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * kBindingsPerSet};
      auto dpi = vk_struct<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
      dpi.maxSets = kSetsPerPool;
      dpi.poolSizeCount = 1;
      dpi.pPoolSizes = &ps;
      VkDescriptorPool p = VK_NULL_HANDLE;
      Context::check(c.api.vkCreateDescriptorPool(c.device, &dpi, nullptr, &p), "vkCreateDescriptorPool");
      sets.push_back(p);
      in_last_pool = 0;
    }
    auto dsa = vk_struct<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
    dsa.descriptorPool = sets.back();
    dsa.descriptorSetCount = 1;
    dsa.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    Context::check(c.api.vkAllocateDescriptorSets(c.device, &dsa, &set), "vkAllocateDescriptorSets");
    ++in_last_pool;
    return set;
  }
  void destroy(Context& c) {
    for (VkDescriptorPool p : sets) c.api.vkDestroyDescriptorPool(c.device, p, nullptr);
    if (fence) c.api.vkDestroyFence(c.device, fence, nullptr);
    if (pool) c.api.vkDestroyCommandPool(c.device, pool, nullptr);  // frees cmd
  }
  void check_recording() const {
    if (!recording) throw Error("vulkan::Sequence: commands appended after the first submit");
  }
};

Sequence::Sequence() : impl_(std::make_unique<Impl>()) {
  Context& c = usable_context();
  std::lock_guard lock(c.mu);
  Impl& s = *impl_;
  try {
    auto pci = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    pci.queueFamilyIndex = c.queue_family;
    Context::check(c.api.vkCreateCommandPool(c.device, &pci, nullptr, &s.pool), "vkCreateCommandPool");
    auto cai = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    cai.commandPool = s.pool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    Context::check(c.api.vkAllocateCommandBuffers(c.device, &cai, &s.cmd), "vkAllocateCommandBuffers");
    auto fci = vk_struct<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
    Context::check(c.api.vkCreateFence(c.device, &fci, nullptr, &s.fence), "vkCreateFence");
    auto bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    Context::check(c.api.vkBeginCommandBuffer(s.cmd, &bi), "vkBeginCommandBuffer");
  } catch (...) {
    s.destroy(c);
    throw;
  }
}

Sequence::~Sequence() {
  if (!impl_) return;
  Context& c = context();
  std::lock_guard lock(c.mu);
  impl_->destroy(c);
}

void Sequence::dispatch(const Kernel& kernel, std::span<Buffer* const> buffers, const void* push,
                        std::size_t push_bytes, std::uint32_t groups_x, std::uint32_t groups_y,
                        std::uint32_t groups_z) {
  Context& c = usable_context();
  const Kernel::Impl& k = *kernel.impl();
  check_dispatch(k, buffers.size(), push_bytes);
  if (k.bindings > Impl::kBindingsPerSet) throw InvalidArgument("vulkan::Sequence: a kernel of more than 16 bindings");
  std::lock_guard lock(c.mu);
  impl_->check_recording();
  const VkDescriptorSet set = impl_->allocate(c, k.set_layout);
  write_set(c, set, buffers);
  record_dispatch(c, impl_->cmd, k, set, push, push_bytes, groups_x, groups_y, groups_z);
  record_barrier(c, impl_->cmd);
  ++impl_->commands;
}

void Sequence::copy(const Buffer& from, std::size_t from_offset, Buffer& to, std::size_t to_offset, std::size_t bytes) {
  const auto inside = [&](const Buffer& b, std::size_t offset) {
    return offset <= b.size() && bytes <= b.size() - offset;
  };
  if (!inside(from, from_offset) || !inside(to, to_offset))
    throw InvalidArgument("vulkan::Sequence::copy: " + std::to_string(bytes) + " bytes outside a buffer");
  Context& c = usable_context();
  std::lock_guard lock(c.mu);
  impl_->check_recording();
  if (bytes == 0) return;
  VkBufferCopy region{from_offset, to_offset, bytes};
  c.api.vkCmdCopyBuffer(impl_->cmd, from.impl()->buffer, to.impl()->buffer, 1, &region);
  record_barrier(c, impl_->cmd);
  ++impl_->commands;
}

std::size_t Sequence::commands() const { return impl_->commands; }

DispatchTime Sequence::submit() {
  Context& c = usable_context();
  std::lock_guard lock(c.mu);
  Impl& s = *impl_;
  if (s.recording) {
    Context::check(c.api.vkEndCommandBuffer(s.cmd), "vkEndCommandBuffer");
    s.recording = false;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto si = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  si.commandBufferCount = 1;
  si.pCommandBuffers = &s.cmd;
  Context::check(c.api.vkResetFences(c.device, 1, &s.fence), "vkResetFences");
  Context::check(c.api.vkQueueSubmit(c.queue, 1, &si, s.fence), "vkQueueSubmit");
  Context::check(c.api.vkWaitForFences(c.device, 1, &s.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  return {seconds_since(t0), false};
}

#endif  // POPPER_HAVE_VULKAN

}  // namespace popper::vulkan
