// Interrupting waits: an embedder (the Python bindings: Ctrl-C) installs a check that
// long waits on the device call now and then on the waiting thread.
#pragma once

#include "metalcall/errors.hpp"

namespace metalcall {

/** Returns true when the wait it is called from should stop (e.g. a signal arrived). */
using InterruptCheck = bool (*)();

/**
 * While alive, waits on this thread call `check` about every 20 ms (and CPU work this
 * thread runs, between chunks of threadgroups). When it returns true the work waited on
 * is cancelled (CPU work stops between threadgroups; queued work that has not started is
 * skipped; work already on a GPU finishes there) and the wait throws Interrupted.
 * Scopes nest; the innermost one applies.
 */
class InterruptScope {
 public:
  explicit InterruptScope(InterruptCheck check);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
  /** True once the check of the innermost scope on this thread has returned true. */
  static bool interrupted();

 private:
  InterruptCheck previous_check_;
  bool previous_interrupted_;
};

/**
 * How a thread waits for a lock another thread holds (a queue's launch order): the embedder
 * may let go of its own lock meanwhile. The Python bindings install one that lets go of the
 * GIL, so that a small call made with the GIL held cannot stop every Python thread (the
 * interpreter's exit included) while a call on another thread waits for a kernel. `wait(arg)`
 * does the waiting; the hook must call it exactly once, on this thread.
 */
using BlockingWaitHook = void (*)(void (*wait)(void* arg), void* arg);

/** Installs `hook` for every thread (null: waits run as they are). */
void set_blocking_wait_hook(BlockingWaitHook hook);

/** A wait stopped by an InterruptScope's check. */
class Interrupted : public Error {
 public:
  Interrupted() : Error("the wait was interrupted") {}
};

}  // namespace metalcall
