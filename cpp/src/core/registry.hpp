// Backends built into this binary register here; CMake generates the list.
#pragma once

#include <memory>
#include <string>

#include "core/backend.hpp"
#include "metalcall/device.hpp"

namespace metalcall {

/** Calls register_<name>_backend() for every backend compiled in (generated file). */
void register_builtin_backends();

void register_cpu_backend();
void register_metal_backend();
void register_cuda_backend();
void register_metal_sim_backend();

/**
 * A device of backend `name` for another backend to build on (the Metal simulator runs its
 * kernels on a CPU device of its own): opened anew, not kept in the registry's table, and
 * safe to call from a backend's open(). Throws DeviceError when `name` is not built in.
 */
std::shared_ptr<BackendDevice> open_private_backend_device(const std::string& name, int index,
                                                           const DeviceOptions& options);

}  // namespace metalcall
