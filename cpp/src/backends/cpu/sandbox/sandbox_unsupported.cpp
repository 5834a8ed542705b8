// The sandboxed CPU device where it cannot exist: it is built on Linux's seccomp and memfd.
#include "backends/cpu/sandbox/sandbox_device.hpp"

#include "metalcall/errors.hpp"

namespace metalcall::cpu {

bool sandbox_supported() { return false; }

std::shared_ptr<BackendDevice> open_sandbox_device(const DeviceOptions&, DeviceInfo) {
  throw DeviceError("[cpu sandbox] the sandboxed CPU device needs Linux (seccomp system call filters and memfd); "
                    "on this system kernel source runs in-process only, as trusted code (docs/security.md)");
}

}  // namespace metalcall::cpu
