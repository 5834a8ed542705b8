// InterruptScope and interrupt_requested(): a per-thread check, rate limited.
#include "core/interrupt.hpp"

#include <chrono>
#include <cstdint>

#include "metalcall/interrupt.hpp"

namespace metalcall {

namespace {

constexpr std::int64_t kCheckEveryNs = 20'000'000;
constexpr std::int64_t kPeriodNotStarted = -1;

thread_local InterruptCheck t_check = nullptr;
thread_local bool t_interrupted = false;
thread_local std::int64_t t_next_check_ns = 0;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

InterruptScope::InterruptScope(InterruptCheck check) : previous_check_(t_check), previous_interrupted_(t_interrupted) {
  t_check = check;
  t_interrupted = false;
  t_next_check_ns = 0;
}

InterruptScope::~InterruptScope() {
  t_check = previous_check_;
  t_interrupted = previous_interrupted_;
}

bool InterruptScope::interrupted() { return t_interrupted; }

bool interrupt_check_installed() { return t_check != nullptr; }

bool interrupt_requested() {
  if (!t_check) return false;
  if (t_interrupted) return true;
  // The first call in this scope reads no clock (a short call checks once and ends); the
  // period starts at the second. A wait shorter than the period checks nothing.
  if (t_next_check_ns == 0) {
    t_next_check_ns = kPeriodNotStarted;
    return false;
  }
  const std::int64_t now = now_ns();
  if (t_next_check_ns == kPeriodNotStarted) {
    t_next_check_ns = now + kCheckEveryNs;
    return false;
  }
  if (now < t_next_check_ns) return false;
  t_next_check_ns = now + kCheckEveryNs;
  if (t_check()) t_interrupted = true;
  return t_interrupted;
}

}  // namespace metalcall
