// The clock that times CPU dispatches: Completion::gpu_time, the planner's cost per thread,
// whether calls come back to back.
#pragma once

#include <cstdint>

namespace metalcall::cpu {

/**
 * Nanoseconds on a steady clock (a process-wide base: compare only values of this function).
 * A 1-element call reads it twice; std::chrono::steady_clock costs about 25 ns a read through
 * a virtual machine's vDSO, half the gap to a NumPy ufunc call. Where the time-stamp counter is
 * invariant and the kernel itself keeps time by it (clocksource "tsc": the same on every core),
 * the counter is read instead (about 10 ns), scaled by its rate against steady_clock measured
 * over the process's first milliseconds of dispatches; until then, and everywhere else,
 * steady_clock.
 */
std::int64_t dispatch_now_ns();

}  // namespace metalcall::cpu
