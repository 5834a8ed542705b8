// The sandbox worker's system call filter (seccomp-bpf), installed on every thread of
// the worker once it has started its threads and mapped its memory. docs/security.md
// lists what it allows and why.
#pragma once

#include <string>

#include "backends/cpu/sandbox/sandbox_protocol.hpp"

namespace metalcall::cpu::sandbox {

/**
 * Installs the SIGSYS handler and the filter on all threads of this process. A call
 * the filter does not allow traps into the handler, which writes its number to
 * `control->violation` and ends the process with kExitViolation; the two the loader
 * needs are emulated there (see expect_object_open). Returns "" or why it failed.
 */
std::string install_filter(ControlPage* control);

/**
 * Until the next open_done(): an open of exactly `path` opens the kernel object at
 * kObjectFd (what dlopen(path) does), other opens fail with ENOENT (the loader looking
 * for a library the object needs). Outside that window every open is a violation.
 */
void expect_object_open(const char* path);
void object_open_done();

}  // namespace metalcall::cpu::sandbox
