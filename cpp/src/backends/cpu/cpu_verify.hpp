// The CPU backend's use of the translation verifier (msl/verify/): the arguments that
// make libclang read the unit as the host compiler does, and the CompileError a
// disagreement becomes.
#pragma once

#include <string>
#include <vector>

#include "msl/translate/translator.hpp"

namespace metalcall::cpu {

/** The language flags the host compiler gets that change what the code means, for libclang. */
std::vector<std::string> verifier_arguments();

/**
 * Verifies translated `code`; throws CompileError naming the problems, DeviceError without
 * libclang. Where Clang refuses the code itself, nothing is checked and that error is
 * returned instead (empty: verified): the host compiler most often refuses the code too, and
 * its error, on the user's lines, says more; cpu_compiler.cpp throws this one only when the
 * host compiler builds the code.
 */
std::string verify_or_defer(const std::string& code);

/** verify_or_defer, throwing a refusal of Clang's too (the tests' and tools' entry point). */
void verify_or_throw(const std::string& code);

}  // namespace metalcall::cpu
