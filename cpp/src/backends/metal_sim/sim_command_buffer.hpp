// What the Metal simulator's driver keeps of one command buffer while it runs (private to
// sim_driver.cpp and sim_dispatch.cpp): the plan, the memory its buffers and textures became,
// the open encoder's argument tables and what the open compute pass did to each buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/metal_plan/command_buffer_end.hpp"
#include "backends/metal_plan/plan.hpp"
#include "backends/metal_sim/sim_driver.hpp"
#include "backends/metal_sim/sim_families.hpp"
#include "core/backend.hpp"

namespace metalcall::metal_sim {

/** A view of simulated memory handed to a CPU kernel: no ownership. */
class MemoryView final : public BufferStorage {
 public:
  MemoryView(void* data, std::size_t nbytes) : BufferStorage(data, nbytes) {}
};

/** The message of an ExecutionError for a plan that breaks a Metal rule. */
inline std::string rule(const std::string& text) { return "[metal-sim] the plan breaks a Metal rule: " + text; }

/**
 * A fault the simulator injects into one command buffer, named by METALCALL_METAL_SIM_FAULT when it
 * is committed (tests of the driver's own paths; docs/metal-backend.md): none by default.
 */
struct Fault {
  enum class Kind { none, merge_passes, gpu, copy_back, release, slow_submit };
  Kind kind = Kind::none;
  metal::GpuFailure gpu = metal::GpuFailure::other;  // Kind::gpu: how the GPU fails
};

/** The fault METALCALL_METAL_SIM_FAULT names (read on the committing thread); DeviceError for an unknown one. */
Fault fault_from_environment();

/**
 * Fault::Kind::slow_submit: the submission that finds no other one held here waits 100 ms before
 * it is queued; one that comes meanwhile goes on. Core marks a submission's Buffers before the
 * backend queues it, under one lock (P2.1 item 11): with the lock a second thread waits for the
 * first to be queued, without it the second is marked after the first and queued before it.
 */
void hold_first_submission();

/** Joins compute passes that follow one another into one (Fault::Kind::merge_passes). */
void merge_compute_passes(metal::Plan& plan);

struct SimCommandBuffer {
  metal::Plan plan;
  Fault fault;
  std::shared_ptr<CompletionState> completion;
  std::vector<std::unique_ptr<SimMemory>> owned;  // empty buffers, staged textures
  std::vector<std::shared_ptr<SimMemory>> staging;  // staging buffers, from the queue's pool and back to it
  std::vector<char*> memory;                      // each plan buffer's first byte
  std::vector<std::size_t> length;                // and its MTLBuffer length
  std::vector<char*> texture_memory;              // each staged texture's private memory (null: over a buffer)
};

/** What an encoder's argument table holds at one buffer index. */
struct BoundBuffer {
  bool bytes = false;
  std::size_t buffer = 0;  // in the plan
  std::size_t offset = 0;
  std::vector<std::uint8_t> data;  // setBytes: Metal copies them when the call is encoded
};

/** How the open compute pass has used one buffer. */
struct BufferUse {
  bool buffer_read = false, buffer_write = false;    // through buffer bindings
  bool texture_read = false, texture_write = false;  // through textures over it
};

/** A compute encoder's state: argument tables (empty when a pass begins) and the pass's buffer uses. */
struct Encoder {
  const SimProgram* program = nullptr;
  std::size_t call = 0;
  std::map<std::uint32_t, BoundBuffer> buffers;
  std::map<std::uint32_t, std::size_t> threadgroup_memory;
  std::map<std::uint32_t, std::size_t> textures;  // index -> plan texture
  std::map<std::uint32_t, const Sampler*> samplers;
  std::map<std::size_t, BufferUse> uses;  // plan buffer -> how the pass used it
  // A texture over a buffer sees the buffer as it was when the pass began (Apple: the texture and
  // buffer views are not coherent within a pass); its writes reach the buffer when the pass ends.
  std::map<std::size_t, std::unique_ptr<SimMemory>> snapshots;  // plan buffer -> its bytes at the pass's start
  std::map<std::size_t, bool> snapshot_written;
};

/** Runs one dispatch of `encoder`'s pipeline on `cpu`, checking its bindings and shape against `family`'s rules. */
void dispatch(BackendDevice& cpu, const GpuFamily& family, SimCommandBuffer& b, Encoder& encoder,
              const std::uint32_t threads[3], const std::uint32_t group[3]);

/** Copies one image between a buffer's bytes and a staged texture's (same layout); `to_texture` says which way. */
void blit_image(SimCommandBuffer& b, std::size_t buffer, std::size_t texture, const metal::ImageCopy& copy,
                bool to_texture);

}  // namespace metalcall::metal_sim
