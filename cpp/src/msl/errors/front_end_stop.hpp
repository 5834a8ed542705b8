// Stopping the front end (Ctrl-C): its walks over a source of megabytes take seconds, in the
// caller's thread. translate() installs the embedder's check (FrontEndOptions::stop) for its
// duration; the long walks poll it, and a check that says stop ends the translation with
// metalcall::Interrupted.
#pragma once

namespace metalcall::msl {

/** While alive, poll_front_end_stop() on this thread asks `check` (null: never stops). */
class FrontEndStopScope {
 public:
  explicit FrontEndStopScope(bool (*check)());
  ~FrontEndStopScope();
  FrontEndStopScope(const FrontEndStopScope&) = delete;
  FrontEndStopScope& operator=(const FrontEndStopScope&) = delete;

 private:
  bool (*previous_)();
};

/**
 * Called from the front end's long loops: every 1024th call asks the scope's check (itself
 * rate limited by the embedder) and throws metalcall::Interrupted when it says stop. A
 * thread-local counter otherwise.
 */
void poll_front_end_stop();

}  // namespace metalcall::msl
