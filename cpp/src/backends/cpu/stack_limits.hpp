// The CPU backend's per-thread stack: how large it is, and the compile-time check
// that a kernel's frames (private arrays included) fit in it, from the frame sizes
// the host compiler reports (-fstack-usage). docs/design.md, "CPU runtime limits".
#pragma once

#include <cstddef>
#include <string>

#include "msl/translate/translator.hpp"

namespace metalcall::cpu {

/** Each fiber's stack (kernels with barriers or SIMD-group functions: one fiber per thread). */
constexpr std::size_t kFiberStackBytes = std::size_t(256) << 10;
/** Of a fiber's stack, what the runtime and a signal frame keep (kernels get the rest). */
constexpr std::size_t kFiberStackReserve = std::size_t(16) << 10;
/**
 * Kernels without barriers run their threads in a loop on a worker thread (the
 * calling thread is one): their frames may take this much of its stack, half of
 * the usual 8 MiB thread stack (Linux's default; Python's threads get it too).
 */
constexpr std::size_t kLoopStackBytes = std::size_t(4) << 20;

/**
 * Throws CompileError when a kernel needs more stack than it has: its thread
 * body's frame plus every other function's of the translation unit (a
 * conservative bound: MSL has no recursion, so a call chain holds each function
 * once). `usage` is the compiler's -fstack-usage text; empty: nothing is checked.
 */
void check_stack_usage(const std::string& usage, const msl::Translation& translation, const std::string& source);

}  // namespace metalcall::cpu
