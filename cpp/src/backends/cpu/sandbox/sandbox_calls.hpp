// Running a dispatch of the sandboxed CPU device: the call, written as a request the
// worker runs with the CPU backend's dispatch code; foreign host memory (NumPy arrays
// passed directly) and large argument structs staged in the arena around it.
#pragma once

#include <memory>

#include "backends/cpu/cpu_dispatch.hpp"
#include "backends/cpu/sandbox/shared_arena.hpp"
#include "backends/cpu/sandbox/worker_link.hpp"

namespace metalcall::cpu::sandbox {

class SandboxRunner final : public DispatchRunner {
 public:
  SandboxRunner(std::shared_ptr<WorkerLink> link, std::shared_ptr<SharedArena> arena)
      : link_(std::move(link)), arena_(std::move(arena)) {}
  using DispatchRunner::estimate;
  CallEstimate estimate(const DispatchCommand& command) override;
  /** Throws ExecutionError naming the kernel when the worker faults, crashes, breaks the
   *  filter or is stopped (the next call gets a new worker). */
  double run(const DispatchCommand& command, const StopRequest& stop) override;

 private:
  std::shared_ptr<WorkerLink> link_;
  std::shared_ptr<SharedArena> arena_;
};

}  // namespace metalcall::cpu::sandbox
