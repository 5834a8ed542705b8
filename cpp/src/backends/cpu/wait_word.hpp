// Sleeping on a 32-bit word until another thread changes it and wakes the sleepers:
// a futex on Linux (no lock, no system call for a waker when nobody sleeps, which the
// caller tracks), elsewhere a small table of mutexes and condition variables.
#pragma once

#include <atomic>
#include <cstdint>

namespace metalcall::cpu {

/** Sleeps while word == expected (returns at once if it differs), at most timeout_us
 *  microseconds when timeout_us > 0. May return early (spuriously): callers re-check. */
void wait_word(std::atomic<std::uint32_t>& word, std::uint32_t expected, long timeout_us = 0);

/** Wakes the threads sleeping in wait_word on `word` (changed before this call). */
void wake_word(std::atomic<std::uint32_t>& word);

}  // namespace metalcall::cpu
