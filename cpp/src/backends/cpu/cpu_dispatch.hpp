// Running one dispatch on the CPU: on the calling thread alone, or spread over the
// worker pool with the calling thread taking part, chosen by the work the kernel
// measured on its earlier runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "backends/cpu/kernel_stop.hpp"
#include "core/backend.hpp"

namespace metalcall::cpu {

/** What running some dispatches is expected to take. */
struct CallEstimate {
  bool measured = false;    // false until each program has run once: then only thread counts are known
  bool loop_free = true;    // no program has loops: the run time follows from the thread count
  std::uint64_t threads = 0;
  double wall_ns = 0;       // expected time from start to end (when measured)
};

/** The estimate for one dispatch, as run_dispatch would run it now. */
CallEstimate estimate(const DispatchCommand& command);

/** Runs one dispatch on the calling thread (with the pool's workers if worth it),
 *  records its cost and returns the seconds it took; throws ExecutionError for a
 *  fault found by checked mode, or when it was stopped (kernel_stop.hpp): by `stop`,
 *  or the calling thread's InterruptScope fired. */
double run_dispatch(const DispatchCommand& command, const StopRequest& stop = {});

/**
 * How a CPU queue runs its dispatches: in this process (in_process_runner(), with
 * run_dispatch) or in the sandbox's worker process (sandbox/sandbox_calls.cpp).
 */
class DispatchRunner {
 public:
  /** What running `command` now is expected to take. */
  virtual CallEstimate estimate(const DispatchCommand& command) = 0;
  /** Runs it like run_dispatch(): returns its seconds, throws ExecutionError for a fault or a stop. */
  virtual double run(const DispatchCommand& command, const StopRequest& stop) = 0;
  /** The estimate for dispatches run one after another. */
  CallEstimate estimate(const std::vector<DispatchCommand>& commands);

 protected:
  ~DispatchRunner() = default;
};

/** run_dispatch and estimate, on this process's worker pool. */
DispatchRunner& in_process_runner();

}  // namespace metalcall::cpu
