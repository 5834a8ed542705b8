// Stopping CPU kernels while they run: Ctrl-C (the calling thread's InterruptScope), a
// cancelled Completion (wait(timeout=...), synchronize after Ctrl-C, interpreter exit) and a
// device's kernel_timeout. Between chunks of threadgroups the dispatch checks by itself;
// inside a chunk, every loop of the kernel reads the process's stop word (the translator's
// check, msl/passes/loop_stops.hpp) and calls stop_check() when it is not 0, which leaves the
// kernel (a longjmp back to the chunk's start, after leaving the fibers of a group) when its
// dispatch must stop.
//
// The word counts reasons to look: each dispatch being stopped, and a "tick" that a watchdog
// thread raises every 10 ms while a thread with an InterruptScope runs kernel code, so that
// this thread (the only one that may run Python's signal handlers) checks for Ctrl-C. The
// watchdog also turns cancelled Completions and passed deadlines into stops.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "msl/targets/cpu_abi.hpp"

namespace metalcall {
class CompletionState;
}

namespace metalcall::cpu {

/** What a kernel object's __metalcall_stop is set to when it is loaded. */
metalcall_cpu_stop stop_hooks();

/** What stops a dispatch while it runs, besides the calling thread's InterruptScope. */
struct StopRequest {
  const std::atomic<bool>* cancel = nullptr;    // stop once set (a Completion's flag, the sandbox's shared one)
  const CompletionState* completion = nullptr;  // whose cancel_reason() says why, when the flag is its
  double timeout_seconds = 0;                   // > 0: stop after this long (the device's kernel_timeout)
};

/** Starts the watchdog thread now (it starts with the first dispatch that needs it otherwise): for
 *  a process that may not make threads later (the sandbox's worker, under its system call filter). */
void start_stop_watchdog();

/** One dispatch's stop state, registered with the watchdog while it runs (when it can be stopped at all). */
class RunControl {
 public:
  /**
   * `stop`: what stops it; `in_loops`: its kernel has loops (the translator's checks can stop it
   * inside a chunk). Registered with the watchdog when anything can come while a chunk runs.
   */
  RunControl(const StopRequest& stop, bool in_loops);
  ~RunControl();
  RunControl(const RunControl&) = delete;
  RunControl& operator=(const RunControl&) = delete;

  /** Stops the dispatch: remaining chunks are skipped, running kernel code leaves at its next loop. */
  void stop(const std::string& reason);
  /** At a chunk's start: true when the dispatch must stop (also checks the caller's InterruptScope). */
  bool stopping();
  bool stopped() const { return stopped_.load(std::memory_order_acquire); }
  /** Why it stopped ("interrupted", "kernel_timeout of 2 s passed", …); empty while running. */
  const std::string& reason() const { return reason_; }

  /**
   * Runs entry(launch, begin, end, table) so that a stop leaves it: true when it ran to the end.
   * The calling thread's jump buffer is this call's while the kernel runs.
   */
  bool run(metalcall_cpu_entry entry, const metalcall_cpu_launch* launch, std::uint64_t begin, std::uint64_t end,
           const metalcall_cpu_worker* table);
  /** While the calling thread waits for the pool's workers: Ctrl-C and ticks, as in kernel code. */
  void idle();

  /** The watchdog's look, about every 10 ms: cancellation, deadline. */
  void watch(std::int64_t now_ns);
  /** Created on a thread with an InterruptScope: that thread must check for Ctrl-C now and then. */
  bool scoped() const { return scoped_; }

 private:
  /** At the first chunk: the deadline starts, and the watchdog starts looking (if it has to). */
  void start();
  StopRequest request_;
  bool in_loops_;                // kernel code looks at the stop word
  bool watched_;                 // the watchdog has something to look for
  std::atomic<std::int64_t> deadline_ns_{0};  // 0: none
  std::atomic<bool> started_{false};
  bool registered_ = false;
  bool scoped_;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> raised_{false};  // counted in the stop word until the dispatch ends
  std::string reason_;              // written once, before stopped_ is set
  std::atomic<bool> reason_claimed_{false};
};

/** Stops every dispatch, running or later (Device::stop_all_work: interpreter exit). */
void stop_all_kernels(const char* reason);

/** Leaves the kernel this thread runs, for good (its dispatch was stopped); from stop checks only. */
[[noreturn]] void leave_kernel();

/** True while this thread runs kernel code inside RunControl::run (a stop can leave it). */
bool in_kernel_code();
/** Stops the dispatch whose kernel code this thread runs, with `reason`, and leaves the kernel
 *  (the stack guard's handler, stack_guard.hpp); only when in_kernel_code(). */
[[noreturn]] void stop_running_kernel(const char* reason);

}  // namespace metalcall::cpu
