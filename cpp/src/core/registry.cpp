// The device registry: which backends are built in, which devices they see,
// and opening a device by spec. Devices live for the whole process.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>

#include "core/backend.hpp"
#include "core/impl.hpp"
#include "core/registry.hpp"
#include "metalcall/errors.hpp"

namespace metalcall {

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<BackendEntry> backends;  // sorted by priority, highest first
  // Opened devices by "backend:index[:checked][:sandbox][:timing]". Never freed: worker threads and
  // queues must outlive every Python object that may still refer to them at exit.
  std::map<std::string, std::shared_ptr<DeviceImpl>> opened;
};

// The storage alone; register_backend() fills it while registry() runs the
// registrations, so it must not go through registry() itself.
Registry& registry_storage() {
  static Registry* r = new Registry;
  return *r;
}

Registry& registry() {
  static std::once_flag once;
  std::call_once(once, [] { register_builtin_backends(); });
  return registry_storage();
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

const BackendEntry* find_backend(Registry& r, const std::string& name) {
  for (const auto& b : r.backends)
    if (b.name == name) return &b;
  return nullptr;
}

std::string backend_names(const Registry& r) {
  std::string out;
  for (const auto& b : r.backends) out += (out.empty() ? "" : ", ") + b.name;
  return out;
}

Device open_backend_device(Registry& r, const BackendEntry& backend, int index, const DeviceOptions& options) {
  auto devices = backend.enumerate();
  if (devices.empty()) {
    throw DeviceError("[metalcall] the " + backend.name + " backend has no usable device: " +
                      backend.unavailable_reason());
  }
  if (index < 0 || index >= static_cast<int>(devices.size())) {
    throw DeviceError("[metalcall] " + backend.name + " device index " + std::to_string(index) +
                      " is out of range: this machine has " + std::to_string(devices.size()) + " " +
                      backend.name + " device(s)");
  }
  if (options.checked && backend.name != "cpu") {
    throw DeviceError("[metalcall] checked mode exists only on the cpu backend; use Device(\"cpu\", checked=True)");
  }
  if (!options.family.empty() && backend.name != "metal-sim") {
    throw DeviceError("[metalcall] family= chooses the GPU family of the Metal simulator only; use "
                      "Device(\"metal-sim\", family=\"" + options.family + "\")");
  }
  const bool sandboxes = backend.sandbox_available && backend.sandbox_available();
  if (options.sandbox == SandboxMode::on && !sandboxes) {
    throw DeviceError(backend.name == "cpu"
                          ? "[metalcall] the sandboxed CPU device needs Linux (seccomp system call filters and memfd); "
                            "here kernel source runs in-process only, as trusted code (docs/security.md)"
                          : "[metalcall] the sandbox exists only on the cpu backend; use Device(\"cpu\", sandbox=True)");
  }
  // Checked devices are for finding faults: where the sandbox exists they run in it, so that
  // a fault checked mode cannot catch (a wild raw pointer) ends a worker, not the interpreter.
  DeviceOptions resolved = options;
  const bool automatic = options.sandbox == SandboxMode::automatic;
  if (automatic) resolved.sandbox = options.checked && sandboxes ? SandboxMode::on : SandboxMode::off;
  const bool sandbox = resolved.sandbox == SandboxMode::on;
  const std::string key = backend.name + ":" + std::to_string(index) + (options.checked ? ":checked" : "") +
                          (sandbox ? ":sandbox" : "") + (options.timing ? ":timing" : "") +
                          (options.family.empty() ? "" : ":" + lower(options.family)) +
                          (options.kernel_timeout > 0 ? ":timeout=" + std::to_string(options.kernel_timeout) : "");
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.opened.find(key);
  if (it != r.opened.end()) return Device(it->second);
  std::shared_ptr<BackendDevice> device;
  try {
    device = backend.open(index, resolved);
  } catch (const DeviceError& e) {
    if (!(automatic && sandbox)) throw;
    throw DeviceError(std::string(e.what()) + "; Device(\"cpu\", checked=True, sandbox=False) runs checked kernels "
                      "in this process instead");
  }
  auto impl = std::make_shared<DeviceImpl>(std::move(device), resolved);
  r.opened.emplace(key, impl);
  return Device(impl);
}

}  // namespace

std::shared_ptr<BackendDevice> open_private_backend_device(const std::string& name, int index,
                                                           const DeviceOptions& options) {
  // The table of backends is complete once the registrations ran, and never changes after:
  // no lock (the caller may be a backend's open(), which runs under the registry's lock).
  for (const auto& b : registry().backends)
    if (b.name == name) return b.open(index, options);
  throw DeviceError("[metalcall] the " + name + " backend is not built into this metalcall");
}

void register_backend(BackendEntry entry) {
  auto& backends = registry_storage().backends;
  backends.push_back(std::move(entry));
  std::stable_sort(backends.begin(), backends.end(),
                   [](const BackendEntry& a, const BackendEntry& b) { return a.priority > b.priority; });
}

std::vector<std::string> Device::backends() {
  std::vector<std::string> out;
  for (const auto& b : registry().backends) out.push_back(b.name);
  return out;
}

std::vector<DeviceInfo> Device::list() {
  std::vector<DeviceInfo> out;
  for (const auto& b : registry().backends) {
    if (!b.listed) continue;
    auto devices = b.enumerate();
    out.insert(out.end(), devices.begin(), devices.end());
  }
  return out;
}

void Device::stop_all_work(const char* reason) {
  std::vector<std::shared_ptr<DeviceImpl>> devices;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const auto& [key, impl] : r.opened) devices.push_back(impl);
  }
  for (const auto& impl : devices) impl->backend().stop_all(reason);
}

Device Device::open(int index, const DeviceOptions& options) {
  auto all = list();
  if (index < 0 || index >= static_cast<int>(all.size())) {
    throw DeviceError("[metalcall] device index " + std::to_string(index) + " is out of range: " +
                      std::to_string(all.size()) + " device(s) found (see metalcall.get_devices())");
  }
  auto& r = registry();
  return open_backend_device(r, *find_backend(r, all[index].backend), all[index].index, options);
}

Device Device::open(const std::string& spec_in, const DeviceOptions& options) {
  auto& r = registry();
  std::string spec = spec_in;
  if (spec.empty()) {
    const char* env = std::getenv("METALCALL_DEVICE");
    if (env && *env) spec = env;
  }
  if (spec.empty()) {
    // The best available: backends are sorted by priority.
    std::string reasons;
    for (const auto& b : r.backends) {
      if (!b.listed) continue;
      if (!b.enumerate().empty()) return open_backend_device(r, b, 0, options);
      reasons += "\n  " + b.name + ": " + b.unavailable_reason();
    }
    throw DeviceError("[metalcall] no device is available:" + reasons);
  }
  std::string name = lower(spec);
  int index = 0;
  auto colon = name.find(':');
  if (colon != std::string::npos) {
    const std::string digits = name.substr(colon + 1);
    if (digits.empty() || digits.size() > 6 ||
        !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); })) {
      throw DeviceError("[metalcall] bad device spec '" + spec + "': expected BACKEND or BACKEND:INDEX, e.g. 'cuda:1'");
    }
    index = std::stoi(digits);
    name = name.substr(0, colon);
  }
  if (name == "gpu") {
    for (const auto& b : r.backends)
      if (b.name != "cpu" && b.listed && !b.enumerate().empty()) return open_backend_device(r, b, index, options);
    throw DeviceError("[metalcall] no GPU backend is usable here (built in: " + backend_names(r) + ")");
  }
  if (const BackendEntry* b = find_backend(r, name)) return open_backend_device(r, *b, index, options);
  if (name == "metal" || name == "cuda" || name == "cpu") {
    throw DeviceError("[metalcall] the " + name + " backend is not built into this metalcall (built in: " +
                      backend_names(r) + ")" +
                      (name == "metal" ? "; Metal exists only on macOS" : ""));
  }
  // A device name, as list() reports it.
  for (const auto& b : r.backends)
    for (const auto& d : b.listed ? b.enumerate() : std::vector<DeviceInfo>{})
      if (lower(d.name) == name) return open_backend_device(r, b, d.index, options);
  throw DeviceError("[metalcall] unknown device '" + spec + "': use a backend (" + backend_names(r) +
                    "), BACKEND:INDEX, or a name from metalcall.get_devices()");
}

}  // namespace metalcall
