// The in-process CPU device's stack guard: a stack overflow in kernel code ends its dispatch
// with an ExecutionError naming the kernel instead of killing the process (SIGSEGV).
//
// MSL has no recursion and the front end refuses every call cycle whose calls name their
// callee (msl/analysis/recursion.hpp), but a cycle through calls that name no function
// (an operator, a constructor or destructor, a conversion, an object called as a function)
// is C++'s to resolve, not the token walk's; nor can frames that grow without recursion be
// bounded up front everywhere. So overflow is caught where it happens: every thread that runs
// kernel code has an alternate signal stack, and a SIGSEGV handler (installed once, ahead of
// whatever handler the process had, which it calls for every other fault) sees whether the
// faulting address is at the end of the stack the thread is on — the guard page of a fiber's
// stack, or the guard region below the thread's own — while the thread runs kernel code; if
// so it stops the dispatch (RunControl) and leaves the kernel as a stop does. It costs kernel
// code nothing (no check in any function: a check at every call would keep the compiler from
// vectorising loops that call small functions) and a thread-local test per chunk.
// docs/security.md, "Stack overflow", says why this rather than a check at function entry.
#pragma once

namespace metalcall::cpu {

/** Turns the guard on for this process (the in-process CPU device; never the sandbox's worker,
 *  where a fault ends the worker and the device replaces it). */
void enable_stack_guard();
bool stack_guard_enabled();

/** Before kernel code runs on the calling thread: its alternate signal stack and its stack's
 *  bounds, set up once per thread (cheap afterwards); the handler, once per process. */
void guard_this_thread();

/** After code that may have put its own SIGSEGV handler ahead of the guard's (libclang's crash
 *  recovery, a later faulthandler.enable(), a runtime loaded into the process): the guard's
 *  handler first again, calling that one for every other fault. Each compile on the in-process
 *  CPU device calls it; a handler installed later takes the fault first until then, and passes
 *  it on with its address lost, so an overflow then ends the process (docs/security.md). */
void keep_stack_guard_first();

}  // namespace metalcall::cpu
