// Lambdas with an empty capture list, which C++ converts to function pointers (`+l`,
// `decltype(+l)`, a template's `+f`, `*l`). MSL has no function pointers, and on the CPU such a
// pointer cast from an integer calls any host address. The tokens cannot see every spelling of
// the conversion (a template parameter may be a lambda's type), so the CPU translation gives
// each such lambda one capture that nothing reads (`[mtl_no_conversion = 0]`): a lambda that
// captures has no conversion to a function pointer, whatever spells it.
#pragma once

#include <cstddef>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** The `]` of every empty lambda introducer (`[]` followed by `(` or `{`, not a subscript or
 *  an array declarator's `[]`). */
std::vector<std::size_t> empty_lambda_introducers(const std::vector<Token>& t);

/** The capture written before each of those `]`. */
constexpr const char* kUnreadCapture = "mtl_no_conversion = 0";

}  // namespace metalcall::msl
