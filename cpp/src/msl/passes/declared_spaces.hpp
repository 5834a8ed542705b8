// What a declaration says of an object's address space, read from the tokens before a use:
// shared by the passes that tag arguments of functions overloaded by address space.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "msl/analysis/implementation_rules.hpp"  // ClassBody
#include "msl/lex/lexer.hpp"

namespace metalcall::msl::declared_spaces {

/** The prelude's number of an address-space word (metal_address_space.h): 0 thread, 1 device,
    2 threadgroup, 3 constant; -1 for any other token. */
int space_of(const Token& tok);

/** A statement keyword that may stand before `(` (`if`, `return`, `sizeof` ...). */
bool is_keyword(const std::string& s);

/** True when a token can end a type before a declared name (`float x`, `T* x`, `vec<T,2> x`). */
bool ends_type(const Token& tok);

/** The address space written in the declaration of the object named at `use` (`device S& a`,
    `threadgroup T tg[N]`, `device T* p`), and whether it is a pointer or an array; -1 when the
    declaration names none. */
int written_space(const std::vector<Token>& t, std::size_t use, bool* pointer);

/** Whether the object named at `use` is a thread-local value: a local variable or array, or a
    parameter by value, declared with no address space, pointer, reference, `auto`, `static` or
    `constexpr`. */
bool thread_value(const std::vector<Token>& t, std::size_t use, const std::vector<ClassBody>& classes);

}  // namespace metalcall::msl::declared_spaces
