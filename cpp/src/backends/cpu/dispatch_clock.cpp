// dispatch_now_ns: the time-stamp counter scaled to nanoseconds where it can be trusted.
#include "backends/cpu/dispatch_clock.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <x86intrin.h>
#define METALCALL_TSC_CLOCK 1
#endif

namespace metalcall::cpu {

namespace {

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

#ifdef METALCALL_TSC_CLOCK
// The rate is measured over at least this long (two steady_clock reads of ~25 ns each: 1e-5).
constexpr std::int64_t kCalibrationNs = 5'000'000;

// An invariant counter (CPUID) that Linux keeps its own time by. Read once when the library
// loads: the sandbox worker's system call filter, installed later, would trap the open.
bool counter_trusted() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return false;
  if (!__get_cpuid(0x80000007u, &a, &b, &c, &d) || !(d & (1u << 8))) return false;
  std::FILE* f = std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (!f) return false;
  char name[32] = {};
  const bool read = std::fgets(name, sizeof name, f) != nullptr;
  std::fclose(f);
  return read && std::strcmp(name, "tsc\n") == 0;
}

struct CounterScale {
  std::atomic<bool> trusted{counter_trusted()};
  std::atomic<bool> ready{false};
  // Written under `mutex` before `ready` is set (release), read-only after.
  std::mutex mutex;
  bool anchored = false;
  std::int64_t ns0 = 0;
  std::uint64_t ticks0 = 0;
  double ns_per_tick = 0;
};
// Made when the library loads (see counter_trusted), never destroyed: threads may time dispatches during exit.
CounterScale* const g_scale = new CounterScale;

// steady_clock, and the counter's rate once kCalibrationNs have passed since the first read.
std::int64_t calibrating_now_ns() {
  const std::int64_t ns = steady_ns();
  CounterScale& s = *g_scale;
  if (!s.trusted.load(std::memory_order_relaxed)) return ns;
  const std::uint64_t ticks = __rdtsc();
  // Another thread calibrating (or, in a forked child, the parent's lock): steady_clock this time.
  std::unique_lock<std::mutex> lock(s.mutex, std::try_to_lock);
  if (!lock.owns_lock() || s.ready.load(std::memory_order_relaxed)) return ns;
  if (!s.anchored) {
    s.anchored = true;
    s.ns0 = ns;
    s.ticks0 = ticks;
  } else if (ns - s.ns0 >= kCalibrationNs) {
    const double rate = double(ns - s.ns0) / double(ticks - s.ticks0);
    // A counter that went backwards or runs at an implausible rate (under 10 MHz, over 100 GHz) is not used.
    if (ticks > s.ticks0 && std::isfinite(rate) && rate > 0.01 && rate < 100) {
      s.ns_per_tick = rate;
      s.ready.store(true, std::memory_order_release);
    } else {
      s.trusted.store(false, std::memory_order_relaxed);
    }
  }
  return ns;
}
#endif

}  // namespace

std::int64_t dispatch_now_ns() {
#ifdef METALCALL_TSC_CLOCK
  const CounterScale& s = *g_scale;
  if (s.ready.load(std::memory_order_acquire))
    return s.ns0 + static_cast<std::int64_t>(double(__rdtsc() - s.ticks0) * s.ns_per_tick);
  return calibrating_now_ns();
#else
  return steady_ns();
#endif
}

}  // namespace metalcall::cpu
