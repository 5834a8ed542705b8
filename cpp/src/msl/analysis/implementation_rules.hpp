// The rules that keep metalcall's implementation out of the user's reach: names the prelude and
// the generated code own (so that checked mode's state cannot be named and any other name is
// free for the user), and the C++ that could take a checked pointer apart without naming it
// (structured bindings; in checked mode, unions that hold pointers, as_type of types that hold
// one, and pointer types its translation leaves plain). Part of the MSL rules
// (msl_rules.hpp, docs/msl-rules.md).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** A class body of the source: its name (empty when anonymous), union or not, its braces. */
struct ClassBody {
  std::string name;
  bool is_union = false;
  std::size_t open = 0, close = 0;
};

/** Every `struct|class|union [NAME] … { … }` body of `t`. */
std::vector<ClassBody> class_bodies(const std::vector<Token>& t);

/** Why `id` belongs to metalcall's implementation (a sentence after the quoted name), or null. */
const char* implementation_name(const std::string& id);

/**
 * Throws a rule CompileError at a structured binding (C++17, not MSL), and with `checked` at a
 * union that holds a pointer (directly, through an alias of a pointer type, in a struct of the
 * source: its other members would overlap the checked pointer's bounds), at `as_type` to such a type, and at pointer types its translation
 * leaves plain (arrays of pointers, `thread` pointer types given to templates or named by `using`).
 */
void check_implementation_rules(const std::vector<Token>& t, const std::string& source, bool checked);

}  // namespace metalcall::msl
