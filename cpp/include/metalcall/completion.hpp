// Completion: a handle on submitted work.
#pragma once

#include <memory>

namespace metalcall {

class CompletionState;

/** Handle on work submitted to a device's queue. Copies share the same work. */
class Completion {
 public:
  Completion() = default;  // an already-finished, empty piece of work
  explicit Completion(std::shared_ptr<CompletionState> state) : state_(std::move(state)) {}
  /** Work that already finished (it ran during the call), taking `device_seconds`. */
  static Completion finished(double device_seconds) {
    Completion c;
    c.seconds_ = device_seconds;
    return c;
  }

  /** Blocks until the work has finished; throws ExecutionError if it failed. */
  void wait() const;
  /** Waits at most `seconds` (not running the work on this thread); true when finished.
   *  Does not throw the work's error: wait() does. */
  bool wait_for(double seconds) const;
  /** True once the work has finished (successfully or not). Never blocks. */
  bool done() const;
  /** Seconds the device spent on the work (0 until done). */
  double gpu_time() const;
  /** False for a call recorded into a batch that has not been committed yet. */
  bool submitted() const;
  /** True once the work was asked to stop: a wait on it was interrupted (InterruptScope),
   *  it timed out in a wait_for(..., cancel), or cancel() was called. */
  bool interrupted() const;
  /**
   * Asks the work to stop: queued work is skipped, running kernels stop at their next loop
   * iteration (CPU: or chunk of threadgroups; CUDA: within 1024 iterations of a loop). The
   * work then fails with ExecutionError naming `reason` (a string literal). No-op once done.
   */
  void cancel(const char* reason = "cancelled") const;
  /** wait_for(seconds) that cancels the work when the time runs out (returning false). */
  bool wait_for_or_cancel(double seconds, const char* reason) const;

  const std::shared_ptr<CompletionState>& state() const { return state_; }

 private:
  std::shared_ptr<CompletionState> state_;
  double seconds_ = 0;  // for finished() work, which has no state
};

}  // namespace metalcall
