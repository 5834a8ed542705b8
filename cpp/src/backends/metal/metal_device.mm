// The Metal device: enumeration and registration, DeviceInfo, shared-storage buffers,
// and the autorelease-pool seam of every .mm. Compiling is in metal_compiler.mm, running
// calls in metal_queue.mm.
#if !__has_feature(objc_arc)
#error "metal_device.mm needs ARC: compile it with -fobjc-arc (metal.cmake sets it)"
#endif

#include <Availability.h>
#include <Foundation/Foundation.h>
#include <Metal/Metal.h>

#include <malloc/malloc.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/metal/metal_backend.hpp"
#include "backends/metal_plan/device_rules.hpp"
#include "backends/metal_plan/planner.hpp"
#include "core/registry.hpp"
#include "metalcall/errors.hpp"

namespace metalcall {
namespace metal {

void run_in_autorelease_pool(void (*body)(void*), void* context) {
  std::exception_ptr error;
  @autoreleasepool {
    try {
      body(context);
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

MetalBufferStorage::MetalBufferStorage(void* retained_buffer, void* contents, std::size_t nbytes,
                                       std::uint64_t registry_id)
    : PlanBufferStorage(contents, nbytes, registry_id), buffer_(retained_buffer) {}

MetalBufferStorage::~MetalBufferStorage() {
  // Hands the reference taken over in the constructor back to ARC, which releases it here.
  (void)(__bridge_transfer id<MTLBuffer>)buffer_;
}

namespace {

// The families of queried_gpu_families() this device supports ([MTLDevice supportsFamily:]).
std::vector<std::string> supported_families(id<MTLDevice> device) {
  std::vector<std::string> names;
#if __MAC_OS_X_VERSION_MAX_ALLOWED >= 140000  // the macOS 14 SDK added Apple9 (M3)
  if (@available(macOS 14.0, *))
    if ([device supportsFamily:MTLGPUFamilyApple9]) names.push_back("apple9");
#endif
  static const std::pair<MTLGPUFamily, const char*> families[] = {
      {MTLGPUFamilyApple8, "apple8"}, {MTLGPUFamilyApple7, "apple7"},
      {MTLGPUFamilyApple6, "apple6"}, {MTLGPUFamilyApple5, "apple5"},
      {MTLGPUFamilyApple4, "apple4"}, {MTLGPUFamilyMac2, "mac2"},
  };
  for (const auto& [family, name] : families)
    if ([device supportsFamily:family]) names.push_back(name);
  return names;
}

DeviceInfo describe(id<MTLDevice> device, int index) {
  DeviceInfo info;
  info.name = from_utf8([[device name] UTF8String]);
  info.backend = "metal";
  info.index = index;
  info.architecture = architecture_of(supported_families(device));
  info.max_threads_per_threadgroup = static_cast<unsigned>([device maxThreadsPerThreadgroup].width);
  // Apple GPUs; on others (AMD 32/64, Intel 8-32) each pipeline has its own threadExecutionWidth.
  info.simd_width = 32;
  info.unified_memory = [device hasUnifiedMemory];
  info.memory_size = [device recommendedMaxWorkingSetSize];
  info.max_buffer_length = [device maxBufferLength];
  info.threadgroup_memory_length = [device maxThreadgroupMemoryLength];
  info.registry_id = [device registryID];
  return info;
}

/** The Metal GPUs, the system default first: it is what "metal" and index 0 open. */
struct DeviceList {
  std::vector<id<MTLDevice>> devices;
  std::vector<DeviceInfo> infos;
};

// Taken once per process, so the indices devices are opened by stay stable; a GPU added
// later (an eGPU) shows up in the next process. Never freed: MTLDevice objects live as
// long as the process anyway, and releasing them during exit helps no one.
const DeviceList& device_list() {
  static const DeviceList* list = [] {
    auto* taken = new DeviceList;
    with_autorelease_pool([&] {
      // Not MTLCreateSystemDefaultDevice: it switches a dual-GPU Mac to its discrete GPU for the
      // whole process, even when no one uses that device (P2.1 item 9).
      std::vector<id<MTLDevice>> all;
      std::vector<GpuTraits> traits;
      for (id<MTLDevice> device in MTLCopyAllDevices()) {
        all.push_back(device);
        traits.push_back({static_cast<bool>([device isLowPower]), static_cast<bool>([device isRemovable])});
      }
      for (std::size_t i : device_order(traits)) taken->devices.push_back(all[i]);
      for (std::size_t i = 0; i < taken->devices.size(); ++i)
        taken->infos.push_back(describe(taken->devices[i], static_cast<int>(i)));
    });
    return taken;
  }();
  return *list;
}

std::string no_device_reason() {
  return "[metal] no Metal GPU found: MTLCopyAllDevices() returned none. This happens in virtual "
         "machines without GPU access and in some remote or sandboxed sessions; run on the Mac "
         "itself, or use mc.Device(\"cpu\")";
}

class MetalDevice final : public BackendDevice {
 public:
  MetalDevice(id<MTLDevice> device, int index) : device_(device), info_(describe(device, index)) {
    compiler_identity_ = "metal;" + info_.name + ";" + info_.architecture + ";" +
                         from_utf8([[[NSProcessInfo processInfo] operatingSystemVersionString] UTF8String]);
    queue_ = std::make_unique<MetalQueue>((__bridge void*)device_, info_);
    target_ = plan_target(info_, static_cast<std::size_t>(sysconf(_SC_PAGESIZE)),
                          [](const void* data) { return static_cast<std::size_t>(malloc_size(data)); });
  }

  const DeviceInfo& info() const override { return info_; }

  std::shared_ptr<BufferStorage> allocate(std::size_t nbytes) override {
    const std::size_t length = buffer_length(nbytes, info_, "[metal]");
    std::shared_ptr<BufferStorage> storage;
    with_autorelease_pool([&] {
      // Zero-filled, as Metal documents for this method.
      id<MTLBuffer> buffer = [device_ newBufferWithLength:length options:MTLResourceStorageModeShared];
      if (!buffer)
        throw Error("[metal] unable to allocate " + std::to_string(nbytes) + " bytes on " + info_.name +
                    " (it recommends using at most " + std::to_string(info_.memory_size) +
                    " bytes in all): free buffers you no longer need");
      storage = std::make_shared<MetalBufferStorage>((__bridge_retained void*)buffer, [buffer contents], nbytes,
                                                     info_.registry_id);
    });
    return storage;
  }

  std::string compiler_identity() override { return compiler_identity_; }

  // Textures are linear MTLTextures over shared buffers (metal_texture.mm): rows aligned as Metal requires.
  std::size_t texture_row_alignment(const PixelFormat& format) override {
    return linear_texture_alignment((__bridge void*)device_, format);
  }
  void check_texture(const TextureDescriptor& descriptor) override {
    check_metal_texture(descriptor);
    PixelFormatSupport support;
    support.small_srgb = [device_ supportsFamily:MTLGPUFamilyApple1];
    support.srgb_writes = [device_ supportsFamily:MTLGPUFamilyApple2];
    support.rgb9e5_writes = [device_ supportsFamily:MTLGPUFamilyApple3];
    check_metal_pixel_format(descriptor, support, info_.name);
  }

  std::shared_ptr<BackendLibrary> compile(const std::string& source, const CompileOptions& options) override {
    return compile_library((__bridge void*)device_, info_.registry_id, source, options);
  }

  std::shared_ptr<BackendLibrary> load_library(const std::vector<std::uint8_t>& bytes) override {
    return metal::load_library((__bridge void*)device_, info_.registry_id, bytes);
  }

  // The planner decides; the queue issues the plan's Metal calls. Its completion handler copies
  // host memory back, so a caller about to wait (caller_waits) needs nothing different.
  void submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion,
              bool /*caller_waits*/) override {
    queue_->submit(make_plan(std::move(commands), target_), completion);
  }

  void synchronize() override { queue_->synchronize(); }

 private:
  id<MTLDevice> device_;
  DeviceInfo info_;
  std::string compiler_identity_;
  std::unique_ptr<MetalQueue> queue_;  // its destructor waits for the work in flight
  PlanTarget target_;
};

std::vector<DeviceInfo> enumerate_devices() {
  try {
    return device_list().infos;
  } catch (...) {
    return {};  // enumerate never throws: no Metal means no devices
  }
}

// Core has checked the index against enumerate() and refused options Metal does not
// have (checked mode).
std::shared_ptr<BackendDevice> open_device(int index, const DeviceOptions& /*options*/) {
  const DeviceList& list = device_list();
  if (list.devices.empty()) throw DeviceError(no_device_reason());
  if (index < 0 || static_cast<std::size_t>(index) >= list.devices.size())
    throw DeviceError("[metal] no Metal device " + std::to_string(index) + ": this Mac has " +
                      std::to_string(list.devices.size()) + " (see mc.get_devices())");
  return one_device_per_gpu("metal:" + std::to_string(index), [&] {
    std::shared_ptr<BackendDevice> device;
    with_autorelease_pool([&] {
      device = std::make_shared<MetalDevice>(list.devices[static_cast<std::size_t>(index)], index);
    });
    return device;
  });
}

}  // namespace
}  // namespace metal

void register_metal_backend() {
  BackendEntry entry;
  entry.name = "metal";
  entry.priority = 100;
  entry.enumerate = metal::enumerate_devices;
  entry.unavailable_reason = metal::no_device_reason;
  entry.open = metal::open_device;
  register_backend(std::move(entry));
}

}  // namespace metalcall
