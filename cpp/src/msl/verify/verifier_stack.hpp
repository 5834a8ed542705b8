// The stack the translation verifier runs on. libclang's parse and its walks recurse once per
// level of an expression tree (a chain `0 + 1 + 1 ...` is that many levels deep), and libclang
// ran them on a thread of its own with a fixed 8 MiB stack: 15,000 `+ 1` that the host compiler
// had built overflowed it, and the SIGSEGV ended the calling process. The verifier now runs on a
// thread of ours whose stack is far larger than the host compiler's usual one (its RLIMIT_STACK
// is capped at kCompilerStackBytes, process.cpp), with LIBCLANG_NOTHREADS set so libclang parses
// on that thread. About 1.2 million levels fit; with `ulimit -s unlimited` the host compiler was
// seen to build 1,000,000 (docs/security.md, "Depth", says what is left open).
#pragma once

#include <cstddef>
#include <functional>

namespace metalcall::msl::verify {

/** The host compiler's stack cap (RLIMIT_STACK of the compiler's processes). */
constexpr std::size_t kCompilerStackBytes = std::size_t(64) << 20;
/** The verifier thread's stack: reserved, not committed; only the pages used are memory. */
constexpr std::size_t kVerifierStackBytes = std::size_t(4) << 30;

/**
 * Runs `work` on a new thread with a kVerifierStackBytes stack and waits for it; an exception
 * it throws is rethrown here. Where no such thread can be made, `work` runs on the caller's.
 */
void run_on_verifier_stack(const std::function<void()>& work);

}  // namespace metalcall::msl::verify
