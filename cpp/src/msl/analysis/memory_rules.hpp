// The rules that keep a kernel's memory what MSL says it is, where host C++ would let a kernel
// reach past it: no C variadic functions (MSL has none; `va_arg` reads past the arguments), no
// cast or initialisation that moves a pointer or reference into another address space
// (`(device float*)&local`: Metal refuses it; on the checked CPU device it made a device
// pointer that no bounds cover), no `as_type` to a pointer. Part of the MSL rules
// (msl_rules.hpp, docs/msl-rules.md). Variable-length arrays are the host compiler's to find
// (-Werror=vla, backends/cpu/cpu_compiler.cpp), through every typedef, template and decltype.
#pragma once

#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * Throws a rule CompileError at a C variadic parameter list (`f(int n, ...)`, `[](...)`), at a
 * pointer or reference cast (C-style, static_cast, reinterpret_cast; through an alias too) or
 * initialisation whose operand the tokens show to be in another address space (a variable's
 * address, a pointer or array of known space, an integer made from one), and at `as_type` to
 * a pointer type. A pointer cast of an integer the tokens show is refused for thread and
 * threadgroup pointers, and in `checked` mode for every address space.
 */
void check_memory_rules(const std::vector<Token>& t, const std::string& source, bool checked);

}  // namespace metalcall::msl
