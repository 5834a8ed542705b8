// What waits and backends call to honour an InterruptScope (metalcall/interrupt.hpp).
#pragma once

#include <algorithm>
#include <chrono>
#include <mutex>

namespace metalcall {

/**
 * True when this thread's InterruptScope check asked to stop. Cheap: without a scope a
 * thread-local load; with one, the check runs at most every 20 ms. Sticky until the
 * scope ends.
 */
bool interrupt_requested();

/** Calls wait(arg) through the embedder's BlockingWaitHook (metalcall/interrupt.hpp), if any. */
void run_blocking_wait(void (*wait)(void*), void* arg);

/**
 * Takes `lock`'s mutex: at once when it is free, else after waiting through the
 * BlockingWaitHook, so that a caller holding the embedder's lock (Python's GIL) lets go of it
 * while another thread, which may need that lock, holds this one.
 */
inline void lock_patiently(std::unique_lock<std::mutex>& lock) {
  // The hook's wait only sees the mutex free (it takes and drops it): a thread that takes the
  // GIL back may be parked there (interpreter exit), and must not be holding the mutex then.
  while (!lock.try_lock()) {
    run_blocking_wait(
        [](void* m) {
          static_cast<std::mutex*>(m)->lock();
          static_cast<std::mutex*>(m)->unlock();
        },
        lock.mutex());
  }
}

/** True when this thread is inside an InterruptScope: its waits must wake up now and then. */
bool interrupt_check_installed();

/**
 * How long a waiter that polls sleeps before its next query, after `waited` of waiting: a
 * 32nd of it, from 50 us up to `cap`, so that a wait ends at most ~3% (plus the sleep's
 * slack) after the work. Sleeps doubling up to 20 ms had made twenty queued 0.42 ms calls
 * wait up to 23 ms.
 */
inline std::chrono::steady_clock::duration poll_interval(std::chrono::steady_clock::duration waited,
                                                         std::chrono::steady_clock::duration cap) {
  return std::clamp<std::chrono::steady_clock::duration>(waited / 32, std::chrono::microseconds(50), cap);
}

}  // namespace metalcall
