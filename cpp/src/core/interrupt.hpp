// What waits and backends call to honour an InterruptScope (metalcall/interrupt.hpp).
#pragma once

namespace metalcall {

/**
 * True when this thread's InterruptScope check asked to stop. Cheap: without a scope a
 * thread-local load; with one, the check runs at most every 20 ms. Sticky until the
 * scope ends.
 */
bool interrupt_requested();

/** True when this thread is inside an InterruptScope: its waits must wake up now and then. */
bool interrupt_check_installed();

}  // namespace metalcall
