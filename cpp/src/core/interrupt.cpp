// InterruptScope and interrupt_requested(): a per-thread check, rate limited.
#include "core/interrupt.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>

#include "metalcall/interrupt.hpp"

namespace metalcall {

namespace {

constexpr std::int64_t kCheckEveryNs = 20'000'000;
constexpr std::int64_t kPeriodNotStarted = -1;

// One thread-local object: this library is loaded with dlopen, so each thread_local access
// is a call to __tls_get_addr, and a kernel call looks here several times.
struct InterruptState {
  InterruptCheck check = nullptr;
  bool interrupted = false;
  std::int64_t next_check_ns = 0;
};
thread_local InterruptState t_state;

std::atomic<BlockingWaitHook> g_blocking_wait_hook{nullptr};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

InterruptScope::InterruptScope(InterruptCheck check) {
  InterruptState& t = t_state;
  previous_check_ = t.check;
  previous_interrupted_ = t.interrupted;
  t.check = check;
  t.interrupted = false;
  t.next_check_ns = 0;
}

InterruptScope::~InterruptScope() {
  InterruptState& t = t_state;
  t.check = previous_check_;
  t.interrupted = previous_interrupted_;
}

void set_blocking_wait_hook(BlockingWaitHook hook) { g_blocking_wait_hook.store(hook); }

void run_blocking_wait(void (*wait)(void*), void* arg) {
  if (BlockingWaitHook hook = g_blocking_wait_hook.load()) {
    hook(wait, arg);
  } else {
    wait(arg);
  }
}

bool InterruptScope::interrupted() { return t_state.interrupted; }

bool interrupt_check_installed() { return t_state.check != nullptr; }

bool interrupt_requested() {
  InterruptState& t = t_state;
  if (!t.check) return false;
  if (t.interrupted) return true;
  // The first call in this scope reads no clock (a short call checks once and ends); the
  // period starts at the second. A wait shorter than the period checks nothing.
  if (t.next_check_ns == 0) {
    t.next_check_ns = kPeriodNotStarted;
    return false;
  }
  const std::int64_t now = now_ns();
  if (t.next_check_ns == kPeriodNotStarted) {
    t.next_check_ns = now + kCheckEveryNs;
    return false;
  }
  if (now < t.next_check_ns) return false;
  t.next_check_ns = now + kCheckEveryNs;
  if (t.check()) t.interrupted = true;
  return t.interrupted;
}

}  // namespace metalcall
