// The CPU device's in-order queue. A call whose caller waits anyway, or that is
// expected to take less than a handoff is worth, runs on the calling thread when
// the queue is idle; the rest run on an executor thread, so that Python gets
// control back at once, unless a thread waits for them first: it runs them itself.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/backend.hpp"

namespace metalcall::cpu {

class DispatchRunner;

class CpuQueue : public CompletionDriver {
 public:
  /** Runs its dispatches through `runner` (in this process, or in the sandbox's worker);
   *  `kernel_timeout`: seconds a dispatch may run before it is stopped (0: no limit). */
  explicit CpuQueue(DispatchRunner& runner, double kernel_timeout = 0);
  ~CpuQueue();
  CpuQueue(const CpuQueue&) = delete;
  CpuQueue& operator=(const CpuQueue&) = delete;

  void submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion,
              bool caller_waits);
  /** Like submit() (the caller does not wait), for a recorded graph's commands: run as they are, not copied. */
  void replay(std::shared_ptr<const std::vector<DispatchCommand>> commands,
              const std::shared_ptr<CompletionState>& completion);
  /** Runs queued work on the calling thread when no other thread has started it, then waits for the rest. */
  void synchronize();
  /** Cancels queued and running tasks (BackendDevice::stop_all). */
  void stop_all(const char* reason);
  /** Runs a short call now if the queue is idle (see BackendDevice::run_now). */
  bool run_now(const DispatchCommand& command, double* seconds);
  /** A waiter for `state` runs the queued work up to and including it (CompletionDriver). */
  void wait(CompletionState& state) override;
  /** wait() runs the work in chunks that check the waiter's InterruptScope. */
  bool waits_interruptibly() const override { return true; }

 private:
  struct Task {
    std::vector<DispatchCommand> commands;
    std::shared_ptr<CompletionState> completion;
    std::shared_ptr<const std::vector<DispatchCommand>> recorded;  // a replayed graph's, instead of `commands`
    const std::vector<DispatchCommand>& list() const { return recorded ? *recorded : commands; }
  };
  /** Runs `task` here if it is short or the caller waits and the queue is idle, else queues it. */
  void enqueue(Task&& task, bool caller_waits);
  /** Runs a task's commands and releases them; returns what its completion reports. */
  std::pair<std::exception_ptr, double> execute(Task& task);
  /** Ends the last task a runner took: the queue is free before the task's Completion
   *  says done, so that the thread woken by it finds the queue idle for its next call
   *  (else that call would be queued, and the executor would take it: a handoff per
   *  call, for good). */
  void finish_last(Task& task, const std::pair<std::exception_ptr, double>& outcome);
  /** Under the lock: no task runs or waits. Waits out a Completion being signalled,
   *  so that Completions are done in the order of their calls. */
  bool idle(std::unique_lock<std::mutex>& lock);
  /** After busy_ or finishing_ fell: wakes the waiters, and the executor if work waits. */
  void changed(bool work_waiting);
  /** Takes the queued tasks up to and including `last` (all if null), if no task is running. */
  std::vector<Task> claim(const CompletionState* last);
  void run_claimed(std::vector<Task>& tasks);
  void executor_loop();
  /** In a forked child: fresh locks, no executor, and the work queued before the fork
   *  fails with DeviceError (its memory is the parent's business). */
  void reset_after_fork();

  DispatchRunner& runner_;
  const double kernel_timeout_;
  std::mutex mutex_;
  std::condition_variable cv_;           // synchronize(), idle() and claim() wait here: rarely anyone
  std::condition_variable executor_cv_;  // the executor waits here: woken only when work waits
  std::deque<Task> pending_;
  bool busy_ = false;     // a task is running (on the executor or a caller)
  CompletionState* executing_ = nullptr;  // the executor's task, for synchronize() to cancel
  unsigned finishing_ = 0;  // tasks that ran, whose Completions are being signalled
  bool executor_started_ = false;
  // The Completions of tasks taken from pending_ and not yet finished: in a forked
  // child no thread runs them any more, so they fail there (reset_after_fork).
  // (Raw pointers: the task that runs holds its Completion until it is finished.)
  std::vector<CompletionState*> running_;
  /** Under the lock: `task` left pending_ to run; later it is finished. */
  void started(const Task& task) { running_.push_back(task.completion.get()); }
  void finishing(const CompletionState* completion);
};

}  // namespace metalcall::cpu
