// Function declarators as the token walks of checked mode meet them: the name a parameter list
// follows, in every form the translator accepts (`f(`, `f<float>(`, `A<B>::f(`, `A::B::f(`,
// `~A(`, `operator [] (`, `operator()(`, `operator+=(`, `operator->(`).
#pragma once

#include <cstddef>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** From token j, a function's name (qualified, with template arguments, or an operator's) then
 *  its parameter list: the '(' that opens the list, else npos. Where a declaration's type ends
 *  at j; in an expression `f<T>(` is a call. */
std::size_t declarator_parameters(const std::vector<Token>& t, std::size_t j);

/** True when the '(' at open follows an operator function's name (`operator()(`, `operator=(`,
 *  `operator [] (`): its parameter list. */
bool follows_operator_name(const std::vector<Token>& t, std::size_t open);

/** True when the '(' at open follows a name's template arguments (`f<float>(`): an explicit
 *  specialisation's parameter list where a parameter's type stands in it (in a call, values do). */
bool follows_template_arguments(const std::vector<Token>& t, std::size_t open);

/** True when the '(' at open follows a function pointer's or reference's declarator (`void
 *  (*)(`, `void (*f)(`, MLX's `using RadixFunc = void (*)(thread vec<T, 2>*, …)`): its type's
 *  parameter list. */
bool follows_function_pointer(const std::vector<Token>& t, std::size_t open);

}  // namespace metalcall::msl
