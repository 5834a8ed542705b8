// The Metal simulator's driver: executes Metal plans (backends/metal_plan) under Metal's
// documented rules, running the kernels on a CPU device. Every rule a plan breaks is an
// ExecutionError naming the rule; nothing is tolerated. Like a Metal device it has one queue:
// command buffers run one after another on a thread of their own, in the order they were
// committed, and finish their Completions when done.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "backends/metal_plan/plan.hpp"
#include "backends/metal_plan/staging_pool.hpp"
#include "backends/metal_sim/sim_families.hpp"
#include "core/backend.hpp"

namespace metalcall::metal_sim {

/** Memory the simulated GPU owns: page-aligned, zero-filled, host-visible (shared storage). */
class SimMemory {
 public:
  SimMemory(std::size_t length, std::size_t page_size);
  ~SimMemory();
  SimMemory(const SimMemory&) = delete;
  SimMemory& operator=(const SimMemory&) = delete;
  char* data() const { return data_; }
  std::size_t length() const { return length_; }

 private:
  char* data_;
  std::size_t length_;
};

/** A Buffer of the simulated device: an MTLBuffer in shared storage. */
class SimBufferStorage final : public metal::PlanBufferStorage {
 public:
  SimBufferStorage(std::size_t nbytes, std::size_t page_size, std::uint64_t registry_id);

 private:
  std::unique_ptr<SimMemory> memory_;
};

/** A pipeline of the simulated device: the kernel built for the CPU, with the limits a pipeline of the family reports. */
class SimProgram final : public metal::PlanProgram {
 public:
  SimProgram(std::shared_ptr<Program> cpu, KernelInfo info, std::uint64_t registry_id);
  const std::shared_ptr<Program>& cpu() const { return cpu_; }

 private:
  std::shared_ptr<Program> cpu_;
};

/** One simulated command buffer: a plan with its resources made and its copy-ins done. */
struct SimCommandBuffer;

class SimQueue {
 public:
  /** `cpu` runs the kernels; `family` and `registry_id` describe the simulated device. */
  SimQueue(std::shared_ptr<BackendDevice> cpu, const GpuFamily& family, std::uint64_t registry_id, std::string name);
  ~SimQueue();  // waits for the command buffers in flight
  SimQueue(const SimQueue&) = delete;
  SimQueue& operator=(const SimQueue&) = delete;

  /**
   * What a Metal driver does before it commits: makes the plan's buffers and textures, copies
   * host memory in, checks every step against Metal's rules; then commits. Throws
   * ExecutionError for a rule the plan breaks (nothing then runs).
   */
  void commit(metal::Plan&& plan, const std::shared_ptr<CompletionState>& completion);
  /** Called first by the device's submit, right after core marked the submission's Buffers: the
   * slow-submit fault holds a submission here (sim_command_buffer.hpp, hold_first_submission). */
  void submission_arrived();
  /** Waits until every committed command buffer has completed. */
  void synchronize();

 private:
  void encode(SimCommandBuffer& buffer) const;
  void run(SimCommandBuffer& buffer) const;
  void complete(SimCommandBuffer& buffer, std::exception_ptr error, double seconds) const;
  void worker_loop();

  std::shared_ptr<BackendDevice> cpu_;
  mutable metal::StagingPool<std::shared_ptr<SimMemory>> staging_;  // as metal_queue.mm's: reused, not zeroed
  const GpuFamily& family_;
  std::uint64_t registry_id_;
  std::string name_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<SimCommandBuffer>> committed_;
  bool running_ = false;  // the worker runs a command buffer
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace metalcall::metal_sim
