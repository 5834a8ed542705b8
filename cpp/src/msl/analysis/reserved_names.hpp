// Reserved names (`__x`, `_X`) that a source declares as its own variables: generated MSL
// uses them (naga's `__local_invocation_id` parameter and `__i0` loop counters), and Apple's
// compiler takes them. The targets spell them mtl_user_X (type_names.hpp), so that no host
// macro or C library name of the same spelling can capture them.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** The reserved identifiers the source declares as variables, parameters or members. */
std::set<std::string> declared_reserved_variables(const std::vector<Token>& t);

}  // namespace metalcall::msl
