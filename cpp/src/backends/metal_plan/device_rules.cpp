// Device decisions of the Metal backend (device_rules.hpp).
#include "backends/metal_plan/device_rules.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "metalcall/errors.hpp"

namespace metalcall::metal {

const std::vector<std::string>& queried_gpu_families() {
  static const auto& names =
      *new std::vector<std::string>{"apple9", "apple8", "apple7", "apple6", "apple5", "apple4", "mac2"};
  return names;
}

std::string architecture_of(const std::vector<std::string>& supported_families) {
  for (const std::string& family : queried_gpu_families())
    if (std::find(supported_families.begin(), supported_families.end(), family) != supported_families.end())
      return family;
  return "unknown";
}

bool nonuniform_threadgroups(const std::string& architecture) {
  const auto& known = queried_gpu_families();  // every one of them is Apple4 or later, or Mac2
  return std::find(known.begin(), known.end(), architecture) != known.end();
}

PlanTarget plan_target(const DeviceInfo& info, std::size_t page_size,
                       std::function<std::size_t(const void*)> allocation_size) {
  PlanTarget target;
  target.name = info.name;
  target.registry_id = info.registry_id;
  target.max_buffer_length = info.max_buffer_length;
  target.threadgroup_memory_length = info.threadgroup_memory_length;
  target.nonuniform_threadgroups = nonuniform_threadgroups(info.architecture);
  target.page_size = page_size;
  target.allocation_size = std::move(allocation_size);
  return target;
}

std::size_t buffer_length(std::size_t nbytes, const DeviceInfo& info, const std::string& scope) {
  if (nbytes > info.max_buffer_length)
    throw ArgumentError(scope + " unable to allocate " + std::to_string(nbytes) + " bytes: the largest buffer " +
                        info.name + " allows is " + std::to_string(info.max_buffer_length) + " bytes; split the data");
  return storage_length(nbytes);
}

std::shared_ptr<BackendDevice> one_device_per_gpu(const std::string& key,
                                                  const std::function<std::shared_ptr<BackendDevice>()>& make) {
  static std::mutex mutex;
  static auto* opened = new std::map<std::string, std::shared_ptr<BackendDevice>>;  // never freed
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<BackendDevice>& device = (*opened)[key];
  if (!device) device = make();
  return device;
}

}  // namespace metalcall::metal
