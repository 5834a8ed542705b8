// The CPU device's in-order queue. Small calls, and calls whose caller waits
// anyway, run on the calling thread when the queue is idle; the rest run on an
// executor thread, so that Python gets control back at once.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/backend.hpp"

namespace metalcall::cpu {

class CpuQueue {
 public:
  CpuQueue() = default;
  CpuQueue(const CpuQueue&) = delete;
  CpuQueue& operator=(const CpuQueue&) = delete;

  void submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion,
              bool caller_waits);
  void synchronize();
  /** Runs a small call now if the queue is idle (see BackendDevice::run_now). */
  bool run_now(const DispatchCommand& command, double* seconds);

 private:
  struct Task {
    std::vector<DispatchCommand> commands;
    std::shared_ptr<CompletionState> completion;
  };
  static void execute(Task& task);
  void executor_loop();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Task> pending_;
  bool busy_ = false;  // a task is running (on the executor or a caller)
  bool executor_started_ = false;
};

/** Runs one dispatch over the worker pool. */
void run_dispatch(const DispatchCommand& command);

}  // namespace metalcall::cpu
