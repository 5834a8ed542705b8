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

/** Verifies translated `code`; throws CompileError naming the problems, DeviceError without libclang. */
void verify_or_throw(const std::string& code);

/** Makes the precompiled header verify_or_throw(code) will read, if the process has none yet:
 * for a thread beside the build (cpu_verify_head.hpp); never throws. */
void prepare_verification(const std::string& code) noexcept;

}  // namespace metalcall::cpu
