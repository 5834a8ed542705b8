// The sandboxed CPU device, Device("cpu", sandbox=True): kernels compiled here, loaded
// and run only in a worker process under a system call filter, on Buffers in shared
// memory (docs/security.md).
#pragma once

#include <memory>

#include "core/backend.hpp"

namespace metalcall::cpu {

/** False where the sandbox is not built (it needs Linux). */
bool sandbox_supported();

/** Opens it with the CPU device's `info`; throws DeviceError where the sandbox cannot run. */
std::shared_ptr<BackendDevice> open_sandbox_device(const DeviceOptions& options, DeviceInfo info);

}  // namespace metalcall::cpu
