// What a child forked from a process that used the CPU backend must redo: the
// worker pool's and the executors' threads do not exist in the child, and their
// locks and counters may be frozen mid-update. Objects register a reset that
// runs in the child (pthread_atfork), before fork() returns there.
#pragma once

namespace metalcall::cpu {

/** Calls reset(object) in every forked child until forget_on_fork(object). */
void reset_on_fork(void* object, void (*reset)(void* object));
void forget_on_fork(void* object);

}  // namespace metalcall::cpu
