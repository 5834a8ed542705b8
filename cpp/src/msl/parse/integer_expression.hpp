// Integer constant expressions in attribute arguments (integer_expression.cpp).
#pragma once

#include <cstddef>
#include <string>

namespace metalcall::msl {

/** Evaluates `text` (no spaces): integer literals (a u suffix allowed), + - * / and
 *  parentheses. False if it is anything else, or divides by zero or overflows. */
bool integer_expression(const std::string& text, long& value);

}  // namespace metalcall::msl
