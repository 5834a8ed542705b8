// What the Metal backend decides about a device (not about one submission), as plain C++ both
// Metal drivers share: the Objective-C++ one (backends/metal) only asks Metal and passes the
// answers here; the simulator (backends/metal_sim) runs the same code with its family's answers.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/metal_plan/planner.hpp"
#include "core/backend.hpp"

namespace metalcall::metal {

/** The GPU families the backend asks [device supportsFamily:] about, newest Apple family first. */
const std::vector<std::string>& queried_gpu_families();

/**
 * A device's architecture from the families it supports (names of queried_gpu_families()):
 * the newest Apple family, else "mac2", else "unknown".
 */
std::string architecture_of(const std::vector<std::string>& supported_families);

/** Whether dispatchThreads: (partial last threadgroups) runs: Apple4 and later, Mac2 (feature set tables). */
bool nonuniform_threadgroups(const std::string& architecture);

/** What the planner needs of a device (PlanTarget) from its DeviceInfo. */
PlanTarget plan_target(const DeviceInfo& info, std::size_t page_size,
                       std::function<std::size_t(const void*)> allocation_size);

/**
 * The length of the MTLBuffer behind a Buffer of `nbytes`: storage_length (at least 1 byte, whole
 * multiples of 4 for buffer blits). ArgumentError when `nbytes` is over the device's maxBufferLength.
 */
std::size_t buffer_length(std::size_t nbytes, const DeviceInfo& info, const std::string& scope);

/**
 * The one backend device of GPU `key` for the process, made by `make` the first time: Devices
 * opened on one GPU with any options (timing=True) share it, and so its one queue, because
 * Metal orders command buffers only within a queue (P2.1 item 6). Never freed, as devices.
 */
std::shared_ptr<BackendDevice> one_device_per_gpu(const std::string& key,
                                                  const std::function<std::shared_ptr<BackendDevice>()>& make);

}  // namespace metalcall::metal
