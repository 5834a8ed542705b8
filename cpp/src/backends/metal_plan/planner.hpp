// The planner: the backend-neutral calls of one submission (core's DispatchCommands) into a
// Metal plan (plan.hpp). Every decision the Metal backend makes is here, in plain C++, so that
// it runs and is tested off a Mac: under the Metal simulator and in tools/metal_check's logic test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backends/metal_plan/plan.hpp"

namespace metalcall::metal {

/** What the planner needs to know of the device it plans for. */
struct PlanTarget {
  std::string name;                           // the device's name, for messages
  std::uint64_t registry_id = 0;              // programs and buffers of other devices are refused
  std::uint64_t max_buffer_length = 0;        // maxBufferLength
  std::uint64_t threadgroup_memory_length = 0;  // maxThreadgroupMemoryLength
  bool nonuniform_threadgroups = false;       // dispatchThreads: (Apple4+, Mac2)
  std::size_t page_size = 4096;
  /** Bytes of the allocation behind a page-aligned host pointer (malloc_size); 0 when unknown. */
  std::function<std::size_t(const void*)> allocation_size;
};

/**
 * The plan of one submission. Host memory: one buffer per range of host memory that calls
 * bind (overlapping ranges are one), shared by every call of the submission that binds it, so
 * that a later call sees what an earlier one wrote; page-aligned whole pages are used in
 * place, the rest is staged (copied in before the commit, the ranges calls may write copied
 * back after completion). Calls share a compute pass, except that a call that binds a buffer
 * through a texture and through a buffer binding where the pass (or the call) writes one of
 * them starts a new pass (Metal does not keep the two views coherent within a pass), and
 * calls with blits before or after them (staged textures, realigned bindings) have passes of
 * their own. Throws ArgumentError for what Metal cannot run (sizes over the device's limits,
 * resources of another device, samplers Metal leaves undefined, grids a device without
 * non-uniform threadgroups cannot run exactly).
 */
Plan make_plan(std::vector<DispatchCommand>&& commands, const PlanTarget& target);

}  // namespace metalcall::metal
