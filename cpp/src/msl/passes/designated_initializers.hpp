// C++20 designated initializers of the source's structs (`tint_module_vars_struct{.s=s}`: Tint
// writes them in nearly every compute shader; Apple's compiler and the CPU's take them in C++17
// as an extension, NVRTC's C++17 does not: "expected an expression").
#pragma once

#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * Rewrites `S{.a = x, .c = y}` for a struct S of the source whose members are plain data
 * (no constructor, no base) as the positional `S{x, {}, y}`: the designators in member order,
 * a skipped member value-initialised (`{}`), as C++20 initialises it, unless it has a default
 * member initialiser (then the list is left as written). Other lists are left alone.
 */
void positional_designated_initializers(std::vector<Token>& t);

}  // namespace metalcall::msl
